"""bench/shared_judgement.py: DetectConflict calls alone and shared."""

from pathlib import Path

from bench import shared_judgement as bench
from crsec_concordia.runs import session as session_lib
from tests import golden_replay as golden


def test_sharing_asks_fewer_calls_and_finds_the_same_conflicts(
    tmp_path, embedder, monkeypatch):
  monkeypatch.setattr(session_lib.Session, "share_judgements", True)
  alone = bench.measure(10, False, embedder, tmp_path)
  shared = bench.measure(10, True, embedder, tmp_path)
  assert shared["conflicts"] and shared["conflicts"] == alone["conflicts"]
  assert 0 < shared["calls"] < alone["calls"]
  # The calls the shipped keying predicts are the calls made.
  assert abs(shared["keyings"]["(deed, norm), pooled by rule"]
             - shared["calls"]) < 1e-9
  assert abs(shared["keyings"]["alone"] - alone["calls"]) < 1e-9
  assert shared["largest items"] <= 10


def test_a_finished_run_is_read_from_its_directory(capsys):
  run_dir = Path(golden.GOLDEN) / golden.EXPECTED
  assert bench.main(["--run-dir", str(run_dir)]) == 0
  out = capsys.readouterr().out
  # The golden run's 4 DetectConflict calls over 4 agents' 5 hours.
  assert ("5 slots, questions shared; DetectConflict per agent-hour: "
          "0.80 calls") in out
  assert "5: 3 (0)" in out  # Three hold norms; not the same words.

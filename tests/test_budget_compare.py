"""A compare's total budget: its runs stop at the cap, and the same compare
run again (without it) continues them to the records of an uncapped one.

The tiny scripted café (tests/test_runner.py) in both arms, one seed, one
run at a time: the first run reaches a total cap of 5 calls in its first
slot (13 calls) and stops there; the second is not started.
"""

from __future__ import annotations

import json

from crsec_concordia import cli, embedding
from crsec_concordia.runs import episode
from tests import test_runner as tr


def test_a_total_cap_stops_a_compare_and_the_same_compare_continues_it(
    tmp_path, embedder, monkeypatch, capsys):
  monkeypatch.setattr(episode, "make_model", lambda *a, **k: tr.cafe())
  monkeypatch.setattr(episode, "embedder_for",
                      lambda e: embedding.of(embedder))
  scenario_file = tmp_path / "tiny.yaml"
  scenario_file.write_text(tr.TINY)
  argv = ["compare", str(scenario_file), "--seeds", "1", "--jobs", "1"]
  capped = tmp_path / "capped"
  assert cli.main([*argv, "--out", str(capped), "--max-total-calls",
                   "5"]) == 3
  err = capsys.readouterr().err
  assert "stopped: budget" in err and "Traceback" not in err
  manifest = json.loads((capped / "compare.json").read_text())
  assert manifest["status"] == "stopped: budget"
  assert len(manifest["stopped"]) == 2
  started = [d for d in (capped / "normative" / "seed_1",
                         capped / "baseline" / "seed_1") if d.is_dir()]
  assert len(started) == 1
  assert tr.info(started[0])["status"] == "stopped: budget"
  assert tr.info(started[0])["completed_steps"] == 1
  assert "not started: the runs made" in json.dumps(manifest["stopped"])

  assert cli.main([*argv, "--out", str(capped)]) == 0
  plain = tmp_path / "plain"
  assert cli.main([*argv, "--out", str(plain)]) == 0
  for arm in ("normative", "baseline"):
    a, b = capped / arm / "seed_1", plain / arm / "seed_1"
    assert tr.info(a)["status"] == "completed"
    if arm == "normative":
      tr.same_run(a, b)
    else:  # No norms to compare.
      assert tr.records(a) == tr.records(b)
      assert ((a / "usage.json").read_text()
              == (b / "usage.json").read_text())

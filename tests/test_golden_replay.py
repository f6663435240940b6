"""The golden replays: each recorded mini café gives the same run, byte for
byte (the default referee, and a place's slot judged together).

Its metrics are compared to a relative 1e-9 (tests/golden_replay.py,
`same_metrics`): their last digits follow the numeric libraries' builds.

See tests/golden_replay.py. Every restructuring must keep this green; a
change meant to alter prompts records the golden run anew.
"""

from __future__ import annotations

import difflib
import json
import shutil

import pytest

from tests import golden_replay as golden


@pytest.fixture(scope="module", params=golden.RECORDINGS,
                ids=lambda r: r.name)
def replayed(request, tmp_path_factory):
  """A golden run replayed from a copy of its cache, and its metrics."""
  recording = request.param
  if not (recording.directory / golden.CACHE).is_file():
    pytest.fail(f"no golden recording at {recording.directory}: "
                f"{golden.RECORD_HINT}")
  work = tmp_path_factory.mktemp(recording.name)
  cache = work / golden.CACHE
  shutil.copyfile(recording.directory / golden.CACHE, cache)
  model_cache = golden.ResponseCache(cache)
  model = golden.ReplayModel(model_cache, seed=golden.SEED)
  try:
    run_dir = golden.replay(work / "run", model, recording)
  finally:
    model_cache.close()
  golden.report(run_dir, work / "report")
  return recording, model, golden.normalised(run_dir)


def test_the_replay_asks_the_model_nothing_new(replayed):
  """Calls the cache could not answer are the operations whose prompt changed."""
  recording, model, _ = replayed
  expected = json.loads((recording.directory / golden.EXPECTED / "usage.json")
                        .read_text(encoding="utf-8"))["by_tag"]
  def asked(by_tag):
    return {tag: (c.get("calls", 0), c.get("failed_calls", 0))
            for tag, c in by_tag.items()
            if c.get("calls", 0) or c.get("failed_calls", 0)}
  assert asked(model.usage.by_tag()) == asked(expected), (
      "the replay needed calls the recording did not (tag: calls, failed): "
      f"{asked(model.usage.by_tag())} against {asked(expected)}; a prompt, "
      f"a seed or a call changed; {golden.RECORD_HINT}")
  assert model.usage.totals()["cached_calls"] >= 30


def test_the_batched_recording_judged_places_together(replayed):
  """The batched recording's run chose batching by its flags and its
  adjudications were batched; the default one judged one at a time."""
  recording, _, files = replayed
  info = json.loads(files["run.json"])
  events = [json.loads(line) for line in files["events.jsonl"].splitlines()
            if line.strip()]
  # Actions put to the referee (one far from every behaviour is not).
  adjudicated = [e for e in events if e.get("adjudicated")
                 and e.get("referee_asked", True)]
  batched = [e for e in adjudicated if e.get("batched")]
  assert adjudicated
  if recording.referee_batched:
    assert info["referee_batched"] == {"on": True,
                                       "source": "--referee-batched"}
    assert info["conflicts_batched"]["on"] is True
    assert len(batched) == len(adjudicated)
  else:
    assert info["referee_batched"]["on"] is False
    assert not batched


def test_the_replay_gives_the_recorded_run_byte_for_byte(replayed):
  recording, _, files = replayed
  expected = golden.read_expected(recording.directory / golden.EXPECTED)
  assert sorted(files) == sorted(expected), (
      "the replay wrote other files than the recording: "
      f"missing {sorted(set(expected) - set(files))}, "
      f"new {sorted(set(files) - set(expected))}")
  for name, text in expected.items():
    if files[name] != text and not (
        name.startswith("metrics/") and golden.same_metrics(text, files[name])):
      diff = "".join(list(difflib.unified_diff(
          text.splitlines(True), files[name].splitlines(True),
          f"golden/{name}", f"replay/{name}"))[:60])
      pytest.fail(f"{name} differs from the golden run:\n{diff}\n"
                  f"{golden.RECORD_HINT}")


def test_metrics_agree_to_their_last_digits_only():
  """The metrics' tolerance hides library round-off, never a changed value
  or a changed word."""
  golden_line = "run,1,tip,belief_corrected,0.1622069170450227\n"
  assert golden.same_metrics(golden_line,
                             "run,1,tip,belief_corrected,0.16220691704502274\n")
  assert not golden.same_metrics(golden_line,
                                 "run,1,tip,belief_corrected,0.1622069\n")
  assert not golden.same_metrics(golden_line,
                                 "run,1,tip,belief,0.1622069170450227\n")
  assert not golden.same_metrics(golden_line,
                                 "run,2,tip,belief_corrected,0.1622069170450227\n")

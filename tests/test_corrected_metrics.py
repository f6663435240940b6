"""Corrected belief and behaviour in a run's metrics
(metrics/classifiers/corrected.py)."""

from __future__ import annotations

import copy
import json
import math
import sys
from pathlib import Path

import pytest

from crsec_concordia.calibration import store
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.metrics.classifiers import measured as matcher_error
from crsec_concordia.metrics.classifiers import referee_quality
from crsec_concordia.metrics.measure import run_metrics
from crsec_concordia.rundir import reading

sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import (ABIGAIL, CARLOS, ISABELLA, SAM, SCENARIO,  # pylint: disable=wrong-import-position
                              RunBuilder)

# The fixture runs' model (metrics_fixtures.RunBuilder's run.json).
SCRIPTED = ModelIdentity.of_described({"endpoint": "scripted"})


@pytest.fixture(scope="module", autouse=True)
def embedder():
  return shared_embedder()


def shipped_wording() -> dict:
  """The fixture café with the shipped targets' ids, texts and aliases, so
  that the matcher's measured error holds for them."""
  scenario = copy.deepcopy(SCENARIO)
  shipped = matcher_error.load_measured()["targets"]
  ids = {"no_smoking_indoors": "no_smoking_indoors",
         "be_quiet": "quiet_in_public", "tip_after_meals": "tip_after_meals"}
  for t in scenario["target_norms"]:
    t["id"] = ids[t["id"]]
    t["text"] = shipped[t["id"]]["text"]
    t["aliases"] = shipped[t["id"]]["aliases"]
  return scenario


def build(tmp_path: Path) -> Path:
  b = RunBuilder(tmp_path / "run", steps=4, scenario=shipped_wording())
  b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  b.hold(2, CARLOS, "Smoking is not permitted inside the cafe.",
         source_agent=ABIGAIL)
  b.hold(3, ISABELLA, "Do not smoke inside.", source_agent=ABIGAIL)
  b.action(1, CARLOS, ["smoking_indoors"])
  b.action(3, CARLOS, ["smoking_outside"])
  b.action(3, SAM, ["smoking_outside"])
  return b.write()


def test_belief_is_corrected_with_the_matchers_test_half(tmp_path):
  m = run_metrics.compute(reading.read_run(build(tmp_path)))
  block = m.summary["correction"]["targets"]["no_smoking_indoors"]
  assert (block["belief"]["rates"]["tp"], block["belief"]["rates"]["fp"],
          block["belief"]["rates"]["fn"]) == (24, 12, 0)
  final = block["belief"]["final"]
  assert final["raw"] == pytest.approx(0.75)
  assert final["low"] <= final["corrected"] <= final["high"]
  column = m.per_step["belief_corrected.no_smoking_indoors"].tolist()
  low = m.per_step["belief_corrected_low.no_smoking_indoors"].tolist()
  high = m.per_step["belief_corrected_high.no_smoking_indoors"].tolist()
  assert all(lo <= c <= hi for lo, c, hi in zip(low, column, high))
  assert column[-1] == pytest.approx(final["corrected"])
  # Recall 0.91 would correct three flagged agents of three who hold a
  # norm upwards, but the fourth holds none (a known non-holder): the
  # corrected share cannot pass the share of agents holding any norm.
  assert final["corrected"] == pytest.approx(0.75)


def test_behaviour_is_not_corrected_without_a_referee_measurement(tmp_path):
  m = run_metrics.compute(reading.read_run(build(tmp_path)))
  block = m.summary["correction"]["targets"]["no_smoking_indoors"]
  assert block["behaviour"]["rates"] is None
  assert block["behaviour"]["note"].startswith(
      "not calibrated for scripted on hobbs_cafe")
  assert "run crsec calibrate" in block["behaviour"]["note"]
  assert block["behaviour"]["final"]["corrected"] is None
  assert block["behaviour"]["final"]["raw"] == pytest.approx(0.5)
  assert all(math.isnan(v) for v in
             m.per_step["behaviour_corrected.no_smoking_indoors"])


def test_behaviour_is_corrected_with_recorded_referee_answers(tmp_path,
                                                              monkeypatch):
  scenario = shipped_wording()
  described = {b["id"]: b["description"] for b in scenario["behaviours"]}
  cases = ([{"action": "a", "truth": ["smoking_outside"],
             "given": ["smoking_outside"]}] * 9
           + [{"action": "b", "truth": ["smoking_outside"], "given": []}]
           + [{"action": "c", "truth": [], "given": []}] * 9
           + [{"action": "d", "truth": ["smoking_indoors"],
               "given": ["smoking_outside"]}])
  decisions = tmp_path / "decisions"
  decisions.mkdir()
  write_decisions(decisions / "cafe.json", described, cases,
                  "hobbs_cafe_test")
  monkeypatch.setattr(store, "search_dirs", lambda: [decisions])
  m = run_metrics.compute(reading.read_run(build(tmp_path)))
  block = m.summary["correction"]["targets"]["no_smoking_indoors"]["behaviour"]
  assert {k: block["rates"][k] for k in ("tp", "fp", "fn", "tn")} == {
      "tp": 9, "fp": 1, "fn": 1, "tn": 9}
  assert block["final"]["corrected"] is not None
  # Another wording of a behaviour: the measurement does not hold.
  changed = dict(described, smoking_outside="steps out for a smoke")
  write_decisions(decisions / "cafe.json", changed, cases, "x")
  m = run_metrics.compute(reading.read_run(build(tmp_path / "again")))
  assert m.summary["correction"]["targets"]["no_smoking_indoors"][
      "behaviour"]["rates"] is None


def write_decisions(path, described, cases, venue="t") -> None:
  """Recorded referee answers on labelled cases: the calibration
  (calibration/store.py) of the fixture runs' model."""
  path.unlink(missing_ok=True)
  store.write(path, SCRIPTED, {venue: {
      "scenario": venue, "labels": "probes", "prompts": None,
      "behaviours": described, "cases": cases}})


def recorded_decisions(tmp_path, monkeypatch, described, cases):
  """`cases` as the only recorded referee answers; their file's path."""
  decisions = tmp_path / "decisions"
  decisions.mkdir()
  path = decisions / "cafe.json"
  write_decisions(path, described, cases)
  monkeypatch.setattr(store, "search_dirs", lambda: [decisions])
  return path


def test_a_gated_referee_is_measured_with_its_floor_applied(tmp_path,
                                                            monkeypatch):
  """A run whose referee left out tags far from the action (its records
  carry `tag_floor`) is corrected with the recorded answers gated the same
  way; answers recorded without scores cannot measure it."""
  scenario = shipped_wording()
  described = {b["id"]: b["description"] for b in scenario["behaviours"]}
  right = {"action": "a", "truth": ["smoking_outside"],
           "given": ["smoking_outside"], "scores": {"smoking_outside": 0.5}}
  far = {"action": "b", "truth": [], "given": ["smoking_outside"],
         "scores": {"smoking_outside": 0.05}}
  cases = [right] * 9 + [far] * 3 + [{"action": "c", "truth": [],
                                       "given": [], "scores": {}}] * 8
  path = recorded_decisions(tmp_path, monkeypatch, described, cases)
  assert referee_quality.run_tag_floor([{"kind": "action"}]) is None
  assert referee_quality.run_tag_floor(
      [{"kind": "action", "tag_floor": 0.16}]) == 0.16
  b = RunBuilder(tmp_path / "gated", steps=2, scenario=scenario)
  b.action(1, CARLOS, ["smoking_outside"])
  b.record("action", 2, actor=SAM, action="x", narration="x",
           place="outdoors", behaviours=["smoking_outside"], evidence="x",
           tag_similarity={"smoking_outside": 0.4}, tag_floor=0.16)
  gated = run_metrics.compute(reading.read_run(b.write()))
  block = gated.summary["correction"]["targets"]["no_smoking_indoors"]
  assert block["behaviour"]["rates"]["fp"] == 0  # The far tags left out.
  assert "below cosine 0.16" in block["behaviour"]["note"]
  ungated = run_metrics.compute(reading.read_run(build(tmp_path)))
  assert ungated.summary["correction"]["targets"]["no_smoking_indoors"][
      "behaviour"]["rates"]["fp"] == 3
  write_decisions(path, described,
                  [{k: v for k, v in c.items() if k != "scores"}
                   for c in cases])
  again = run_metrics.compute(reading.read_run(b.write()))
  block = again.summary["correction"]["targets"]["no_smoking_indoors"]
  assert block["behaviour"]["rates"] is None
  assert "without the tag scores" in block["behaviour"]["note"]



def gated_behaviour(path, scenario, **record_fields):
  """The corrected behaviour block of `no_smoking_indoors` in a run whose
  second slot holds one tag recorded with `record_fields` (the gate fields
  of its referee: tag_floor, tag_similarity, ...)."""
  b = RunBuilder(path, steps=2, scenario=scenario)
  b.action(1, CARLOS, ["smoking_outside"])
  b.record("action", 2, actor=SAM, action="x", narration="x",
           place="outdoors", behaviours=["smoking_outside"], evidence="x",
           **record_fields)
  summary = run_metrics.compute(reading.read_run(b.write())).summary
  return summary["correction"]["targets"]["no_smoking_indoors"]["behaviour"]


def test_a_referee_gated_without_the_place_words_is_measured_so(
    tmp_path, monkeypatch):
  """A run whose records carry `tag_deed_similarity` is measured with the
  recorded answers gated on `deed_scores` too; answers recorded without
  them cannot measure it."""
  scenario = shipped_wording()
  described = {b["id"]: b["description"] for b in scenario["behaviours"]}
  right = {"action": "a", "truth": ["smoking_outside"],
           "given": ["smoking_outside"], "scores": {"smoking_outside": 0.5},
           "deed_scores": {"smoking_outside": 0.45}}
  placed = {"action": "b", "truth": [], "given": ["smoking_outside"],
            "scores": {"smoking_outside": 0.3},
            "deed_scores": {"smoking_outside": 0.1}}
  cases = [right] * 9 + [placed] * 3 + [{"action": "c", "truth": [],
                                          "given": [], "scores": {},
                                          "deed_scores": {}}] * 8
  path = recorded_decisions(tmp_path, monkeypatch, described, cases)
  assert not referee_quality.run_tag_deed([{"kind": "action",
                                            "tag_floor": 0.16}])

  def run(name: str, **gate):
    return gated_behaviour(tmp_path / name, scenario, tag_floor=0.16,
                           tag_similarity={"smoking_outside": 0.4}, **gate)

  deed = run("deed", tag_deed_similarity={"smoking_outside": 0.4})
  assert deed["rates"]["fp"] == 0  # The place-only tags left out too.
  assert "without the place words" in deed["note"]
  assert run("floor")["rates"]["fp"] == 3  # Gated on the floor alone.
  write_decisions(path, described,
                  [{k: v for k, v in c.items() if k != "deed_scores"}
                   for c in cases])
  assert run("unscored", tag_deed_similarity={
      "smoking_outside": 0.4})["rates"] is None


def test_a_referee_with_the_doer_check_is_measured_so(tmp_path, monkeypatch):
  """A run whose records carry `tag_doers` (doer_check.py) is measured with
  only the recorded tags the doer check found to be the actor's; answers
  recorded without the doer check cannot measure it."""
  scenario = shipped_wording()
  described = {b["id"]: b["description"] for b in scenario["behaviours"]}
  score = {"smoking_outside": 0.5}
  right = {"action": "a", "truth": ["smoking_outside"],
           "given": ["smoking_outside"], "scores": score, "deed_scores": score,
           "doers": {"smoking_outside": "Sam Moore"},
           "by_actor": {"smoking_outside": True}}
  talked = {"action": "b", "truth": [], "given": ["smoking_outside"],
            "scores": score, "deed_scores": score,
            "doers": {"smoking_outside": "nobody"},
            "by_actor": {"smoking_outside": False}}
  nothing = {"action": "c", "truth": [], "given": [], "scores": {},
             "deed_scores": {}, "doers": {}, "by_actor": {}}
  cases = [right] * 9 + [talked] * 3 + [nothing] * 8
  path = recorded_decisions(tmp_path, monkeypatch, described, cases)
  assert not referee_quality.run_tag_doer([{"kind": "action",
                                            "tag_floor": 0.16}])

  def run(name: str, **gate):
    return gated_behaviour(tmp_path / name, scenario, tag_floor=0.16,
                           tag_similarity=score, tag_deed_similarity=score,
                           **gate)

  checked = run("doer", tag_doers={"smoking_outside": "Sam Moore"})
  assert checked["rates"]["fp"] == 0 and checked["rates"]["tp"] == 9
  assert "not the actor's" in checked["note"]
  assert run("no_doer")["rates"]["fp"] == 3  # Gated on the scores alone.
  write_decisions(path, described,
                  [{k: v for k, v in c.items() if k != "by_actor"}
                   for c in cases])
  assert run("unchecked", tag_doers={
      "smoking_outside": "Sam Moore"})["rates"] is None


def test_a_referee_with_the_second_look_is_measured_so(tmp_path, monkeypatch):
  """A run whose records carry `second_look` (second_look.py) is measured
  with the tags the second look added to the recorded answers; answers
  recorded without the look cannot measure it."""
  scenario = shipped_wording()
  described = {b["id"]: b["description"] for b in scenario["behaviours"]}
  score = {"smoking_outside": 0.5}
  seen = {"action": "a", "truth": ["smoking_outside"],
          "given": ["smoking_outside"], "scores": score, "deed_scores": score,
          "doers": {"smoking_outside": "Sam Moore"},
          "by_actor": {"smoking_outside": True}, "looked": []}
  # The general call named nothing; the second look found it.
  looked = {"action": "b", "truth": ["smoking_outside"], "given": [],
            "scores": {}, "deed_scores": {}, "doers": {}, "by_actor": {},
            "looked": ["smoking_outside"]}
  nothing = {"action": "c", "truth": [], "given": [], "scores": {},
             "deed_scores": {}, "doers": {}, "by_actor": {}, "looked": []}
  cases = [seen] * 4 + [looked] * 5 + [nothing] * 8
  path = recorded_decisions(tmp_path, monkeypatch, described, cases)
  assert not referee_quality.run_tag_look([{"kind": "action",
                                            "tag_floor": 0.16}])
  gate = {"tag_floor": 0.16, "tag_similarity": score,
          "tag_deed_similarity": score,
          "tag_doers": {"smoking_outside": "Sam Moore"}}

  def run(name: str, **fields):
    return gated_behaviour(tmp_path / name, scenario, **gate, **fields)

  with_look = run("look", second_look={
      "candidates": score, "behaviour": "smoking_outside", "evidence": "x",
      "accepted": True})
  assert with_look["rates"]["tp"] == 9 and with_look["rates"]["fn"] == 0
  assert "second look" in with_look["note"]
  without = run("no_look")
  assert without["rates"]["tp"] == 4 and without["rates"]["fn"] == 5
  write_decisions(path, described,
                  [{k: v for k, v in c.items() if k != "looked"}
                   for c in cases])
  assert run("unrecorded", second_look={"candidates": score,
                                        "accepted": False})["rates"] is None


def test_the_runs_own_venue_is_measured_before_another_with_its_words(
    tmp_path, monkeypatch):
  """Two venues describe the behaviours in the same words: the answers
  recorded on the run's own venue are the ones its correction uses."""
  scenario = shipped_wording()
  described = {b["id"]: b["description"] for b in scenario["behaviours"]}
  right = {"action": "a", "truth": ["smoking_outside"],
           "given": ["smoking_outside"]}
  none = {"action": "c", "truth": [], "given": []}
  decisions = tmp_path / "decisions"
  decisions.mkdir()
  # Sorted first by file name, but recorded on another venue.
  write_decisions(decisions / "a_other.json", described,
                  [right] * 3 + [none] * 3, "another_venue")
  write_decisions(decisions / "b_own.json", described,
                  [right] * 5 + [none] * 5, scenario["name"])
  monkeypatch.setattr(store, "search_dirs", lambda: [decisions])
  target = reading.read_run(build(tmp_path)).targets[0]
  measured = referee_quality.rates(target, scenario,
                                  model={"endpoint": "scripted"})
  # A run that records no model: nobody's error is taken for its referee's.
  unknown = referee_quality.rates(target, scenario)
  assert unknown.rates is None and "records no model" in unknown.note
  assert scenario["name"] in measured.note
  assert measured.rates.tp == 5

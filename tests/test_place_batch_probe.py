"""The accuracy tooling of a place's slot judged together: the labelled
cases asked per action and in batches (bench/batch_probe.py, on
calibration/batch_compare.py's rules), and a run's place-slot sizes
(bench/place_slot_sizes.py), on a scripted model."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from crsec_concordia.calibration import batch_compare as rules
from crsec_concordia.calibration import run_policy
from crsec_concordia.calibration.paired import REPEAT_DIFFERENCE
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.calibration.probes import load_probes, probes_path
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.models import ScriptedModel
from crsec_concordia.scenarios import load_scenario

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import batch_probe  # noqa: E402
import place_slot_sizes  # noqa: E402

VENUE = "hobbs_cafe_mini"
_ONE = re.compile(r'^([^:\n]+): "(.*)"$', re.M)


def _labelled_model(labels, drop_second=False):
  """Answers as the labels say, per action and batched; `drop_second`:
  a batch's second action answered with no behaviour."""
  def one(action, places, doer=False, actor=""):
    ids = [*labels[action], "none", "none"]
    answer = {"narration": action, "place": places[0],
              "behaviour": ids[0], "also": ids[1],
              "evidence": action if labels[action] else "none"}
    if doer:
      answer["doer"] = actor
    return answer

  def single(prompt, schema):
    actor, action = _ONE.findall(prompt)[-1]
    return one(action, schema["properties"]["place"]["enum"])

  def batch(prompt, schema):
    out = {}
    for key, fields in schema["properties"].items():
      found = re.search(rf'^\[{key}\] .*?([^:\n.]+): "(.*)"$', prompt, re.M)
      actor, action = found[1].strip(), found[2]
      out[key] = one(action, fields["properties"]["place"]["enum"],
                     "doer" in fields["properties"], actor)
      if drop_second and key == "a2":
        out[key].update(behaviour="none", also="none", evidence="none")
    return out
  return ScriptedModel([(r"Each action below has an id\. Answer", batch),
                        (r"You are the referee.*- talk_only", single)])


@pytest.fixture(scope="module")
def venue():
  scenario = load_scenario(VENUE)
  cases = load_probes(probes_path(scenario), scenario).only(["referee"])
  labels = {c.action: sorted(c.behaviours) for c in cases.referee}
  settings = run_policy.settings(RefereePolicy.trusting(), MINILM_THRESHOLDS)
  return scenario, cases, labels, settings, shared_embedder()


def test_a_model_alike_in_both_modes_differs_on_no_case(venue, capsys):
  scenario, cases, labels, settings, embedder = venue
  model = _labelled_model(labels)
  result = batch_probe.run_venue(model, embedder, scenario, cases, settings,
                                 [3, 7])
  lines = result.lines
  out = capsys.readouterr().out
  assert "differs" not in out
  assert len(lines) == 3
  assert all("P 1.00 [1.00, 1.00] R 1.00 [1.00, 1.00]" in line
             for line in lines)
  assert "minus per action: P 0.00" in lines[2]
  # Batched: one general call per batch, each of at most 3 or 7 cases, and
  # every case asked once per size.
  sizes = [len(c.schema["properties"]) for c in model.calls
           if "Each action below" in c.prompt]
  assert max(sizes) == 7 and sum(sizes) == 2 * len(cases.referee)
  # Alike both ways: the venue keeps batched, and so does the pool.
  assert rules.REFEREE_RULE.venue_figures(result.rows, [3, 7])["keeps"]
  assert rules.REFEREE_RULE.pooled([result.rows, result.rows], [3, 7])["passes"]


def test_answers_that_differ_batched_are_listed_and_the_difference_shown(
    venue, capsys):
  scenario, cases, labels, settings, embedder = venue
  result = batch_probe.run_venue(_labelled_model(labels, drop_second=True),
                                 embedder, scenario, cases, settings, [3])
  lines = result.lines
  out = capsys.readouterr().out
  assert "differs (batches of 3)" in out
  d_recall = re.search(r"minus per action: P \S+ \[.*?\] R (-?[\d.]+) "
                       r"\[(-?[\d.]+), (-?[\d.]+)\]", lines[1])
  value, _, high = map(float, d_recall.groups())
  assert value < 0 and high <= 0
  # A second action of every batch lost: more than the margin, so the
  # venue is judged per action and the pool fails.
  assert value < -REPEAT_DIFFERENCE
  assert not rules.REFEREE_RULE.venue_figures(result.rows, [3])["keeps"]
  assert not rules.REFEREE_RULE.pooled([result.rows], [3])["passes"]


def test_the_paired_difference_of_identical_modes_is_zero():
  truth = [["a"], [], ["b"], ["a", "b"]]
  same = rules.ModeTags("x", [["a"], ["b"], ["b"], ["a"]])
  figures = rules.compare_tags(truth, same, [rules.ModeTags(
      "y", same.tags)], resamples=200)
  assert figures["y"]["dP"] == (0.0, 0.0, 0.0)
  assert figures["x"]["P"][0] == pytest.approx(3 / 4)
  assert figures["x"]["R"][0] == pytest.approx(3 / 4)


def test_place_slot_sizes_count_the_actions_put_to_the_referee(tmp_path):
  records = [
      {"kind": "action", "step": 1, "actor": "A", "place": "room",
       "adjudicated": True},
      {"kind": "action", "step": 1, "actor": "B", "place": "terrace",
       "moved_from": "room", "adjudicated": True},
      {"kind": "action", "step": 1, "actor": "C", "place": "room",
       "adjudicated": True, "referee_asked": False},
      {"kind": "action", "step": 1, "actor": "D", "place": "terrace",
       "adjudicated": False, "evidence": "adjudication failed: down"},
      {"kind": "action", "step": 2, "actor": "A", "place": "room",
       "adjudicated": False, "continued": True},
      {"kind": "action", "step": 2, "actor": "B", "place": "terrace",
       "adjudicated": True},
      {"kind": "failure", "step": 2, "agent": "C", "op": "Act"}]
  (tmp_path / "events.jsonl").write_text(
      "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
  assert place_slot_sizes.sizes(tmp_path) == [2, 1, 1]
  assert place_slot_sizes.quantiles([2, 1, 1]) == {0.5: 1.0, 0.9: 1.0,
                                                   1.0: 2.0}
  assert "largest 2 over 3 place-slots" in place_slot_sizes.describe(
      [2, 1, 1])

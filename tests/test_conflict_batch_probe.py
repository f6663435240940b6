"""The accuracy tooling of DetectConflict's questions asked together: the
labelled conflict cases asked one at a time and in batches
(bench/conflict_batch_probe.py, `judgement_probe.py --only conflicts
--batch-sizes N`, on calibration/conflict_batch_compare.py's rules), on a
scripted model that answers as the labels say."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from crsec_concordia.calibration import conflict_batch_compare as rules
from crsec_concordia.calibration import run_policy
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.calibration.probes import load_probes, probes_path
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.models import ScriptedModel
from crsec_concordia.scenarios import load_scenario

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import conflict_batch_probe as probe  # noqa: E402
import judgement_probe  # noqa: E402

VENUE = "hobbs_cafe_mini"
_ONE = re.compile(r'^(.+?) \((.*?)\): "(.*)"$', re.M)
_BATCHED = re.compile(r'^\[(q\d+)\] (.+?) \((.*?)\): "(.*)"$', re.M)


def _rule_after(prompt: str, end: int) -> str:
  return prompt[end:].split("Rule: ", 1)[1].split("\n", 1)[0]


def labelled_model(labels, lose_batched=False):
  """Answers as the labels say ({(action, norm): breaks}), one at a time
  and batched; `lose_batched`: every batched breach answered "follows"."""
  def verdict(action, norm, batched):
    breaks = labels[(action, norm)] and not (batched and lose_batched)
    return ({"evidence": action, "verdict": "breaks"} if breaks else
            {"evidence": "none", "verdict": "unrelated"})

  def one(prompt, schema):
    found = _ONE.search(prompt)
    key, = schema["properties"]
    return {key: verdict(found[3], _rule_after(prompt, found.end()), False)}

  def batch(prompt, schema):
    out = {m[1]: verdict(m[4], _rule_after(prompt, m.end()), True)
           for m in _BATCHED.finditer(prompt)}
    assert list(out) == list(schema["properties"])
    return out
  return ScriptedModel([(r"Each question below has an id", batch),
                        (r"holds some rules about how people", one)])


@pytest.fixture(scope="module")
def venue():
  scenario = load_scenario(VENUE)
  cases = load_probes(probes_path(scenario), scenario).only(["conflicts"])
  labels = {(c.action, c.norm): c.breaks for c in cases.conflicts}
  settings = run_policy.settings(RefereePolicy.trusting(), MINILM_THRESHOLDS)
  return scenario, cases, labels, settings, shared_embedder()


def test_a_model_alike_in_both_modes_differs_on_no_case(venue, capsys):
  scenario, cases, labels, settings, embedder = venue
  model = labelled_model(labels)
  lines, rows = probe.run_venue(model, embedder, scenario, cases, settings,
                                [3, 8])
  out = capsys.readouterr().out
  assert "differs" not in out and len(lines) == 3
  breaches = sum(c.breaks for c in cases.conflicts)
  assert all(f"hits {breaches}/{breaches} 1.00 [1.00, 1.00]" in line
             and "false alarms 0/" in line for line in lines)
  assert "rule passes" in lines[1] and "rule passes" in lines[2]
  # Batched: every case asked once per size, in calls of at most 3 or 8
  # cases of one place each.
  sizes = [len(c.schema["properties"]) for c in model.calls
           if "Each question below" in c.prompt]
  assert max(sizes) == 8 and sum(sizes) == 2 * len(cases.conflicts)
  for call in model.calls:
    places = {m[3] for m in _BATCHED.finditer(call.prompt)}
    assert len(places) <= 1
  assert all(np.array_equal(rows[rules.ONE_AT_A_TIME], r)
             for r in rows.values())


def test_breaches_lost_batched_are_listed_and_the_rule_fails(venue, capsys):
  scenario, cases, labels, settings, embedder = venue
  lines, _ = probe.run_venue(labelled_model(labels, lose_batched=True),
                             embedder, scenario, cases, settings, [4])
  out = capsys.readouterr().out
  assert out.count("differs (batches of 4)") == sum(
      c.breaks for c in cases.conflicts)
  assert "hits -1.00 [-1.00, -1.00]" in lines[1]
  assert "rule fails" in lines[1]


def test_judgement_probe_compares_the_conflicts_and_pools_the_venues(
    venue, monkeypatch, capsys):
  scenario, cases, labels, settings, embedder = venue
  town = load_scenario("tea_crates")
  more = load_probes(probes_path(town), town).only(["conflicts"])
  labels = {**labels, **{(c.action, c.norm): c.breaks
                         for c in more.conflicts}}
  monkeypatch.setattr(judgement_probe, "_venues", lambda args: [
      (scenario, cases), (town, more)])
  monkeypatch.setattr(judgement_probe.models, "make_model",
                      lambda *a, **k: labelled_model(labels))
  assert judgement_probe.main(["--only", "conflicts", "--batch-sizes",
                               "5", "--policy", "trusting"]) == 0
  out = capsys.readouterr().out
  summary = out.split("summary, per action against batched")[1]
  pooled = [line for line in summary.splitlines()
            if line.startswith("all venues DetectConflict")]
  n = len(cases.conflicts) + len(more.conflicts)
  assert len(pooled) == 2 and all(f"(n={n})" in line for line in pooled)


def test_the_rule_s_error_rates_by_simulation():
  rates = rules.simulate_conflicts(cases=23, venues=40, resamples=200,
                                   losses=(0.0, 0.3))
  # A batched mode that loses nothing passes more often than one that
  # loses 0.3 of the hits.
  assert rates[0.0] > rates[0.3]

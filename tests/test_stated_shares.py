"""Stated belief shares at the start and the end, the difference in
differences, and where they show (measure/stated_shares.py,
present/stated_report.py), on hand-built runs with a stated_belief.csv
(tests/stated_fixtures.py); no model."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest

import crsec_concordia
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.metrics.measure import aggregate, run_metrics
from crsec_concordia.metrics.measure.stated_shares import DID
from crsec_concordia.metrics.present import findings, report, stated_report
from crsec_concordia.metrics.present.sequential import Design
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.format import METRICS, SUMMARY_JSON
from tests import stated_fixtures as sf

FAILS = "Tom Gomez"


@pytest.fixture(scope="module", autouse=True)
def embedder():
  return shared_embedder()


def gain_with_a_failure(arm, seed, phase, agent, role):
  """Normative agents gain the target; Tom's question fails at the start
  in the normative arm."""
  if arm == "normative" and phase == "start" and agent == FAILS:
    return None
  return sf.normative_gain(arm, seed, phase, agent, role)


@pytest.fixture(scope="module")
def gained(tmp_path_factory):
  root = sf.stated_compare(tmp_path_factory.mktemp("gain") / "cmp",
                           gain_with_a_failure)
  return root, aggregate.aggregate(root)


@pytest.fixture(scope="module")
def everyone(tmp_path_factory):
  root = sf.stated_compare(tmp_path_factory.mktemp("all") / "cmp",
                           sf.everyone)
  return aggregate.aggregate(root).summary["stated_belief"]


def test_everyone_stating_the_target_throughout_is_no_emergence(everyone):
  t = everyone["targets"][sf.TARGET]
  for phase in ("start", "end"):
    for arm in ("normative", "baseline"):
      share = t["shares"][phase][arm]
      assert share["raw"] == 1.0 and share["corrected"] == 1.0
      assert share["agents"] == 7  # the three entrepreneurs left out
  did = t["did"]
  assert did["kind"] == "corrected" and did["value"] == 0.0
  assert did["low"] < 0.0 < did["high"]
  assert t["held_at_start"] and t["start_pooled"]["low"] > 0.0
  other = everyone["targets"]["tip_after_meals"]
  assert other["shares"]["start"]["normative"]["raw"] == 0.0
  assert not other["held_at_start"]


def test_normative_agents_gaining_the_target_give_a_positive_did(gained):
  _, cm = gained
  t = cm.summary["stated_belief"]["targets"][sf.TARGET]
  assert t["shares"]["start"]["normative"]["raw"] == 0.0
  assert t["shares"]["end"]["normative"]["raw"] == 1.0
  assert t["change"]["baseline"]["value"] == 0.0
  assert t["did"]["value"] == 1.0 and t["did"]["low"] > 0.0
  assert not t["held_at_start"]


def test_failed_agents_are_left_out_and_counted(gained):
  _, cm = gained
  block = cm.summary["stated_belief"]
  start = block["targets"][sf.TARGET]["shares"]["start"]
  assert start["normative"]["agents"] == 6 and start["baseline"]["agents"] == 7
  assert block["apart"]["normative"]["start"]["failed"] == 1
  assert block["apart"]["normative"]["end"]["failed"] == 0
  assert block["targets"][sf.TARGET]["shares"]["end"]["normative"][
      "agents"] == 7


def test_entrepreneurs_are_reported_apart(gained):
  _, cm = gained
  block = cm.summary["stated_belief"]
  for arm in ("normative", "baseline"):
    apart = block["apart"][arm]["start"]
    assert apart["entrepreneurs"] == 3
    assert apart["entrepreneurs_stating"][sf.TARGET] == 3
  # They state it, yet nobody counted states it at the start.
  assert block["targets"][sf.TARGET]["start_pooled"]["raw"] == 0.0


def test_a_run_that_asked_nobody_is_not_asked(tmp_path):
  run = reading.read_run(sf.stated_run(tmp_path / "run", "normative", 1,
                                       None))
  m = run_metrics.compute(run)
  assert "stated_belief" not in m.summary  # no zero shares
  assert not m.stated.asked
  cm = aggregate.aggregate(sf.stated_compare(tmp_path / "cmp", None))
  assert cm.summary["stated_belief"] == {"asked": False, "note": "not asked"}
  out = report.compare_report(tmp_path / "cmp", tmp_path / "page")
  page = out.index.read_text(encoding="utf-8")
  assert "Stated belief, start and end" in page and "Not asked" in page
  assert not (tmp_path / "cmp" / "compare_stated_belief.csv").exists()
  data = crsec_concordia.load_run(tmp_path / "cmp")
  assert data.stated.empty and data.stated_shares.empty


def test_a_compare_report_shows_the_shares_and_the_did(gained, tmp_path):
  root, _ = gained
  out = report.compare_report(root, tmp_path / "page")
  page = out.index.read_text(encoding="utf-8")
  assert "Stated belief, start and end" in page
  assert "difference in differences" in page
  assert "+100 pts" in page  # the DiD of the gained target
  table = pd.read_csv(root / "compare_stated_belief.csv")
  did = table[(table.target == sf.TARGET) & (table.phase == "did")]
  assert did["group"].tolist() == [DID] and did["value"].iloc[0] == 1.0
  start = table[(table.target == sf.TARGET) & (table.phase == "start")]
  assert set(start["group"]) == {"normative", "baseline", "pooled"}
  summary = json.loads((root / "compare_summary.json").read_text())
  assert summary["stated_belief"]["targets"][sf.TARGET]["did"]["low"] > 0
  # Each run's own metrics: its shares and change, no DiD.
  run_dir = root / "normative" / "seed_1" / METRICS
  own = json.loads((run_dir / SUMMARY_JSON).read_text())["stated_belief"]
  assert own["targets"][sf.TARGET]["did"] is None
  assert own["targets"][sf.TARGET]["change"]["normative"]["value"] == 1.0
  assert (run_dir / "stated_belief.csv").is_file()


def test_the_emerge_finding_reads_the_did_beside_its_own_rule(gained):
  _, cm = gained
  emerge = findings.decide_findings(cm.runs)[0]
  assert emerge["finding"].startswith("Target norms emerge")
  # One seed pair: no t bound, so no reading either way; the numbers say it.
  assert emerge["did_verdict"] == emerge["did_reading"] == "cannot tell"
  assert f"{sf.TARGET}: +100 pts" in emerge["did_numbers"]
  assert "shown > 0" in emerge["did_rule"]


def _did(normative, baseline, seeds=(1, 2, 3)):
  runs = {"normative": [SimpleNamespace(stated=sf.flags_run(
              "normative", s, *normative)) for s in seeds],
          "baseline": [SimpleNamespace(stated=sf.flags_run(
              "baseline", s, *baseline)) for s in seeds]}
  return stated_report.did_finding(runs, Design.fixed(len(seeds)))


def test_the_did_reading_on_three_seeds():
  nobody, everybody = [False] * 8, [True] * 8
  assert _did((nobody, everybody), (nobody, nobody))["did_verdict"] == (
      "holds")
  assert _did((everybody, everybody), (everybody, everybody))[
      "did_verdict"] == "cannot tell"
  assert _did((nobody, nobody), (nobody, everybody))["did_verdict"] == (
      "does not hold")
  one_arm = stated_report.did_finding(
      {"normative": [SimpleNamespace(stated=sf.flags_run(
          "normative", 1, nobody, everybody))]}, Design.fixed(3))
  assert one_arm["did_verdict"] == "cannot tell"
  assert one_arm["did_numbers"] == "only the normative arm asked"


def test_load_run_returns_the_stated_rules_and_shares(gained):
  root, _ = gained
  data = crsec_concordia.load_run(root)
  rules = data.stated
  said = rules[(rules.rule == sf.SMOKE)]
  assert all(sf.TARGET in t for t in said["targets"])
  assert all(t == () for t in rules[rules.rule == sf.OTHER]["targets"])
  failed = rules[rules.error != ""]
  assert failed["agent"].tolist() == [FAILS] and failed["targets"].iloc[0] == ()
  shares = data.stated_shares
  end = shares[(shares.target == sf.TARGET) & (shares.phase == "end")
               & (shares.group == "normative")]
  assert end["raw"].tolist() == [1.0]
  assert set(shares["run"]) == {"normative seed 1", "baseline seed 1"}
  files_only = crsec_concordia.load_run(root, metrics=False)
  assert files_only.stated["targets"].isna().all()
  assert len(files_only.stated) == len(rules)

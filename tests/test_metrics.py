"""Metrics from hand-built run directories with known answers."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from crsec_concordia.embedding import shared_embedder
from crsec_concordia.errors import UserError
from crsec_concordia.metrics.classifiers.judge import LLMJudge
from crsec_concordia.metrics.classifiers.matching import (CHOSEN_RULE,
                                                          NormMatcher)
from crsec_concordia.metrics.measure import run_metrics, usage
from crsec_concordia.metrics.present import tables
from crsec_concordia.rundir import reading
from crsec_concordia.models import ScriptedModel
sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import ABIGAIL, CARLOS, ISABELLA, SAM, RunBuilder

SMOKE = "no_smoking_indoors"


@pytest.fixture(scope="module", autouse=True)
def embedder():
  return shared_embedder()


def compute(builder: RunBuilder) -> run_metrics.RunMetrics:
  return run_metrics.compute(reading.read_run(builder.write()))


def column(m: run_metrics.RunMetrics, name: str) -> list[float]:
  return m.per_step[name].tolist()


def test_belief_three_of_four_hold_a_paraphrase(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=4)
  b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  b.hold(2, CARLOS, "Smoking is not permitted inside the cafe.",
         source_agent=ABIGAIL)
  b.hold(3, SAM, "Adhere to no-smoking policies indoors.",
         source_agent=CARLOS)
  b.hold(3, ISABELLA, "Keep the café tidy.", origin="observation")
  # A rejected paraphrase is not held: Isabella stays out.
  b.reject(3, ISABELLA, "Do not smoke inside the café.",
           source_agent=ABIGAIL)
  m = compute(b)
  assert column(m, f"belief.{SMOKE}") == [0.25, 0.5, 0.75, 0.75]
  assert m.summary["targets"][SMOKE]["final"]["belief"] == 0.75
  assert set(m.summary["targets"][SMOKE]["holders"]) == {ABIGAIL, CARLOS, SAM}
  assert column(m, "belief.be_quiet") == [0.0] * 4


def test_belief_uses_the_latest_snapshot_at_or_before_the_step(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=5)
  b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  b.hold(3, CARLOS, "Do not smoke inside the café.", source_agent=ABIGAIL)
  path = b.write()
  # Snapshots only at steps 2 and 4: step 1 is unmeasured, 3 uses step 2's.
  for step in (1, 3, 5):
    (path / "norms" / f"step_{step:04d}.json").unlink()
  m = run_metrics.compute(reading.read_run(path))
  values = column(m, f"belief.{SMOKE}")
  assert math.isnan(values[0])
  assert values[1:] == [0.25, 0.25, 0.5, 0.5]


def test_replaced_norms_do_not_count(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=2)
  norm_id = b.hold(1, CARLOS, "Do not smoke inside the café.",
                   source_agent=ABIGAIL)
  path = b.write()
  snap = path / "norms" / "step_0002.json"
  data = json.loads(snap.read_text())
  for norm in data[CARLOS]["norms"]:
    if norm["id"] == norm_id:
      norm.update(activated=False, status="replaced", replaced_by="x")
  snap.write_text(json.dumps(data))
  m = run_metrics.compute(reading.read_run(path))
  assert column(m, f"belief.{SMOKE}") == [0.25, 0.0]


def _near_miss_run(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=1)
  b.hold(1, ABIGAIL, "Smoke only in designated areas.", origin="created")
  b.hold(1, CARLOS, "Ask others before you smoke around them.",
         origin="created")
  b.hold(1, SAM, "Clear your table after eating.", origin="created")
  b.hold(1, ISABELLA, "Smoking is not permitted inside the cafe.",
         origin="created")
  return reading.read_run(b.write())


def test_near_miss_rule_embedding_only(tmp_path):
  """docs/metrics.md: "designated areas" does not mean "no smoking indoors",
  but the embedder cannot see it: the single cosine counted it (0.69 >=
  0.52) and so does the chosen rule (one of its 12 false positives of 36 on
  the test half, corrected for in the report; the judge, next test, leaves
  it out). Lower near-misses are not counted."""
  m = run_metrics.compute(_near_miss_run(tmp_path))
  assert column(m, f"belief.{SMOKE}") == [0.5]
  assert set(m.summary["targets"][SMOKE]["holders"]) == {ISABELLA, ABIGAIL}
  assert column(m, "belief.tip_after_meals") == [0.0]


def test_near_miss_rule_with_the_llm_judge(tmp_path):
  model = ScriptedModel([
      (r"Person's norm: Smoke only in designated areas", {"answer": "no"}),
      (r"Person's norm: Smoking is not permitted", {"answer": "yes"}),
      (r".", {"answer": "no"})])
  run = _near_miss_run(tmp_path)
  matcher = NormMatcher(run.targets, judge=LLMJudge(model))
  m = run_metrics.compute(run, matcher)
  assert column(m, f"belief.{SMOKE}") == [0.25]
  assert set(m.summary["targets"][SMOKE]["holders"]) == {ISABELLA}
  assert m.summary["matcher"]["judge"] is True


def test_conflicts_conversations_and_thoughts_per_step(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=4)
  act = "Carlos lights a cigarette at his table."
  b.conflict(1, ABIGAIL, CARLOS, "No smoking indoors.", act, talk=True)
  b.conflict(3, ABIGAIL, SAM, "No smoking indoors.", act, talk=True)
  b.conflict(3, ISABELLA, CARLOS, "Be quiet in public places.",
             "Carlos shouts across the room.", talk=False)
  b.conversation(1, ABIGAIL, CARLOS, "smoking indoors", "No smoking indoors.",
                 [(ABIGAIL, "Would you smoke outside?"), (CARLOS, "Sorry.")])
  b.conversation(2, SAM, CARLOS, "the weather", None,
                 [(SAM, "Nice day."), (CARLOS, "It is.")])
  # Its first turn failed: nothing said, no talk (a failure record's).
  b.conversation(3, ABIGAIL, SAM, "smoking indoors", "No smoking indoors.",
                 [])
  b.thought(2, ISABELLA, ["Smoking indoors makes the air unpleasant for "
                          "other guests.",
                          "Jennifer is drawing pictures at the corner table."])
  b.thought(4, SAM, ["Tom is studying for his exam."])
  # IdentifyNorm drew a norm from Sam's thought: it is normative too.
  b.record("candidate", 4, agent=SAM, norm_id="sam-9",
           content="Let people study in peace.", type="injunctive",
           utility=40, origin="observation", source_agent=None,
           source_text="Tom is studying for his exam.")
  m = compute(b)
  assert column(m, "conflicts") == [1, 0, 2, 0]
  assert column(m, f"conflicts.{SMOKE}") == [1, 0, 1, 0]
  assert column(m, "conflicts.be_quiet") == [0, 0, 1, 0]
  assert column(m, "conversations") == [1, 1, 0, 0]
  assert column(m, "norm_conversations") == [1, 0, 0, 0]
  assert column(m, f"conversations.{SMOKE}") == [1, 0, 0, 0]
  assert column(m, "thoughts") == [0, 2, 0, 1]
  assert column(m, "norm_thoughts") == [0, 1, 0, 1]
  assert m.summary["totals"]["conflicts"] == 3


def test_behaviour_compliance_definitions(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=5)
  b.action(1, CARLOS, ["smoking_indoors"])
  b.action(2, SAM, ["smoking_indoors"])
  b.action(3, CARLOS, ["smoking_outside"])
  b.action(4, SAM, ["smoking_outside"])
  b.action(4, ISABELLA, ["quiet_talk"])       # irrelevant to smoking
  b.action(5, SAM, ["smoking_outside", "smoking_indoors"])  # both: violates
  m = compute(b)
  assert column(m, f"behaviour.{SMOKE}") == [0, 0, 0.25, 0.5, 0.25]
  assert column(m, f"behaviour_observed.{SMOKE}") == [0, 0, 0.5, 1.0, 0.5]
  assert column(m, f"behaviour_nonviolating.{SMOKE}") == [0.75, 0.5, 0.75,
                                                          1.0, 0.75]
  assert column(m, f"observed.{SMOKE}") == [1, 2, 2, 2, 2]
  assert column(m, f"violations.{SMOKE}") == [1, 1, 0, 0, 1]
  assert column(m, "behaviour.be_quiet") == [0, 0, 0, 0.25, 0.25]
  observed = column(m, "behaviour_observed.tip_after_meals")
  assert all(math.isnan(v) for v in observed)  # nobody observed yet


def test_plan_compliance_and_gap(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=3)
  smoke = b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  tidy = b.hold(1, ABIGAIL, "Keep the café tidy.", origin="created")
  carlos = b.hold(1, CARLOS, "Indoor smoking is prohibited.",
                  source_agent=ABIGAIL)
  b.plan(1, ABIGAIL, [tidy])
  b.plan(2, ABIGAIL, [smoke, tidy])
  b.plan(2, CARLOS, [carlos])
  b.action(3, CARLOS, ["smoking_outside"])
  m = compute(b)
  assert column(m, f"plan.{SMOKE}") == [0, 0.5, 0.5]
  assert column(m, f"plan_observed.{SMOKE}") == [0, 1.0, 1.0]
  assert column(m, f"gap.{SMOKE}") == [0.5, 0.5, 0.25]


def test_time_to_adoption(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=6)
  b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  b.hold(2, CARLOS, "Smoking inside is not allowed.", source_agent=ABIGAIL)
  b.hold(4, SAM, "Never light a cigarette indoors.", source_agent=ABIGAIL)
  b.hold(5, ISABELLA, "Customers must not smoke indoors.",
         source_agent=ABIGAIL)
  for agent, step in ((ABIGAIL, 1), (CARLOS, 3), (SAM, 5), (ISABELLA, 6)):
    b.action(step, agent, ["smoking_outside"])
  m = compute(b)
  t = m.summary["targets"][SMOKE]["time_to"]
  assert t["belief"]["50%"] == {"step": 2, "time": "Day 1 09:10",
                                "elapsed_minutes": 10}
  assert t["belief"]["90%"]["step"] == 5
  assert t["belief"]["100%"]["time"] == "Day 1 09:40"
  assert t["behaviour"]["50%"]["step"] == 3
  assert t["behaviour"]["100%"]["step"] == 6
  assert m.summary["targets"][SMOKE]["behaviour_lag_minutes"]["50%"] == 10
  assert t["belief"]["50%"] is not None
  assert m.summary["targets"]["be_quiet"]["time_to"]["belief"]["50%"] is None


def test_emergent_norm_cluster(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=3)
  b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  b.hold(2, ISABELLA, "Maintain a healthy environment.",
         origin="observation")
  b.hold(3, SAM, "Maintain a healthy environment for everyone.",
         source_agent=ISABELLA)
  b.hold(3, CARLOS, "Always greet the barista.", origin="observation")
  b.hold(3, CARLOS, "Do not smoke inside the café.", source_agent=ABIGAIL)
  m = compute(b)
  emergent = m.summary["emergent_norms"]
  assert len(emergent) == 1
  cluster = emergent[0]
  assert cluster["agents"] == [ISABELLA, SAM]
  assert cluster["n_agents"] == 2
  assert not cluster["seeded"]
  assert cluster["first_step"] == 2
  assert "healthy environment" in cluster["representative"]


def test_baseline_has_no_belief_but_behaviour(tmp_path):
  b = RunBuilder(tmp_path / "run", arm="baseline", steps=3)
  b.action(1, CARLOS, ["smoking_indoors"])
  b.action(2, CARLOS, ["smoking_outside"])
  m = compute(b)
  assert not (tmp_path / "run" / "norms").exists()
  assert all(math.isnan(v) for v in column(m, f"belief.{SMOKE}"))
  assert column(m, f"behaviour.{SMOKE}") == [0, 0.25, 0.25]
  assert column(m, "conflicts") == [0, 0, 0]
  final = m.summary["targets"][SMOKE]["final"]
  assert final["belief"] is None and final["behaviour"] == 0.25
  assert m.summary["emergent_norms"] == []
  assert all(math.isnan(v) for v in column(m, f"plan.{SMOKE}"))


def test_llm_usage_per_step_and_per_module(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=3)
  b.record("step", 1, actor=CARLOS, calls=5, cached_calls=0,
           prompt_tokens=100, completion_tokens=10)
  b.record("step", 1, actor=SAM, calls=7, cached_calls=0,
           prompt_tokens=140, completion_tokens=14)
  b.record("step", 3, actor=SAM, calls=10, cached_calls=1,
           prompt_tokens=200, completion_tokens=20)
  counts = {"calls": 3, "cached_calls": 0, "failed_calls": 0,
            "prompt_tokens": 30, "completion_tokens": 3}
  b.usage = {"by_tag": {"NormEvaluator": counts, "ConflictDetector": counts,
                        "NormIdentifier": counts, "NormativePlanner": counts,
                        "CreateNorm": counts, "venue__GameMaster": counts,
                        "mystery": counts}, "totals": {}}
  m = compute(b)
  assert column(m, "llm_calls") == [7, 0, 3]
  assert column(m, "prompt_tokens") == [140, 0, 60]
  assert m.summary["totals"]["llm_calls"] == 10
  modules = m.summary["usage"]["by_module"]
  assert modules["spreading"]["calls"] == 6
  assert modules["evaluation"]["calls"] == 3
  assert modules["compliance"]["calls"] == 3
  assert modules["creation"]["calls"] == 3
  assert modules["game_master"]["calls"] == 3
  assert modules["other"]["calls"] == 3
  assert m.summary["usage"]["totals"]["calls"] == 21
  tags = {"CreateNorm": "creation", "DecideToTalk": "spreading",
          "DetectConflict": "spreading", "IdentifyNorm": "spreading",
          "Reflect": "spreading", "ImmediateEvaluation": "evaluation",
          "LongTermSynthesis": "evaluation", "NormativePlan": "compliance",
          "act": "compliance", "GM.adjudicate": "game_master",
          "GM.other": "game_master", "MetricsJudge": "metrics",
          "other": "other"}
  assert {t: usage.module_of(t) for t in tags} == tags


def test_per_hour_and_export(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=9)  # 09:00 .. 10:20
  b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  b.hold(7, CARLOS, "Do not smoke inside the café.", source_agent=ABIGAIL)
  for step in (2, 5, 7, 8):
    b.conflict(step, ABIGAIL, CARLOS, "No smoking indoors.",
               "Carlos lights a cigarette.")
  m = compute(b)
  hours = m.per_hour
  assert hours["hour"].tolist() == ["Day 1 09:00", "Day 1 10:00"]
  assert hours["conflicts"].tolist() == [2, 2]
  assert hours[f"belief.{SMOKE}"].tolist() == [0.25, 0.5]
  assert hours["first_step"].tolist() == [1, 7]
  out = tables.write_run(m)
  assert out == tmp_path / "run" / "metrics"
  for name in ("per_step.csv", "per_hour.csv", "summary.json"):
    assert (out / name).is_file()
  text = (out / "summary.json").read_text()
  assert "NaN" not in text
  summary = json.loads(text)
  assert summary["targets"][SMOKE]["final"]["belief"] == 0.5
  assert summary["matcher"]["threshold"] == CHOSEN_RULE.threshold


def test_quiet_steps_are_placed_on_the_clock(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=5, arm="baseline")
  b.action(2, CARLOS, ["smoking_indoors"])
  m = compute(b)
  assert column(m, "step") == [1, 2, 3, 4, 5]
  assert column(m, "time") == ["Day 1 09:00", "Day 1 09:10", "Day 1 09:20",
                               "Day 1 09:30", "Day 1 09:40"]


def test_steps_past_the_day_window_start_the_next_day(tmp_path):
  """The scenario's stamp rule: 25-minute steps in a 09:00-10:00 window give
  09:00, 09:25, 09:50, then day 2 09:00."""
  b = RunBuilder(tmp_path / "run", steps=4, arm="baseline")
  b.scenario["clock"].update(end="10:00", minutes_per_step=25, days=2)
  m = compute(b)
  assert column(m, "time") == ["Day 1 09:00", "Day 1 09:25", "Day 1 09:50",
                               "Day 2 09:00"]
  assert column(m, "elapsed_minutes") == [0, 25, 50, 60]


def test_setup_records_count_in_step_one(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=2)
  b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  for record in b.records:
    if record["kind"] == "created":
      record.update(step=0, time=None, day=None, clock=None)
  m = compute(b)
  assert column(m, "step") == [1, 2]
  assert column(m, "time") == ["Day 1 09:00", "Day 1 09:10"]
  created = m.run.of_kind("created")[0]
  assert created["step"] == 1 and created["setup_step"] == 0


def test_not_a_run_directory(tmp_path):
  with pytest.raises(UserError) as e:
    reading.read_run(tmp_path)
  message = str(e.value)
  assert "\n" not in message and "not a run directory" in message
  assert "crsec run" in message
  (tmp_path / "compare.json").write_text("{}")
  with pytest.raises(UserError, match="compare directory"):
    reading.read_run(tmp_path)
  with pytest.raises(UserError, match="not a directory"):
    reading.read_run(tmp_path / "missing")


def test_damaged_events(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=2, arm="baseline")
  b.action(1, CARLOS, ["smoking_indoors"])
  path = b.write()
  with open(path / "events.jsonl", "a", encoding="utf-8") as f:
    f.write('{"kind": "action", "ste')  # torn by a kill: skipped
  assert len(reading.read_run(path).records) == 1
  (path / "events.jsonl").write_text('{"kind": "action"}\nnot json\n{}\n')
  with pytest.raises(UserError, match="line 2 is not JSON"):
    reading.read_run(path)
  (path / "events.jsonl").unlink()
  with pytest.raises(UserError, match="events.jsonl is missing"):
    reading.read_run(path)

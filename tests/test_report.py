"""`crsec report`: the HTML page, its figures and the questionnaire."""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

import pytest

from crsec_concordia import cli
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.metrics.present import questionnaire, report
from crsec_concordia.rundir import reading

sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import (ABIGAIL, CARLOS, ISABELLA, SAM, RunBuilder,  # pylint: disable=wrong-import-position
                              synthetic_run)

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module", autouse=True)
def embedder():
  return shared_embedder()


def every_operation_run(path: Path) -> Path:
  """A small run with at least one record of each CRSEC operation."""
  b = RunBuilder(path, steps=6)
  smoke = b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  b.action(1, CARLOS, ["smoking_indoors"],
           "Carlos lights a cigarette at his table.")
  b.conflict(1, ABIGAIL, CARLOS, "No smoking indoors.",
             "Carlos lights a cigarette at his table.", talk=True)
  b.conversation(1, ABIGAIL, CARLOS, "smoking indoors", "No smoking indoors.",
                 [(ABIGAIL, "Carlos, would you mind smoking outside?"),
                  (CARLOS, "Oh, sorry, I didn't think.")])
  b.hold(2, CARLOS, "Smoking is not permitted inside the cafe.",
         source_agent=ABIGAIL, source_text="the conversation")
  b.thought(3, ISABELLA, ["Carlos stepped outside to smoke."])
  b.hold(3, ISABELLA, "Smokers go outside.", origin="observation",
         source_agent=CARLOS,
         source_text="Carlos stepped outside to smoke.")
  quiet = b.hold(4, ABIGAIL, "Keep your voice down in the café.",
                 origin="created")
  b.record("synthesis", 5, agent=ABIGAIL, abstract_id="abigail-9",
           content="Keep the café calm and smoke-free.", type="injunctive",
           sources=[smoke, quiet], weights=[0.5, 0.5], utility=85,
           accepted=True)
  b.plan(5, ABIGAIL, [smoke, quiet])
  b.action(6, ABIGAIL, ["quiet_talk"], "Abigail whispers to Isabella.")
  for step in range(1, 7):  # many actions: sampling caps them
    for _ in range(5):
      b.action(step, SAM, ["smoking_outside"], f"Sam smokes outside {step}.")
  b.usage = {"by_tag": {"NormEvaluator": {
      "calls": 3, "cached_calls": 0, "failed_calls": 0, "prompt_tokens": 30,
      "completion_tokens": 3}}, "totals": {}}
  path = b.write()
  (path / "log.html").write_text("<html>log</html>")
  return path


def test_run_report_writes_page_figures_and_questionnaire(tmp_path):
  run_dir = every_operation_run(tmp_path / "run")
  result = report.run_report(run_dir)
  assert result.index == run_dir / "report" / "index.html"
  names = {p.name for p in result.figures}
  assert {"adoption.png", "conflicts.png", "activity.png", "diffusion.png",
          "usage.png"} <= names
  for figure in result.figures:
    assert figure.read_bytes().startswith(PNG)
  page = result.index.read_text()
  assert page.count("data:image/png;base64,") == len(result.figures)
  assert "href='../log.html'" in page
  assert "questionnaire/index.html" in page
  assert "No smoking indoors." in page
  assert (run_dir / "metrics" / "per_step.csv").is_file()
  assert not re.search(r"src='(?!data:)", page), "page is self-contained"


def test_questionnaire_has_one_task_per_operation(tmp_path):
  run_dir = every_operation_run(tmp_path / "run")
  report.run_report(run_dir)
  qdir = run_dir / "report" / "questionnaire"
  assert (qdir / "index.html").is_file()
  for agent in (ABIGAIL, CARLOS, ISABELLA, SAM):
    assert (qdir / f"{questionnaire.slug(agent)}.html").is_file()
  rows = list(csv.DictReader(open(qdir / "all.csv", encoding="utf-8")))
  by = {}
  for row in rows:
    by.setdefault((row["agent"], row["operation"]), []).append(row)
  assert set(questionnaire.OPERATIONS) == {op for _, op in by}
  assert "Abigail, 23" in by[(ABIGAIL, "creation")][0]["input"]
  sender = by[(ABIGAIL, "sender")][0]
  assert "Carlos lights a cigarette" in sender["input"]
  assert "talks to them" in sender["output"]
  receiver = by[(CARLOS, "receiver")][0]
  assert "would you mind smoking outside" in receiver["input"]
  assert "Smoking is not permitted" in receiver["output"]
  observation = {r["output"] for r in by[(ISABELLA, "observation")]}
  assert any("Carlos stepped outside" in o for o in observation)
  assert any("Smokers go outside" in o for o in observation)
  assert by[(CARLOS, "immediate_evaluation")][0]["output"].startswith(
      "Accepted")
  assert "Keep your voice down" in by[(ABIGAIL, "synthesis")][0]["input"]
  assert "No smoking indoors." in by[(ABIGAIL, "plan")][0]["output"]
  assert "whispers" in by[(ABIGAIL, "action")][0]["output"]
  assert len(by[(SAM, "action")]) == 20  # 30 actions, capped
  assert all(r["rating_1_to_7"] == "" for r in rows)
  html = (qdir / "abigail-chen.html").read_text()
  assert html.count("type='radio'") == 7 * sum(
      len(v) for (a, _), v in by.items() if a == ABIGAIL)


def test_a_failed_act_is_no_item_and_no_observation(tmp_path):
  """An act whose answer failed is the act's marker in its record, and a
  talk whose first turn failed has no lines: nobody perceived either, so
  no rater reads them as something done, seen or heard."""
  b = RunBuilder(tmp_path / "run", steps=2)
  failed = f"{CARLOS} (no valid action: the model's answer failed its schema)"
  b.action(1, CARLOS, [], failed)
  b.action(1, SAM, ["smoking_outside"], "Sam smokes outside.")
  b.thought(2, ISABELLA, ["Sam went out to smoke."])
  # Carlos is told a norm in a talk; a later talk, whose first turn failed,
  # said nothing and is not what he heard.
  b.conversation(1, ABIGAIL, CARLOS, "smoking", "No smoking indoors.",
                 [(ABIGAIL, "Please smoke outside.")])
  b.hold(2, CARLOS, "Smoke outside.", source_agent=ABIGAIL,
         source_text="the conversation")
  b.conversation(2, ABIGAIL, CARLOS, "smoking", "No smoking indoors.", [])
  items = questionnaire.items_for_run(reading.read_run(b.write()))
  assert not any("no valid action" in i.input + i.output for i in items)
  heard, = [i.input for i in items if i.operation == "receiver"]
  assert "Please smoke outside." in heard
  assert [i.agent for i in items if i.operation == "action"] == [SAM]
  seen, = [i.input for i in items if i.operation == "observation"]
  assert "Sam smokes outside." in seen


def test_questionnaire_sampling_is_seeded(tmp_path):
  run = reading.read_run(every_operation_run(tmp_path / "run"))
  items = questionnaire.items_for_run(run)
  def sam_steps(seed):
    fresh = questionnaire.items_for_run(run)
    chosen = questionnaire.sample(fresh, run.agents, per_op=20, seed=seed)
    return [i.output for i in chosen[SAM] if i.operation == "action"]
  assert sam_steps(0) == sam_steps(0)
  assert sam_steps(0) != sam_steps(1)
  outputs = sam_steps(0)
  assert outputs == sorted(outputs, key=[i.output for i in items].index)


def test_compare_report(tmp_path):
  base = tmp_path / "cmp"
  arms = {"normative": [], "baseline": []}
  for seed in (1, 2):
    for arm in arms:
      synthetic_run(base / arm / f"seed_{seed}", arm=arm, seed=seed, steps=8)
      arms[arm].append(f"{arm}/seed_{seed}")
  (base / "compare.json").write_text(json.dumps(
      {"scenario": "hobbs_cafe_synthetic", "seeds": [1, 2], "arms": arms}))
  result = report.compare_report(base)
  assert {p.name for p in result.figures} == {
      "compare_adoption.png", "compare_conflicts.png",
      "compare_activity.png", "diffusion.png"}
  page = result.index.read_text()
  assert "normative vs baseline" in page
  assert "effect (normative - baseline)" in page
  assert page.count("Concordia log") == 4  # one per run, marked not written
  assert (base / "compare_summary.json").is_file()
  assert (result.questionnaire / "all.csv").is_file()


def test_report_cli_and_bad_directory(tmp_path, capsys):
  run_dir = RunBuilder(tmp_path / "run", arm="baseline", steps=2).write()
  assert cli.main(["report", str(run_dir), "--out",
                   str(tmp_path / "r")]) == 0
  assert (tmp_path / "r" / "index.html").is_file()
  assert "baseline run" in (tmp_path / "r" / "index.html").read_text()
  capsys.readouterr()
  assert cli.main(["report", str(tmp_path)]) == 2
  err = capsys.readouterr().err.strip()
  assert "\n" not in err and "neither a run directory" in err


def test_the_run_report_says_where_the_referees_error_was_measured(tmp_path):
  """Behaviour shares are the referee's tags: the page says on which
  labelled actions its error was measured, or that it was not (a venue
  nobody labelled: the shares are raw)."""
  import copy  # pylint: disable=import-outside-toplevel
  from crsec_concordia.scenarios import load_scenario  # pylint: disable=import-outside-toplevel
  from metrics_fixtures import SCENARIO  # pylint: disable=import-outside-toplevel
  unlabelled = RunBuilder(tmp_path / "unlabelled", steps=2)
  unlabelled.action(1, CARLOS, ["smoking_indoors"], "Carlos lights up.")
  page = report.run_report(unlabelled.write()).index.read_text()
  assert "Behaviour is counted from the referee" in page
  assert "not calibrated for scripted on " in page
  assert "run crsec calibrate --sheet " in page

  cafe = load_scenario("hobbs_cafe_mini").to_dict()
  scenario = copy.deepcopy(SCENARIO)
  scenario["name"] = "hobbs_cafe_mini"
  scenario["behaviours"] = cafe["behaviours"]
  scenario["target_norms"] = cafe["target_norms"]
  labelled = RunBuilder(tmp_path / "labelled", steps=2, scenario=scenario)
  labelled.action(1, CARLOS, ["smoking_indoors"], "Carlos lights up.")
  run_dir = labelled.write()
  info = json.loads((run_dir / "run.json").read_text())
  info["model"] = {"endpoint": "embedded",
                   "model": "qwen2.5-coder-1.5b-instruct-q4_k_m"}
  (run_dir / "run.json").write_text(json.dumps(info))
  page = report.run_report(run_dir).index.read_text()
  # The embedded model's calibration, shipped with the package.
  assert "probe cases of hobbs_cafe_mini, calibration of " in page

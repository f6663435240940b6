"""`crsec calibrate`: calibrations keyed by the model, found by the report.

No language model: the scripted judgement oracle (tests/judgement_oracle.py)
answers every judgement as the labels say, and the held-out kitchen is run
on a scripted model (tests/kitchen_run.py). The user's data directory is
a fresh one per test (conftest.py).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
from pathlib import Path

import pytest

from crsec_concordia import cli, judgement_prompts
from crsec_concordia.calibration import (advice, identity, probes, sheet,
                                         store)
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.commands import calibrate as command
from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.commands import doctor
from crsec_concordia.game_masters.referee import doer_check
from crsec_concordia.metrics.classifiers import judge_quality
from crsec_concordia.metrics.classifiers import labels as labels_lib
from crsec_concordia.metrics.classifiers.matching import (CHOSEN_RULE,
                                                          JUDGE_FLOOR)
from crsec_concordia.metrics.measure import run_metrics
from crsec_concordia.models import EndpointConfig, ScriptedModel
from crsec_concordia.rundir import reading
from crsec_concordia.scenarios import load_scenario
from tests import kitchen_run
from tests.judgement_oracle import JudgementOracle, NormJudgeOracle
from tests.metrics_fixtures import RunBuilder

ROOT = Path(__file__).resolve().parents[1]
GARDEN = ROOT / "scenarios" / "community_garden.yaml"
URL = "http://127.0.0.1:9/v1"
ORACLE = {"endpoint": URL, "model": "oracle-7b",
          "schema_mode": "json_schema"}


def oracle_model(scenario) -> ScriptedModel:
  """The venue's labels and the labelled norms' as one model's answers."""
  venue = JudgementOracle(scenario, probes.load_probes(
      probes.probes_path(scenario), scenario))
  items = labels_lib.load_items()
  norms = {}
  for name in labels_lib.VENUES:
    norms.update({t.text: t.id for t in labels_lib.venue_targets(name)})
  judge = NormJudgeOracle(items, norms)
  return ScriptedModel([(r"^You check whether a person's social norm",
                         judge.answer)], fallback=venue.answer)


def calibrated_with(data: Path, model, embedder, argv: list[str]) -> str:
  """`crsec calibrate ARGV` on `model` and `embedder`, `data` the user's
  data directory: what it printed."""
  with pytest.MonkeyPatch.context() as mp:
    mp.setenv("XDG_DATA_HOME", str(data))
    mp.setattr(command, "make_model", lambda *a, **k: model)
    mp.setattr(command, "shared_embedder", lambda: embedder)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
      assert cli.main(["calibrate", *argv]) == 0
  return printed.getvalue()


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory, embedder):
  """`crsec calibrate scenarios/community_garden.yaml` on the oracle, as an
  OpenAI-compatible endpoint's model: (its file, what it printed)."""
  data = tmp_path_factory.mktemp("calibrated")
  model = oracle_model(load_scenario(str(GARDEN)))
  printed = calibrated_with(data, model, embedder, [
      str(GARDEN), "--base-url", URL, "--model", "oracle-7b", "--jobs", "2"])
  files = list((data / "crsec-concordia" / "calibrations").glob("*.json"))
  return files, model, printed


def test_calibrate_writes_a_file_keyed_by_the_models_identity(calibrated):
  files, model, _ = calibrated
  assert [f.name for f in files] == [
      f"oracle-7b.openai-compatible.{judgement_prompts.prompts_hash()}.json"]
  data = json.loads(files[0].read_text())
  assert data["model"] == {"name": "oracle-7b", "endpoint": "openai-compatible",
                           "prompts": judgement_prompts.prompts_hash()}
  garden = data["venues"]["community_garden"]
  assert garden["labels"] == "probes"
  assert garden["prompts"] == judgement_prompts.prompts_hash()
  assert len(garden["cases"]) == 44  # The referee cases of the probe file.
  assert garden["summary"]["referee"]["n"] == 44
  # Scored under what a run of the garden by this model applies: nobody
  # measured it before, so trusting() (run_policy.for_venue), with the
  # embedder's thresholds and near tie kept beside the answers.
  assert garden["policy"] == RefereePolicy.trusting().to_dict()
  assert garden["floors"]["near_tie"] == MINILM_THRESHOLDS.near_tie
  assert garden["summary"]["referee"]["p"] >= 0.9
  # The matcher with the model as its judge, on the labelled norms.
  assert set(data["matcher"]["targets"]) >= {"no_smoking_indoors"}
  assert all(t["fp"] == 0 for t in data["matcher"]["targets"].values())
  # The cost is the model's own count of calls.
  assert data["cost"]["calls"] == model.usage.totals()["calls"] > 0
  assert data["cost"]["cases"] == 44 + 13 + 21


def test_calibrate_prints_the_cost_and_the_file(calibrated):
  files, _, said = calibrated
  assert f"calibration: {files[0]}" in said
  assert "community_garden: referee P " in said
  assert "cost: " in said and " calls " in said and " tokens, " in said


def garden_run(path: Path, model: dict) -> Path:
  """A garden run whose run.json records `model`: Ruth returns the tools,
  Dev leaves them out."""
  scenario = load_scenario("community_garden").to_dict()
  b = RunBuilder(path, steps=3, scenario=scenario)
  b.action(1, "Ruth Okafor", ["returned_tools"],
           "Ruth Okafor hangs the trowel back in the shed.")
  b.action(2, "Dev Malhotra", ["left_tools_out"],
           "Dev Malhotra leaves the spade on the path.")
  run_dir = b.write()
  info = json.loads((run_dir / "run.json").read_text())
  info["model"] = model
  (run_dir / "run.json").write_text(json.dumps(info))
  return run_dir


def behaviour_notes(run_dir: Path) -> dict[str, dict]:
  m = run_metrics.compute(reading.read_run(run_dir))
  return {t: b["behaviour"]
          for t, b in m.summary["correction"]["targets"].items()}


def test_the_report_names_the_calibration_of_the_runs_model(
    calibrated, tmp_path, monkeypatch):
  files, _, _ = calibrated
  monkeypatch.setattr(store, "search_dirs", lambda: [files[0].parent])
  run_dir = garden_run(tmp_path / "run", {
      **ORACLE, "judgement_prompts": judgement_prompts.prompts_hash()})
  notes = behaviour_notes(run_dir)
  tools = notes["return_tools"]
  assert tools["rates"] is not None, tools["note"]
  assert files[0].name in tools["note"] and "oracle-7b" in tools["note"]
  assert "NOTE" not in tools["note"]
  assert tools["final"]["corrected"] is not None
  assert cli.main(["report", str(run_dir)]) == 0
  page = (run_dir / "report" / "index.html").read_text()
  assert files[0].name in page


def test_another_model_is_not_calibrated_and_says_the_command(
    calibrated, tmp_path, monkeypatch):
  files, _, _ = calibrated
  monkeypatch.setattr(store, "search_dirs", lambda: [files[0].parent])
  run_dir = garden_run(tmp_path / "run", {
      **ORACLE, "model": "another-model",
      "judgement_prompts": judgement_prompts.prompts_hash()})
  for note in behaviour_notes(run_dir).values():
    assert note["rates"] is None
    assert note["note"].startswith(
        f"not calibrated for another-model on community_garden: run crsec "
        f"calibrate community_garden --base-url {URL} --model another-model")
    assert note["final"]["raw"] is not None
    assert note["final"]["corrected"] is None


def test_the_embedded_model_is_not_corrected_by_another_models_error(
    calibrated, tmp_path, monkeypatch):
  """The oracle's calibration is not the embedded model's: the embedded
  model's own (here one made before prompts were hashed, as the first one
  shipped was) is used, and named as made with other prompts."""
  files, _, _ = calibrated
  garden = json.loads(files[0].read_text())["venues"]["community_garden"]
  embedded = identity.ModelIdentity("qwen2.5-coder-1.5b-instruct-q4_k_m",
                                    "embedded", None)
  store.write(tmp_path / "cal" / embedded.file_name, embedded,
              {"community_garden": {**garden, "prompts": None}})
  monkeypatch.setattr(store, "search_dirs",
                      lambda: [files[0].parent, tmp_path / "cal"])
  run_dir = garden_run(tmp_path / "run", {
      "endpoint": "embedded", "model": "qwen2.5-coder-1.5b-instruct-q4_k_m",
      "judgement_prompts": judgement_prompts.prompts_hash()})
  tools = behaviour_notes(run_dir)["return_tools"]
  assert tools["rates"] is not None
  assert "oracle-7b" not in tools["note"]
  assert embedded.file_name in tools["note"]
  assert ("NOTE: calibrated with other judgement prompts than this run's "
          "(the calibration was made before judgement prompts were hashed"
          in tools["note"])
  assert "run crsec calibrate community_garden again" in tools["note"]


def test_the_embedded_models_calibration_ships_with_the_package():
  shipped = [data for _, data in store.files([store.SHIPPED])
             if data["model"]["endpoint"] == "embedded"]
  assert shipped
  assert {data["model"]["name"] for data in shipped} == {
      "qwen2.5-coder-1.5b-instruct-q4_k_m"}
  covered = {venue for data in shipped for venue in data["venues"]}
  # The town's labelled cases are newer than the shipped calibration: they
  # are measured by `crsec calibrate town` on the embedded model, which no
  # test runs; until then a town run's report says it is not calibrated.
  # So are tea_crates' cases (written with no model run).
  assert covered >= set(probes.probed_venues()) - {"town", "tea_crates"}


def test_a_prompt_change_is_said(calibrated, tmp_path, monkeypatch):
  files, _, _ = calibrated
  monkeypatch.setattr(store, "search_dirs", lambda: [files[0].parent])
  run_dir = garden_run(tmp_path / "run", {**ORACLE,
                                          "judgement_prompts": "0" * 12})
  tools = behaviour_notes(run_dir)["return_tools"]
  assert tools["rates"] is not None
  assert (f"calibration prompts {judgement_prompts.prompts_hash()}, this run's "
          f"{'0' * 12}") in tools["note"]


def test_the_prompt_hash_is_stable_and_follows_the_prompts(monkeypatch):
  first = judgement_prompts.prompts_hash()
  assert judgement_prompts.prompts_hash() == first and len(first) == 12
  monkeypatch.setattr(doer_check, "doer_prompt",
                      lambda action, description: f"Who {description}?")
  assert judgement_prompts.prompts_hash() != first


def fill(path: Path) -> None:
  """The labels a person gives the kitchen's sheet (kitchen_run.TRUE):
  every action, and each conflict as a breach."""
  with open(path, encoding="utf-8", newline="") as f:
    rows = list(csv.DictReader(f))
  for row in rows:
    if row["kind"] == "action":
      row["true_tags"] = kitchen_run.TRUE[row["action"]]
    else:
      row["breaks_norm"] = "yes"
  with open(path, "w", encoding="utf-8", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=sheet.SHEET_COLUMNS)
    writer.writeheader()
    writer.writerows(rows)


def test_a_kitchen_sheet_filled_and_read_back_corrects_behaviour(
    tmp_path, embedder, capsys):
  run_dir = kitchen_run.run(tmp_path / "kitchen", embedder)
  before = behaviour_notes(run_dir)["wash_your_dishes"]
  assert before["rates"] is None
  # Its probe file is beside it: the command calibrates on that.
  assert before["note"].startswith(
      "not calibrated for ScriptedModel on office_kitchen: run crsec "
      f"calibrate {kitchen_run.KITCHEN} --base-url URL --model ScriptedModel")
  sheet_path = tmp_path / "sheet.csv"
  assert cli.main(["calibrate", "--sheet", str(run_dir), "--out",
                   str(sheet_path)]) == 0
  with open(sheet_path, encoding="utf-8", newline="") as f:
    rows = list(csv.DictReader(f))
  actions = [r for r in rows if r["kind"] == "action"]
  # Each distinct action once, with the referee's tags; one conflict.
  assert sorted(r["action"] for r in actions) == sorted(kitchen_run.TRUE)
  assert {r["action"]: r["referee_tags"] for r in actions}[
      kitchen_run.DEEDS[kitchen_run.CHLOE]] == "none"
  assert [r["kind"] for r in rows].count("conflict") >= 1
  assert all(not r["true_tags"] and not r["breaks_norm"] for r in rows)
  fill(sheet_path)
  capsys.readouterr()
  assert cli.main(["calibrate", "--labels", str(sheet_path)]) == 0
  said = capsys.readouterr().out
  assert "4 actions of office_kitchen labelled" in said
  after = behaviour_notes(run_dir)["wash_your_dishes"]
  assert after["rates"] is not None, after["note"]
  # Greg's washing tagged (TP), Chloe's rinse missed (FN), Hannah's
  # reminder and Ravi's dirty mug not washing (TN).
  assert {k: after["rates"][k] for k in ("tp", "fp", "fn", "tn")} == {
      "tp": 1, "fp": 0, "fn": 1, "tn": 2}
  assert "labelled actions of a run (a filled sheet) of office_kitchen" in (
      after["note"])
  assert not math.isnan(after["final"]["corrected"])
  # The kitchen's report: the corrected share in its tables, the
  # calibration named on its page.
  assert cli.main(["report", str(run_dir)]) == 0
  page = (run_dir / "report" / "index.html").read_text()
  assert "labelled actions of a run (a filled sheet) of office_kitchen" in page
  with open(run_dir / "metrics" / "per_step.csv", encoding="utf-8") as f:
    last = list(csv.DictReader(f))[-1]
  assert not math.isnan(float(last["behaviour_corrected.wash_your_dishes"]))


def test_a_sheet_adds_to_a_venues_probe_cases_and_replaces_an_older_sheet():
  probe = {"action": "a", "truth": ["x"], "given": ["x"]}
  old = {"labels": "probes", "cases": [probe, {"action": "b", "truth": [],
                                               "tags": ["x"]}]}
  new = {"labels": "sheet", "cases": [{"action": "c", "truth": ["x"],
                                       "tags": []}]}
  both = sheet.merged(old, new)
  assert both["cases"] == [probe, *new["cases"]]
  assert both["labels"] == "probes and sheet"
  assert sheet.merged(None, new) is new


def test_reading_a_sheet_needs_no_model(tmp_path, embedder, monkeypatch):
  run_dir = kitchen_run.run(tmp_path / "kitchen", embedder)
  path, _, _ = sheet.write(run_dir, tmp_path / "sheet.csv")
  fill(path)
  monkeypatch.setattr(command, "make_model", None)  # Any call would fail.
  who, entry = sheet.read(path)
  assert who == identity.ModelIdentity("ScriptedModel", "given",
                                       judgement_prompts.prompts_hash())
  assert entry["summary"]["conflicts_detected"]["breaches"] >= 1


@pytest.mark.parametrize("argv, says", [
    (["calibrate", "--labels", "missing.csv"], "missing.csv: cannot be read"),
    (["calibrate", "no_such_venue"], "no_such_venue: no such file"),
    (["calibrate", "--sheet", "missing_run"], "missing_run is not a directory"),
    (["calibrate", "--sheet", "a", "--labels", "b"], "give one of them"),
    (["calibrate", "hobbs_cafe", "--labels", "b"], "give no SCENARIO"),
])
def test_bad_input_is_one_line_and_exit_2(argv, says, capsys, tmp_path,
                                          monkeypatch):
  monkeypatch.chdir(tmp_path)
  assert cli.main(argv) == 2
  err = capsys.readouterr().err
  assert says in err and len(err.strip().splitlines()) == 1, err


def test_an_unwritable_out_is_one_line_before_any_model(tmp_path, capsys,
                                                         monkeypatch):
  monkeypatch.setattr(command, "make_model", None)  # Never reached.
  blocker = tmp_path / "a_file"
  blocker.write_text("")
  assert cli.main(["calibrate", "community_garden", "--out",
                   str(blocker / "dir")]) == 2
  err = capsys.readouterr().err
  assert "cannot write there" in err and len(err.strip().splitlines()) == 1


def test_a_venue_without_labelled_cases_says_how_to_label_one(
    tmp_path, capsys):
  copy = tmp_path / "kitchen.yaml"
  copy.write_text(kitchen_run.KITCHEN.read_text())
  assert cli.main(["calibrate", str(copy)]) == 2
  err = capsys.readouterr().err
  assert "no labelled cases" in err and "--sheet RUN_DIR" in err
  # A report of a run there says to label the run itself.
  assert advice.not_calibrated(
      {"endpoint": "embedded", "model": "m"}, "office_kitchen", str(copy),
      tmp_path / "run") == (
          "not calibrated for m on office_kitchen: run crsec calibrate "
          f"--sheet {tmp_path / 'run'} --out SHEET.csv, label it, then crsec "
          "calibrate --labels SHEET.csv; behaviour shares are raw (not "
          "corrected)")


def test_a_malformed_sheet_is_one_line_per_problem(tmp_path, embedder,
                                                   capsys):
  run_dir = kitchen_run.run(tmp_path / "kitchen", embedder)
  path, _, _ = sheet.write(run_dir, tmp_path / "sheet.csv")
  with open(path, encoding="utf-8", newline="") as f:
    rows = list(csv.DictReader(f))
  rows[0]["true_tags"] = "washed_dishes washing_up"
  conflict = next(r for r in rows if r["kind"] == "conflict")
  conflict["breaks_norm"] = "perhaps"
  with open(path, "w", encoding="utf-8", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=sheet.SHEET_COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
  assert cli.main(["calibrate", "--labels", str(path)]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 2
  assert "'washing_up' is not a behaviour of the venue" in err[0]
  assert "breaks_norm 'perhaps' is not yes or no" in err[1]
  # A sheet without its columns.
  path.write_text("actor,action\nA,B\n")
  assert cli.main(["calibrate", "--labels", str(path)]) == 2
  err = capsys.readouterr().err
  assert "not a labelling sheet (no column kind" in err
  assert not list(store.user_dir().glob("*.json"))  # Nothing written.


def test_belief_with_the_llm_judge_uses_the_judges_calibration(
    calibrated, monkeypatch):
  """`crsec report --llm-judge`: the matcher's error is the judge model's,
  measured by `crsec calibrate` on the labelled norms; none for another."""
  files, _, _ = calibrated
  monkeypatch.setattr(store, "search_dirs", lambda: [files[0].parent])
  target = next(t for t in labels_lib.venue_targets("garden")
                if t.id == "return_tools")
  oracle = identity.ModelIdentity.of_described(
      {**ORACLE, "judgement_prompts": judgement_prompts.prompts_hash()})
  got, note = judge_quality.rates(target, CHOSEN_RULE.name, JUDGE_FLOOR,
                                  oracle)
  assert got is not None and got.fp == 0 and got.tp > 0
  assert files[0].name in note and "NOTE" not in note
  other = identity.ModelIdentity("a-7b", "openai-compatible", None)
  got, note = judge_quality.rates(target, CHOSEN_RULE.name, JUDGE_FLOOR,
                                  other)
  assert got is None
  assert note.startswith("matcher with the LLM judge not calibrated for a-7b")


def test_doctor_says_where_the_model_is_calibrated(calibrated, monkeypatch):
  files, _, _ = calibrated
  monkeypatch.setattr(store, "search_dirs", lambda: [files[0].parent])
  oracle = EndpointConfig(base_url=URL, model="oracle-7b")
  assert doctor._calibration(oracle) == "oracle-7b on community_garden"
  other = EndpointConfig(base_url=URL, model="a-7b")
  assert doctor._calibration(other) == (
      "none for a-7b: behaviour shares of its runs are raw until `crsec "
      f"calibrate --base-url {URL} --model a-7b`")

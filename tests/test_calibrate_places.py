"""`crsec calibrate` on a venue that declares places: the town.

The probe run builds the referee as a run does on such a venue (its places
the place field's choices, each actor told where it is), so the town's own
labelled cases (scenarios/town.probes.yaml) are measured, and a town run's
report is corrected by them. No language model: the judgement oracle
answers as the labels say (tests/judgement_oracle.py).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import pytest

from crsec_concordia import cli
from crsec_concordia.calibration import probes, sheet, store
from crsec_concordia.commands import calibrate as command
from crsec_concordia.errors import UserError
from crsec_concordia.scenarios import load_scenario
from tests.metrics_fixtures import RunBuilder
from tests.test_calibrate import ORACLE, URL, behaviour_notes, oracle_model


@pytest.fixture(scope="module")
def town_calibrated(tmp_path_factory, embedder):
  """`crsec calibrate town` on the oracle: (its file, the prompts asked)."""
  data = tmp_path_factory.mktemp("town_calibrated")
  model = oracle_model(load_scenario("town"))
  asked: list[str] = []
  answer = model.sample_json

  def recording(prompt, *args, **kwargs):
    asked.append(prompt)
    return answer(prompt, *args, **kwargs)
  with pytest.MonkeyPatch.context() as mp:
    mp.setenv("XDG_DATA_HOME", str(data))
    mp.setattr(model, "sample_json", recording)
    mp.setattr(command, "make_model", lambda *a, **k: model)
    mp.setattr(command, "shared_embedder", lambda: embedder)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
      assert cli.main(["calibrate", "town", "--base-url", URL,
                       "--model", "oracle-7b", "--jobs", "2"]) == 0
  files = list((data / "crsec-concordia" / "calibrations").glob("*.json"))
  assert len(files) == 1
  return files[0], asked, printed.getvalue()


def test_the_towns_cases_are_measured_with_its_places(town_calibrated):
  path, asked, said = town_calibrated
  town = json.loads(path.read_text())["venues"]["town"]
  labelled = probes.load_probes(probes.probes_path(load_scenario("town")),
                                load_scenario("town"))
  assert len(town["cases"]) == len(labelled.referee) >= 12
  assert town["summary"]["referee"]["p"] == 1.0
  conflicts = town["summary"]["conflicts"]
  assert conflicts["hits"] == conflicts["breaches"] == 4
  assert "town: referee P 1.00" in said
  # Each actor is told where it is, as a run tells it.
  general = [p for p in asked if "Goran Eriksen lights a cigarette at his "
             "table by the counter" in p and "narration" in p]
  assert general and "Goran Eriksen is at cafe" in general[0]
  # The place field's choices are the town's places, not indoors/outdoors.
  assert "- library:" in general[0] or "library" in general[0]


def town_run(path: Path, model: dict) -> Path:
  """A town run whose run.json records `model`: a smoker indoors and one
  on the square."""
  scenario = load_scenario("town").to_dict()
  b = RunBuilder(path, steps=3, scenario=scenario)
  b.action(1, "Goran Eriksen", ["smoking_indoors"],
           "Goran Eriksen lights a cigarette at his table.", place="cafe")
  b.action(2, "Bruno Xiong", ["smoking_outside"],
           "Bruno Xiong smokes on a bench by the fountain.", place="square")
  run_dir = b.write()
  info = json.loads((run_dir / "run.json").read_text())
  info["model"] = model
  (run_dir / "run.json").write_text(json.dumps(info))
  return run_dir


def test_a_town_runs_report_is_corrected_by_the_towns_cases(
    town_calibrated, tmp_path, monkeypatch):
  path, _, _ = town_calibrated
  monkeypatch.setattr(store, "search_dirs", lambda: [path.parent])
  from crsec_concordia import judgement_prompts  # pylint: disable=import-outside-toplevel
  run_dir = town_run(tmp_path / "run", {
      **ORACLE, "judgement_prompts": judgement_prompts.prompts_hash()})
  smoking = behaviour_notes(run_dir)["no_smoking_indoors"]
  assert smoking["rates"] is not None, smoking["note"]
  assert path.name in smoking["note"] and "town" in smoking["note"]
  assert smoking["final"]["corrected"] is not None
  assert cli.main(["report", str(run_dir)]) == 0
  assert path.name in (run_dir / "report" / "index.html").read_text()


def test_the_labelling_sheet_works_on_a_town_run(tmp_path, capsys):
  run_dir = town_run(tmp_path / "run", {"endpoint": "given",
                                        "model": "m"})
  out = tmp_path / "sheet.csv"
  assert cli.main(["calibrate", "--sheet", str(run_dir), "--out",
                   str(out)]) == 0
  with open(out, encoding="utf-8", newline="") as f:
    rows = list(csv.DictReader(f))
  for row in rows:
    if row["kind"] == "action":
      row["true_tags"] = ("smoking_indoors" if "table" in row["action"]
                          else "smoking_outside")
    else:
      row["breaks_norm"] = "yes"
  with open(out, "w", encoding="utf-8", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=sheet.SHEET_COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
  capsys.readouterr()
  assert cli.main(["calibrate", "--labels", str(out)]) == 0
  assert "2 actions of town labelled" in capsys.readouterr().out


def test_a_probe_place_the_town_lacks_is_one_line(tmp_path):
  town = load_scenario("town")
  bad = tmp_path / "town.probes.yaml"
  bad.write_text(
      "referee:\n"
      "  - {actor: Goran Eriksen, behaviours: [], place: indoors, "
      "action: \"Goran Eriksen reads.\"}\n"
      "  - {actor: Goran Eriksen, behaviours: [], at: harbour, "
      "action: \"Goran Eriksen sits.\"}\n")
  with pytest.raises(UserError) as e:
    probes.load_probes(bad, town)
  lines = str(e.value).splitlines()
  assert len(lines) == 2
  assert "place 'indoors' is not a place of town (cafe, terrace" in lines[0]
  assert "place 'harbour' is not a place of town" in lines[1]
  # A venue without places keeps its two.
  cafe = load_scenario("hobbs_cafe_mini")
  bad.write_text("referee:\n  - {actor: Tom Gomez, behaviours: [], place: "
                 "cafe, action: \"Tom Gomez reads.\"}\n")
  with pytest.raises(UserError, match="is not indoors or outdoors"):
    probes.load_probes(bad, cafe)

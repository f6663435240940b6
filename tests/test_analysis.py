"""`crsec_concordia.load_run`: run, compare and sweep directories as pandas
DataFrames that stack."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import crsec_concordia
from crsec_concordia import analysis
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.errors import UserError
from crsec_concordia.metrics.measure import run_metrics
from crsec_concordia.metrics.present import tables
from crsec_concordia.rundir import reading

sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import ABIGAIL, CARLOS, RunBuilder  # pylint: disable=wrong-import-position
from tests.test_sweep_file import known_sweep  # noqa: F401  pylint: disable=unused-import,wrong-import-position


@pytest.fixture(scope="module", autouse=True)
def embedder():
  return shared_embedder()


def small_run(path: Path, arm: str = "normative", seed: int = 1) -> Path:
  b = RunBuilder(path, arm=arm, seed=seed, steps=4)
  if arm == "normative":
    b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
    b.conflict(1, ABIGAIL, CARLOS, "No smoking indoors.",
               "Carlos lights a cigarette.", talk=True)
  b.action(1, CARLOS, ["smoking_indoors"], "Carlos lights a cigarette.")
  b.record("action", 2 + seed % 2, actor=CARLOS, action="Carlos goes out.",
           behaviours=["smoking_outside"],
           occasion_check={"behaviour": "smoking_outside", "accepted": True})
  return b.write()


def test_a_run_directory_as_runs_events_and_long_metrics(tmp_path):
  path = small_run(tmp_path / "run")
  data = crsec_concordia.load_run(path)
  assert isinstance(data, crsec_concordia.RunData)
  with pytest.raises(dataclasses.FrozenInstanceError):
    data.runs = None  # type: ignore[misc]

  [row] = data.runs.to_dict(orient="records")
  assert list(data.runs.columns) == analysis.RUNS
  assert {k: row[k] for k in ("run", "scenario", "condition", "arm", "seed",
                              "status", "completed_steps", "agents",
                              "has_norms")} == {
      "run": "normative seed 1", "scenario": "hobbs_cafe_test",
      "condition": "", "arm": "normative", "seed": 1, "status": "completed",
      "completed_steps": 4, "agents": 4, "has_norms": True}

  assert set(data.events) == {"action", "conflict", "created",
                              "talk_decision"}
  actions = data.events["action"]
  assert list(actions.columns[:len(analysis.IDENTITY)]) == analysis.IDENTITY
  assert len(actions) == 2 and set(actions["run"]) == {"normative seed 1"}
  assert actions["behaviours"].tolist() == [["smoking_indoors"],
                                            ["smoking_outside"]]
  # Nested fields are flattened into dotted columns.
  assert actions["occasion_check.accepted"].tolist()[1] is True

  expected = tables.long_form(run_metrics.compute(reading.read_run(path)))
  assert list(data.metrics.columns) == analysis.METRIC_COLUMNS
  assert (data.metrics[["step", "metric", "target"]].values.tolist()
          == expected[["step", "metric", "target"]].values.tolist())
  np.testing.assert_array_equal(data.metrics["value"].to_numpy(float),
                                expected["value"].to_numpy(float))
  assert set(data.metrics["run"]) == {"normative seed 1"}

  files_only = crsec_concordia.load_run(path, metrics=False)
  assert files_only.metrics.empty
  assert list(files_only.metrics.columns) == analysis.METRIC_COLUMNS
  assert len(files_only.events["action"]) == 2


def test_a_compare_directory_stacks_its_runs(tmp_path):
  root = tmp_path / "cmp"
  arms: dict[str, list[str]] = {"normative": [], "baseline": []}
  for arm in arms:
    for seed in (1, 2):
      small_run(root / arm / f"seed_{seed}", arm=arm, seed=seed)
      arms[arm].append(f"{arm}/seed_{seed}")
  (root / "compare.json").write_text(json.dumps(
      {"scenario": "hobbs_cafe_test", "seeds": [1, 2], "arms": arms}))
  data = crsec_concordia.load_run(root)
  names = ["normative seed 1", "normative seed 2", "baseline seed 1",
           "baseline seed 2"]
  assert data.runs["run"].tolist() == names
  assert data.runs["has_norms"].tolist() == [True, True, False, False]
  assert data.events["action"].groupby("run").size().to_dict() == {
      n: 2 for n in names}
  assert set(data.events["conflict"]["arm"]) == {"normative"}
  per_run = data.metrics.groupby("run").size()
  assert set(per_run.index) == set(names)
  assert per_run.nunique() == 1  # the same metrics of every run, stacked
  belief = data.metrics[(data.metrics.metric == "belief")
                        & (data.metrics.target == "no_smoking_indoors")
                        & (data.metrics.step == 4)]
  assert belief.groupby("arm")["value"].apply(
      lambda v: v.isna().all()).to_dict() == {"baseline": True,
                                              "normative": False}


def test_a_sweep_directory_names_its_runs_by_id(known_sweep):  # noqa: F811  pylint: disable=redefined-outer-name
  manifest = json.loads((known_sweep / "sweep.json").read_text())
  listed = {r["id"]: r for r in manifest["runs"]
            if reading.is_run_dir(known_sweep / r["run_dir"])}
  data = crsec_concordia.load_run(known_sweep)
  assert sorted(data.runs["run"]) == sorted(listed)
  for row in data.runs.to_dict(orient="records"):
    entry = listed[row["run"]]
    assert (row["condition"], row["endpoint"], row["arm"], row["seed"]) == (
        entry["condition"], entry["endpoint"], entry["arm"], entry["seed"])
  assert set(data.events["action"]["run"]) <= set(listed)
  assert set(data.metrics["condition"]) == {"full", "no_talk"}
  assert set(data.metrics["run"]) == set(listed)


def test_a_directory_that_is_none_of_the_three_says_so_in_one_line(tmp_path):
  for path in (tmp_path, tmp_path / "missing"):
    with pytest.raises(UserError) as e:
      crsec_concordia.load_run(path)
    message = str(e.value)
    assert "\n" not in message
    assert "is not a run, compare or sweep directory" in message
    assert "`crsec run`, `crsec compare` or `crsec sweep`" in message


def test_importing_the_package_loads_no_optional_extra():
  """`import crsec_concordia` (which exports load_run) needs no extra."""
  heavy = ("torch", "ray", "sentence_transformers", "transformers",
           "xllamacpp")
  done = subprocess.run(
      [sys.executable, "-c", "import sys, crsec_concordia; print(sorted("
       f"m for m in {heavy!r} if m in sys.modules))"],
      capture_output=True, text=True, check=True)
  assert done.stdout.strip() == "[]"

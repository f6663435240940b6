"""Sweep files, the grid, the scheduler, a worker's choices, aggregation.

Everything here is fast and needs no Ray: the sweep file's validation (one
line per problem, exit code 2, nothing created), stable run ids, condition
overrides reaching the prefab parameters, the per-endpoint limit, what a
worker does with what it finds in a run directory, and the aggregation of
a sweep with known numbers (hand-built runs, tests/metrics_fixtures.py),
with its report.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from crsec_concordia import cli
from crsec_concordia.models import EndpointConfig
from crsec_concordia.rundir import writing
from crsec_concordia.sweeps import aggregate, driver, execute, grid, runjob
from crsec_concordia.sweeps import spec as spec_lib
from crsec_concordia.sweeps import validate

sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import ABIGAIL, AGENTS, CARLOS, SAM, RunBuilder  # pylint: disable=wrong-import-position

GOOD = """\
name: mini
scenarios: [hobbs_cafe_mini]
seeds: 1-2
arms: [normative, baseline]
steps: 2
conditions:
  full: {}
  no_talk: {crsec: {modules: {communication: false}}}
  short: {scenario: {conversation: {max_rounds: 1}, agents: {Tom Gomez: {goal: tip well}}}}
endpoints:
  a: {base_url: "http://127.0.0.1:9/v1", model: m}
  b: {base_url: "http://127.0.0.1:9/v1", model: m, max_concurrent_runs: 1}
exclude:
  - {condition: no_talk, arm: baseline}
  - {endpoint: b, condition: short}
"""


def parse(text: str):
  return validate.parse_sweep(text, "sweep.yaml", Path("."))


def test_grid_ids_dirs_and_exclusions():
  spec, scenarios = parse(GOOD)
  runs = grid.expand_grid(spec, [s.name for s in scenarios])
  ids = [r.id for r in runs]
  # 3 conditions x 2 endpoints x 2 seeds x 2 arms, less 4 + 4 excluded.
  assert len(runs) == 24 - 4 - 4 == len(set(ids))
  assert ids[0] == "hobbs_cafe_mini__full__a__normative__seed1"
  assert "hobbs_cafe_mini__no_talk__a__baseline__seed1" not in ids
  assert not any("__short__b__" in i for i in ids)
  assert all(r.run_dir == f"runs/{r.id}" for r in runs)
  # Stable: the same file gives the same grid; a seed more adds runs only.
  more, _ = parse(GOOD.replace("seeds: 1-2", "seeds: 1-3"))
  assert set(ids) < {r.id for r in grid.expand_grid(more, ["hobbs_cafe_mini"])}


def test_conditions_reach_the_prefab_params():
  spec, (scenario,) = parse(GOOD)
  full = spec_lib.apply(scenario, spec.conditions["full"])
  assert full is scenario  # Unchanged: its source path stays in run.json.
  no_talk = spec_lib.apply(scenario, spec.conditions["no_talk"])
  params = no_talk.entity_params("Tom Gomez")
  assert params["modules"]["communication"] is False
  assert params["modules"]["observation"] is True
  assert params["initial_norm_count"] == scenario.crsec.initial_norm_count
  short = spec_lib.apply(scenario, spec.conditions["short"])
  assert short.conversation.max_rounds == 1
  assert short.agent("Tom Gomez").goal == "tip well"
  assert short.agent("Carlos Gomez") == scenario.agent("Carlos Gomez")
  assert short.source_path == scenario.source_path


def test_endpoints_from_the_file_or_the_flags(monkeypatch):
  spec, _ = parse(GOOD)
  configs = grid.endpoint_configs(spec, lambda: pytest.fail("not asked"))
  assert configs["a"].base_url == "http://127.0.0.1:9/v1"
  bare, _ = parse("scenarios: [hobbs_cafe_mini]\nseeds: 1\n")
  configs = grid.endpoint_configs(bare, lambda: EndpointConfig(
      base_url="http://x/v1", model="y"))
  assert list(configs) == ["default"] and configs["default"].model == "y"
  monkeypatch.setenv("SWEEP_TEST_KEY", "sk-1")
  keyed, _ = parse(GOOD.replace("model: m}", "model: m, api_key_env: "
                                "SWEEP_TEST_KEY}", 1))
  assert grid.endpoint_configs(keyed, lambda: None)["a"].api_key == "sk-1"
  data = grid.manifest("mini", None, keyed, {}, grid.endpoint_configs(
      keyed, lambda: None), [])
  assert "sk-1" not in json.dumps(data)  # Keys never reach sweep.json.


BAD = """\
scenarios: [hobbs_cafe_mini, nowhere.yaml]
seeds: 2-1
arms: [normative, control]
steps: 40
conditions:
  no_talk:
    crsec: {modules: {comunication: false}, synthesis_threshold: 0}
  long: {scenario: {conversation: {max_rounds: 99}}}
reference: ful
endpoints:
  v: {base_url: "http://x:8000/v1"}
exclude:
  - {condition: no_tak}
resources: {num_cpus: 0}
retries: 9
"""

EXPECTED = [
    ("1", "scenarios[1]", "no such file"),
    ("2", "seeds", "runs backwards"),
    ("3", "arms[1]", "not a valid arm; use one of: normative, baseline"),
    ("4", "steps", "more than the 5 steps the clock covers"),
    ("7", "conditions.no_talk.crsec.synthesis_threshold",
     "use a whole number from 1 to 100000"),
    ("7", "conditions.no_talk.crsec.modules.comunication",
     "did you mean communication?"),
    ("8", "conditions.long.scenario.conversation.max_rounds",
     "use a whole number from 1 to 20"),
    ("9", "reference", "not a condition; use one of: no_talk, long"),
    ("11", "endpoints.v.base_url", "no model"),
    ("13", "exclude[0].condition", "did you mean no_talk?"),
    ("14", "resources.num_cpus", "not a positive number"),
    ("15", "retries", "use a whole number from 0 to 5"),
]


def test_a_malformed_sweep_is_one_line_per_problem(tmp_path, capsys):
  path = tmp_path / "bad.yaml"
  path.write_text(BAD)
  out = tmp_path / "out"
  code = cli.main(["sweep", str(path), "--out", str(out)])
  assert code == 2
  err = capsys.readouterr().err
  lines = err.strip().splitlines()
  assert lines[0].startswith("crsec: ")
  lines[0] = lines[0][len("crsec: "):]
  assert len(lines) == len(EXPECTED), err
  for line, (number, field, text) in zip(lines, EXPECTED):
    assert line.startswith(f"{path}:{number}: {field}: "), (line, field)
    assert text in line and "; " in line, line
  assert "Traceback" not in err
  assert not out.exists()  # Nothing created.


@pytest.mark.parametrize("text,expected", [
    ("", "bad.yaml:1: (top level): the file is empty"),
    ("- a\n", "bad.yaml:1: (top level): the file is not a mapping"),
    ("scenarios: [a\nseeds: 1\n", "bad.yaml:2: YAML syntax:"),
    ("seeds: 1\n", "bad.yaml:1: scenarios: required key is missing; add "
     "`scenarios: [hobbs_cafe_mini]`"),
    ("scenarios: [hobbs_cafe_mini]\nseeds: 1\nseeds: 2\n",
     "bad.yaml:3: seeds: key 'seeds' appears twice"),
    ("scenarios: [hobbs_cafe_mini]\nseeds: 1\nconditions: {Full: {}}\n",
     "bad.yaml:3: conditions.Full: \"Full\" is not a valid name"),
    ("scenarios: [hobbs_cafe_mini]\nseeds: 1\nendpoints: {e: {schema_mode: "
     "xml}}\n", "bad.yaml:3: endpoints.e.schema_mode: \"xml\" is not a valid "
     "schema_mode; use one of: json_schema, json_object, grammar"),
    ("scenarios: [hobbs_cafe_mini]\nseeds: 1\nendpoints: {e: {api_key_env: "
     "NO_SUCH_VARIABLE_SWEEP}}\n", "bad.yaml:3: endpoints.e: model or "
     "api_key_env without a base_url"),
    ("scenarios: [hobbs_cafe_mini]\nseeds: 1\nexclude: [{arm: baseline}]\n"
     "arms: [baseline]\n", "bad.yaml:1: (top level): every run is excluded"),
])
def test_malformed_sweeps(tmp_path, capsys, text, expected):
  path = tmp_path / "bad.yaml"
  path.write_text(text)
  assert cli.main(["sweep", str(path), "--out", str(tmp_path / "o")]) == 2
  err = capsys.readouterr().err.strip()
  assert err.startswith(f"crsec: {tmp_path}/{expected}"), err
  assert "Traceback" not in err and not (tmp_path / "o").exists()


# -- the scheduler and a worker's choices ---------------------------------------


class SlowBackend(execute.ThreadBackend):
  """Threads whose jobs only count how many run at once per endpoint."""

  def __init__(self, jobs: int):
    super().__init__(jobs)
    self.lock = threading.Lock()
    self.now: dict[str, int] = {}
    self.peak: dict[str, int] = {}

  def submit(self, job):
    def work():
      with self.lock:
        self.now[job.endpoint_name] = self.now.get(job.endpoint_name, 0) + 1
        self.peak[job.endpoint_name] = max(self.peak.get(job.endpoint_name, 0),
                                           self.now[job.endpoint_name])
      time.sleep(0.05)
      with self.lock:
        self.now[job.endpoint_name] -= 1
      return runjob.Outcome(job.id, "completed", "ran")
    return self._pool.submit(work)


def _job(i: int, endpoint: str, tmp_path: Path) -> runjob.RunJob:
  return runjob.RunJob(id=f"r{i}", run_dir=tmp_path / f"r{i}", scenario=None,
                       arm="normative", seed=i, steps=2,
                       endpoint=EndpointConfig(), endpoint_name=endpoint)


def test_a_shared_endpoint_is_not_flooded(tmp_path):
  backend = SlowBackend(4)
  jobs = [_job(i, "shared" if i % 2 else "own", tmp_path) for i in range(12)]
  try:
    outcomes = execute.schedule_jobs(jobs, backend, limits={"shared": 1},
                                     poll=0.01)
  finally:
    backend.close()
  assert len(outcomes) == 12
  assert backend.peak["shared"] == 1 and backend.peak["own"] >= 2


def test_what_a_worker_finds(tmp_path):
  run_dir = tmp_path / "r"
  assert runjob.state(run_dir, "normative", 1, 2) == ""
  run_dir.mkdir()
  (run_dir / "scenario.json").write_text("{}")
  assert runjob.state(run_dir, "normative", 1, 2) == "setup"
  info = {"arm": "normative", "seed": 1, "max_steps": 2, "status": "running",
          "completed_steps": 0}
  (run_dir / "run.json").write_text(json.dumps(info))
  assert runjob.state(run_dir, "normative", 1, 2) == "interrupted"
  assert runjob.state(run_dir, "normative", 1, 3) == "other"
  assert runjob.state(run_dir, "baseline", 1, 2) == "other"
  (run_dir / "run.json").write_text(json.dumps({**info,
                                                "status": "completed"}))
  assert runjob.state(run_dir, "normative", 1, None) == "completed"


# -- aggregation with known numbers ------------------------------------------


def _known_run(run_dir: Path, arm: str, seed: int, condition: str) -> None:
  """normative full: 2*seed conflicts, everyone complies; no_talk: none,
  Carlos and Sam comply. Baseline: Carlos complies, no conflicts."""
  b = RunBuilder(run_dir, arm=arm, seed=seed, steps=3)
  compliant: tuple[str, ...] = (CARLOS,)
  if arm == "normative":
    b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
    if condition == "full":
      for _ in range(2 * seed):
        b.conflict(1, ABIGAIL, CARLOS, "No smoking indoors.",
                   "Carlos lights a cigarette.")
    compliant = AGENTS if condition == "full" else (CARLOS, SAM)
  for agent in compliant:
    b.action(2, agent, ["smoking_outside"])
  b.write()


@pytest.fixture
def known_sweep(tmp_path, embedder):
  del embedder  # Loaded once per session.
  text = GOOD.replace("  short: {scenario: {conversation: {max_rounds: 1}, "
                      "agents: {Tom Gomez: {goal: tip well}}}}\n", "")
  text = text.split("endpoints:")[0] + (
      'endpoints: {a: {base_url: "http://127.0.0.1:9/v1", model: m}}\n'
      "exclude: [{condition: no_talk, arm: baseline}]\n")
  spec, scenarios = parse(text)
  runs = grid.expand_grid(spec, ["hobbs_cafe_test"])
  data = grid.manifest("known", None, spec, {}, grid.endpoint_configs(
      spec, lambda: None), runs)
  for entry in data["runs"]:
    _known_run(tmp_path / entry["run_dir"], entry["arm"], entry["seed"],
               entry["condition"])
    entry["status"] = "completed"
  failed = {**data["runs"][0], "id": "x__full__a__normative__seed9",
            "seed": 9, "run_dir": "runs/x", "status": "failed",
            "error": "cannot reach http://127.0.0.1:9/v1"}
  data["runs"].append(failed)
  writing.write_json(tmp_path / grid.SWEEP_JSON, data)
  del scenarios
  return tmp_path


def test_ablation_effects_with_known_numbers(known_sweep):
  m = aggregate.aggregate_sweep(known_sweep)
  aggregate.write(m)
  s = m.summary.set_index(["condition", "arm", "metric"])
  assert s.loc[("full", "normative", "conflicts_total"), "mean"] == 3.0
  assert s.loc[("full", "normative", "conflicts_total"), "n"] == 2
  assert s.loc[("no_talk", "normative", "conflicts_total"), "mean"] == 0.0
  assert ("no_talk", "baseline", "conflicts_total") not in s.index
  e = m.effects.set_index(["condition", "comparison", "arm", "metric"])
  behaviour = "behaviour_final.no_smoking_indoors"
  row = e.loc[("no_talk", "no_talk - full", "normative", "conflicts_total")]
  assert row["mean"] == -3.0 and row["n"] == 2 and row["seeds"] == [1, 2]
  assert e.loc[("no_talk", "no_talk - full", "normative", behaviour),
               "mean"] == pytest.approx(-0.5)
  assert e.loc[("full", "normative - baseline", "", behaviour),
               "mean"] == pytest.approx(0.75)
  cells = {c["condition"]: c for c in aggregate.cell_counts(m)}
  assert cells["full"]["runs"] == {"normative": 2, "baseline": 2}
  assert cells["no_talk"]["runs"] == {"normative": 2}
  assert cells["full"]["failed"] == 1
  for name in aggregate.TABLES:
    csv = pd.read_csv(known_sweep / f"{name}.csv")
    parquet = pd.read_parquet(known_sweep / f"{name}.parquet")
    assert len(csv) == len(parquet) > 0
  summary = json.loads(
      (known_sweep / aggregate.SWEEP_SUMMARY_JSON).read_text())
  assert summary["reference"] == "full"
  assert summary["failed"][0]["error"].startswith("cannot reach")


def test_report_of_a_sweep(known_sweep, capsys):
  assert cli.main(["report", str(known_sweep)]) == 0
  assert "figures; tables in" in capsys.readouterr().out
  figures = sorted(p.name for p in (known_sweep / "report" /
                                    "figures").iterdir())
  assert "metric_conflicts_total.png" in figures
  assert "ablation_behaviour_final__no_smoking_indoors.png" in figures
  page = (known_sweep / "report" / "index.html").read_text()
  assert "no_talk - full" in page and "x__full__a__normative__seed9" in page


def test_a_run_of_another_set_up_is_not_reused(tmp_path):
  """A condition edited after its runs completed: those runs are not
  mixed into the cell, they are reported."""
  spec, (scenario,) = parse(GOOD)
  runs = [r for r in grid.expand_grid(spec, [scenario.name])
          if r.condition == "no_talk" and r.endpoint == "a"][:1]
  built = spec_lib.apply(scenario, spec.conditions["no_talk"])
  run_dir = tmp_path / runs[0].run_dir
  run_dir.mkdir(parents=True)
  info = {"arm": runs[0].arm, "seed": runs[0].seed, "max_steps": 2,
          "status": "completed"}
  (run_dir / "run.json").write_text(json.dumps(info))
  endpoints = {"a": EndpointConfig()}
  (run_dir / "scenario.json").write_text(json.dumps(
      built.with_max_steps(2).to_dict()))
  jobs, done, other = driver.prepare(tmp_path, runs, lambda r: built,
                                     endpoints)
  assert (jobs, done, other) == ([], [runs[0].id], {})
  # The same run under the edited condition (synthesis threshold changed).
  edited = built.model_copy(update={"crsec": built.crsec.model_copy(
      update={"synthesis_threshold": 100})})
  jobs, done, other = driver.prepare(tmp_path, runs, lambda r: edited,
                                     endpoints)
  assert not jobs and not done
  assert "another set-up" in other[runs[0].id]


def test_publish_of_a_sweep_beside_a_run(known_sweep, tmp_path, capsys):
  """scripts/paper.sh publishes the café's runs and a sweep in one call:
  each of the sweep's conditions is a group of its own, its failed run is
  left out, and a run given twice (in the sweep and on its own) counts once."""
  data = json.loads((known_sweep / grid.SWEEP_JSON).read_text())
  one = next(r for r in data["runs"] if r["status"] == "completed")
  out = tmp_path / "results"
  assert cli.main(["report", "--publish", str(out), str(known_sweep),
                   str(known_sweep / one["run_dir"])]) == 0
  assert "published" in capsys.readouterr().out
  results = json.loads((out / "results.json").read_text())
  completed = [r for r in data["runs"] if r["status"] == "completed"]
  assert len(results["runs"]) == len(completed)
  assert {(r["arm"], r["seed"]) for r in results["runs"]} == {
      (r["arm"], r["seed"]) for r in completed}
  conditions = {r["condition"] for r in completed}
  assert len(results["groups"]) == len(conditions)
  readme = (out / "README.md").read_text()
  for condition in conditions:
    assert condition in readme
  assert "x__full__a__normative__seed9" not in readme

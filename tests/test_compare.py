"""`crsec compare`: seeds, parallel arms, aggregation with CIs and effects.

No model runs here: the runner's `run_episode` and `resume_episode` are
replaced by fakes that write hand-built run directories with known numbers,
and the scenario loader by one that returns a stand-in.
"""

from __future__ import annotations

import json
import sys
import threading
import types
from pathlib import Path

import pytest
from scipy import stats

from crsec_concordia import cli, runner
from crsec_concordia.commands import compare
from crsec_concordia.commands.compare import parse_seeds
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.errors import UserError
from crsec_concordia.metrics.measure import aggregate
from crsec_concordia.models.base import EndpointError

sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import ABIGAIL, AGENTS, CARLOS, SAM, RunBuilder  # pylint: disable=wrong-import-position

SMOKE = "no_smoking_indoors"
ARMS = ("normative", "baseline")


@pytest.fixture(scope="module", autouse=True)
def embedder():
  return shared_embedder()


def write_known_run(out_dir: Path, arm: str, seed: int, steps: int) -> Path:
  """normative: 2*seed conflicts; compliance 1.0 (seed 1) or 0.5 (seed 2).
  baseline: no conflicts; compliance 0.25."""
  b = RunBuilder(out_dir, arm=arm, seed=seed, steps=steps)
  if arm == "normative":
    b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
    for _ in range(2 * seed):
      b.conflict(1, ABIGAIL, CARLOS, "No smoking indoors.",
                 "Carlos lights a cigarette.")
    compliant = AGENTS if seed == 1 else (CARLOS, SAM)
  else:
    compliant = (CARLOS,)
  for agent in compliant:
    b.action(2, agent, ["smoking_outside"])
  return b.write()


@pytest.fixture
def fake(monkeypatch):
  """Fake runner and scenario loader; returns the list of calls."""
  for name in ("CRSEC_BASE_URL", "OPENAI_BASE_URL", "CRSEC_MODEL",
               "OPENAI_MODEL", "CRSEC_SCHEMA_MODE"):
    monkeypatch.delenv(name, raising=False)
  calls: list[dict] = []
  lock = threading.Lock()
  failing: dict[tuple[str, int], Exception] = {}

  def run_episode(scenario, *, arm, seed, out_dir, endpoint, steps,
                  progress, **_):  # The referee's policy, budgets, ...
    with lock:
      calls.append({"scenario": scenario, "arm": arm, "seed": seed,
                    "out_dir": Path(out_dir), "steps": steps,
                    "progress": progress, "endpoint": endpoint,
                    "thread": threading.current_thread().name})
    if (arm, seed) in failing:
      raise failing[(arm, seed)]
    return write_known_run(Path(out_dir), arm, seed, steps or 3)

  def resume_episode(run_dir, *, endpoint, progress):
    with lock:
      calls.append({"resume": Path(run_dir), "progress": progress,
                    "endpoint": endpoint})
    info = json.loads((Path(run_dir) / "run.json").read_text())
    return write_known_run(Path(run_dir), info["arm"], info["seed"],
                           info["max_steps"])

  monkeypatch.setattr(runner, "run_episode", run_episode)
  monkeypatch.setattr(runner, "resume_episode", resume_episode)
  monkeypatch.setattr(compare, "load_scenario",
                      lambda name: types.SimpleNamespace(
                          name="hobbs_cafe_test", source=name, models=None))
  return types.SimpleNamespace(calls=calls, failing=failing)


@pytest.mark.parametrize("text,seeds", [
    ("1-5", [1, 2, 3, 4, 5]), ("1,3,7", [1, 3, 7]), ("4", [4]),
    (" 2 - 3 ", [2, 3]), ("1-2,9", [1, 2, 9])])
def test_parse_seeds(text, seeds):
  assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "a", "1-", "5-1", "1,,2", "1.5", "-3",
                                  "1,1"])
def test_parse_seeds_rejects_bad_forms(text):
  with pytest.raises(UserError) as e:
    parse_seeds(text)
  assert "\n" not in str(e.value) and "--seeds" in str(e.value)


def test_compare_runs_both_arms_and_aggregates(fake, tmp_path, capsys):
  out = tmp_path / "cmp"
  code = cli.main(["compare", "hobbs_cafe_test", "--seeds", "1-2",
                   "--steps", "3", "--out", str(out), "--jobs", "2"])
  assert code == 0, capsys.readouterr().err
  assert sorted((c["arm"], c["seed"]) for c in fake.calls) == [
      ("baseline", 1), ("baseline", 2), ("normative", 1), ("normative", 2)]
  for c in fake.calls:
    assert c["out_dir"] == out / c["arm"] / f"seed_{c['seed']}"
    assert c["steps"] == 3 and c["progress"] is False
    assert c["scenario"].source == "hobbs_cafe_test"
    assert c["endpoint"].embedded
  manifest = json.loads((out / "compare.json").read_text())
  assert manifest["scenario"] == "hobbs_cafe_test"
  assert manifest["seeds"] == [1, 2]
  assert manifest["status"] == "completed"
  assert manifest["arms"] == {"normative": ["normative/seed_1",
                                            "normative/seed_2"],
                              "baseline": ["baseline/seed_1",
                                           "baseline/seed_2"]}
  for name in ("compare_summary.json", "compare_summary.csv",
               "compare_per_step.csv"):
    assert (out / name).is_file()
  summary = json.loads((out / "compare_summary.json").read_text())
  half = stats.t.ppf(0.975, 1)  # n = 2 seeds: 12.706
  conflicts = summary["arms"]["normative"]["metrics"]["conflicts_total"]
  assert conflicts["mean"] == pytest.approx(3.0)
  # The t-interval, cut where a count cannot go (below 0 conflicts).
  assert conflicts["ci_low"] == max(0.0, 3.0 - half * 1.0) == 0.0
  assert conflicts["ci_high"] == pytest.approx(3.0 + half * 1.0)
  assert summary["arms"]["baseline"]["metrics"]["conflicts_total"][
      "mean"] == 0.0
  effect = summary["effects"][f"behaviour_final.{SMOKE}"]
  assert effect["values"] == pytest.approx([0.75, 0.25])
  assert effect["mean"] == pytest.approx(0.5)
  # A difference of shares lies in -1..1 (0.5 -+ 3.2 raw).
  assert effect["ci_low"] == max(-1.0, 0.5 - half * 0.25) == -1.0
  assert effect["ci_high"] == min(1.0, 0.5 + half * 0.25) == 1.0
  assert summary["effects"]["conflicts_total"]["mean"] == pytest.approx(3.0)
  # Baseline belief is not measured: no effect is claimed for it.
  assert summary["arms"]["baseline"]["metrics"][f"belief_final.{SMOKE}"][
      "n"] == 0
  assert f"belief_final.{SMOKE}" not in summary["effects"]
  assert (out / "normative" / "seed_1" / "metrics" / "summary.json").is_file()
  printed = capsys.readouterr().out
  assert "effect normative - baseline conflicts_total: 3.00" in printed


def test_completed_runs_are_reused(fake, tmp_path):
  out = tmp_path / "cmp"
  argv = ["compare", "x", "--seeds", "1", "--out", str(out), "--steps", "3"]
  assert cli.main(argv) == 0
  assert len(fake.calls) == 2
  assert cli.main(argv) == 0
  assert len(fake.calls) == 2, "completed runs were run again"
  # A different number of steps is a different run.
  assert cli.main(argv[:-1] + ["4"]) == 0
  assert len(fake.calls) == 4


def test_interrupted_runs_are_resumed(fake, tmp_path):
  out = tmp_path / "cmp"
  argv = ["compare", "x", "--seeds", "1", "--out", str(out), "--steps", "3"]
  assert cli.main(argv) == 0
  run_dir = out / "baseline" / "seed_1"
  info = json.loads((run_dir / "run.json").read_text())
  (run_dir / "run.json").write_text(json.dumps({**info,
                                                "status": "interrupted"}))
  # The checkpoint of its last completed slot, which a resume starts from.
  checkpoint = runner.checkpoint_path(run_dir, info["completed_steps"])
  checkpoint.parent.mkdir(parents=True, exist_ok=True)
  checkpoint.write_text("{}")
  assert cli.main(argv) == 0
  assert fake.calls[-1]["resume"] == out / "baseline" / "seed_1"
  assert len(fake.calls) == 3


def test_a_failed_run_leaves_a_partial_compare(fake, tmp_path, capsys):
  fake.failing[("baseline", 2)] = RuntimeError("model crashed\nmore")
  out = tmp_path / "cmp"
  code = cli.main(["compare", "x", "--seeds", "1,2", "--out", str(out),
                   "--jobs", "1"])
  assert code == 1
  assert "baseline seed 2: FAILED: model crashed" in capsys.readouterr().err
  manifest = json.loads((out / "compare.json").read_text())
  assert manifest["status"] == "partial"
  assert manifest["failed"] == [{"arm": "baseline", "seed": 2,
                                 "error": "model crashed"}]
  assert manifest["arms"]["baseline"] == ["baseline/seed_1"]
  summary = json.loads((out / "compare_summary.json").read_text())
  effect = summary["effects"][f"behaviour_final.{SMOKE}"]
  assert effect["n"] == 1 and effect["ci_low"] is None
  assert all(c["progress"] for c in fake.calls)  # --jobs 1 shows progress


def test_every_run_failing_on_the_endpoint_is_one_line(fake, tmp_path,
                                                       capsys):
  for arm in ("normative", "baseline"):
    fake.failing[(arm, 1)] = EndpointError("http://x unreachable; start it")
  code = cli.main(["compare", "x", "--seeds", "1", "--out",
                   str(tmp_path / "c")])
  assert code == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err[-1] == "crsec: http://x unreachable; start it"


def test_bad_seeds_on_the_command_line(fake, tmp_path, capsys):
  code = cli.main(["compare", "x", "--seeds", "3-1", "--out",
                   str(tmp_path / "c")])
  assert code == 2
  err = capsys.readouterr().err.strip()
  assert err.startswith("crsec: --seeds '3-1'") and "\n" not in err
  assert not fake.calls


@pytest.mark.parametrize("command", ["compare", "report"])
def test_help_prints(command, capsys):
  with pytest.raises(SystemExit) as e:
    cli.main([command, "--help"])
  assert e.value.code == 0
  assert "--base-url" in capsys.readouterr().out


def test_mean_ci_small_samples():
  assert aggregate.mean_ci([]) == {"mean": None, "ci_low": None,
                                   "ci_high": None, "sd": None, "n": 0}
  one = aggregate.mean_ci([0.4, None, float("nan")])
  assert one["mean"] == 0.4 and one["n"] == 1 and one["ci_low"] is None
  three = aggregate.mean_ci([1.0, 2.0, 3.0])
  half = stats.t.ppf(0.975, 2) * 1.0 / 3 ** 0.5
  assert three["ci_low"] == pytest.approx(2.0 - half)


@pytest.mark.parametrize("metric, difference, bounds", [
    ("conflicts_total", False, (0.0, None)),
    ("conflicts_total", True, (None, None)),
    ("belief_final.no_smoking_indoors", False, (0.0, 1.0)),
    ("behaviour_nonviolating.quiet_in_public", False, (0.0, 1.0)),
    ("plan_observed_final.tip_after_meals", True, (-1.0, 1.0)),
    ("gap_final.no_smoking_indoors", False, (-1.0, 1.0)),
    ("minutes_to_50_belief.no_smoking_indoors", False, (0.0, None)),
])
def test_a_metrics_interval_is_cut_to_the_values_it_can_take(
    metric, difference, bounds):
  assert aggregate.metric_range(metric, difference) == bounds
  # Two seeds, 0 and 5 conflicts (or shares 0 and 1): the t-interval
  # (t = 12.7) runs far past both ends; the cut one does not.
  values = [0.0, 1.0] if bounds[1] == 1.0 else [0.0, 5.0]
  raw = aggregate.mean_ci(values)
  cut = aggregate.mean_ci(values, bounds=bounds)
  assert cut["mean"] == raw["mean"]
  assert cut["ci_low"] == (raw["ci_low"] if bounds[0] is None
                           else max(raw["ci_low"], bounds[0]))
  assert cut["ci_high"] == (raw["ci_high"] if bounds[1] is None
                            else min(raw["ci_high"], bounds[1]))
  if bounds[0] is not None:
    assert raw["ci_low"] < bounds[0] == cut["ci_low"]

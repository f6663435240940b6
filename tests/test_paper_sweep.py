"""examples/sweeps/paper.yaml: the paper's experiment validates and expands."""

import json
from pathlib import Path

from crsec_concordia.sweeps import grid, validate

ROOT = Path(__file__).resolve().parent.parent
PAPER = ROOT / "examples/sweeps/paper.yaml"
RESULTS = ROOT / "docs/results/results.json"


def test_paper_sweep_is_the_papers_experiment():
  spec, scenarios = validate.load_sweep(PAPER)
  assert [s.name for s in scenarios] == ["hobbs_cafe"]
  cafe = scenarios[0]
  assert len(cafe.agents) == 10
  assert sum(a.role == "entrepreneur" for a in cafe.agents) == 3
  assert cafe.clock.days == 2
  runs = grid.expand_grid(spec, [s.name for s in scenarios])
  assert len(runs) == 10
  assert sorted({(r.arm, r.seed) for r in runs}) == sorted(
      (arm, seed) for arm in ("normative", "baseline") for seed in range(1, 6))
  # The endpoint is an OpenAI-compatible server, not the embedded model.
  assert all(e.base_url for e in spec.endpoints.values())
  text = PAPER.read_text(encoding="utf-8")
  # The cost per run, estimated from the 84-slot runs' measured figures.
  # They are the published café runs' (docs/results/results.json), so
  # the estimate follows a new publication or this test says so.
  published = json.loads(RESULTS.read_text(encoding="utf-8"))["runs"]
  cafe = {r["arm"]: r for r in published if r["scenario"] == "hobbs_cafe"}
  for arm in ("baseline", "normative"):
    run = cafe[arm]
    assert f"{run['calls']:,} calls" in text, arm
    assert f"{run['calls_per_agent_hour']:.1f} calls" in text, arm
    assert f"{round(run['tokens_per_agent_hour']):,} tokens" in text, arm
  sweep = 5 * (cafe["baseline"]["calls"] + cafe["normative"]["calls"])
  assert f"about {round(sweep, -2):,} calls" in text


def test_every_example_sweep_validates(monkeypatch):
  """A sweep file in examples/ that no longer loads is found here, not by
  the user who copies it."""
  monkeypatch.setenv("VLLM_API_KEY", "a key the cluster example names")
  for path in sorted(PAPER.parent.glob("*.yaml")):
    spec, scenarios = validate.load_sweep(path)
    assert grid.expand_grid(spec, [s.name for s in scenarios]), path.name


def test_the_mini_seeds_sweep_is_five_seeds_per_arm_on_the_embedded_model():
  spec, scenarios = validate.load_sweep(PAPER.parent / "mini_seeds.yaml")
  runs = grid.expand_grid(spec, [s.name for s in scenarios])
  assert sorted({(r.arm, r.seed) for r in runs}) == sorted(
      (arm, seed) for arm in ("normative", "baseline") for seed in range(1, 6))
  assert all(r.scenario == "hobbs_cafe_mini" for r in runs)
  assert not any(e.base_url for e in spec.endpoints.values())


def test_the_paper_script_names_files_that_exist():
  """scripts/paper.sh (make paper) parses and every file it names exists."""
  import re
  import subprocess
  root = PAPER.parent.parent.parent
  script = root / "scripts" / "paper.sh"
  subprocess.run(["bash", "-n", str(script)], check=True)
  named = re.findall(r"(?:examples|scenarios)/[\w/]+\.yaml", script.read_text())
  assert len(named) == 3
  for path in named:
    assert (root / path).is_file(), path

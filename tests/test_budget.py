"""Budgets: a run stops at a slot boundary at its cap, and resume ends it.

The tiny scripted café (tests/test_runner.py) makes 34 calls in its five
slots (13, 4, 15, 2, 0); capped at half of them it stops after the slot
that reached the cap, `stopped: budget`, and a resume with a higher cap
ends it with the records, norms and usage of the run that never stopped.
`--estimate` says what the paper's café costs before anything runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsec_concordia import cli, embedding, endings, runner
from crsec_concordia.runs import budget as budget_lib
from crsec_concordia.runs import episode
from crsec_concordia.runs import estimate as estimate_lib
from crsec_concordia.runs.budget import Budget, Caps
from crsec_concordia.scenarios import load_scenario
from tests import test_runner as tr


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, embedder) -> Path:
  return tr.run(tmp_path_factory.mktemp("plain"), embedder)


def calls_of(run_dir: Path) -> int:
  return json.loads((run_dir / "usage.json").read_text())["totals"]["calls"]


def steps_of(run_dir: Path) -> list[int]:
  return [r["step"] for r in tr.records(run_dir) if r["kind"] == "step"]


def test_a_run_stops_at_its_cap_and_resume_with_a_higher_one_ends_it(
    tmp_path, embedder, uninterrupted):
  half = calls_of(uninterrupted) // 2
  with pytest.raises(endings.BudgetReached, match="budget is"):
    tr.run(tmp_path, embedder, budget=Budget(run=Caps(max_calls=half)))
  d = tmp_path / "run"
  meta = tr.info(d)
  assert meta["status"] == "stopped: budget"
  assert meta["budget"] == {"max_calls": half}
  done = meta["completed_steps"]
  # At a slot boundary: the slot that reached the cap, committed whole.
  assert 0 < done < 5 and steps_of(d) == list(range(1, done + 1))
  per_slot = [r["calls"] for r in tr.records(uninterrupted)
              if r["kind"] == "step"]
  assert per_slot[done - 2] < half <= per_slot[done - 1] == calls_of(d)
  # Resumed with the same cap, it stops again before playing anything.
  with pytest.raises(endings.BudgetReached):
    runner.resume_episode(d, model=tr.cafe(), embedder=embedder,
                          progress=False)
  assert tr.info(d)["completed_steps"] == done
  runner.resume_episode(d, model=tr.cafe(), embedder=embedder, progress=False,
                        budget=Budget(run=Caps(max_calls=10 * half)))
  assert tr.info(d)["status"] == "completed"
  tr.same_run(d, uninterrupted)


def test_the_commands_stop_at_a_cap_and_resume_past_it(
    tmp_path, embedder, uninterrupted, monkeypatch, capsys):
  monkeypatch.setattr(episode, "make_model", lambda *a, **k: tr.cafe())
  monkeypatch.setattr(episode, "embedder_for",
                      lambda e: embedding.of(embedder))
  scenario_file = tmp_path / "tiny.yaml"
  scenario_file.write_text(tr.TINY)
  out = tmp_path / "out"
  half = str(calls_of(uninterrupted) // 2)
  # The policy the uninterrupted run's handed-over model gets.
  assert cli.main(["run", str(scenario_file), "--out", str(out),
                   "--no-progress", "--max-calls", half,
                   "--referee-policy", "all-on"]) == 3
  captured = capsys.readouterr()
  assert "stopped: budget:" in captured.err
  assert f"crsec resume {out} --max-calls N" in captured.err
  assert "Traceback" not in captured.err
  assert "stopped: budget: 2/5 steps" in captured.out
  assert cli.main(["resume", str(out), "--no-progress"]) == 3
  assert cli.main(["resume", str(out), "--no-progress", "--max-calls",
                   "1000"]) == 0
  assert tr.info(out)["status"] == "completed"
  tr.same_run(out, uninterrupted)


def test_a_total_budget_adds_the_other_runs(tmp_path):
  for name, calls in (("a", 10), ("b", 5)):
    (tmp_path / name).mkdir()
    (tmp_path / name / "run.json").write_text(json.dumps(
        {"usage_by_tag": {"act": {"calls": calls, "prompt_tokens": 100,
                                  "completion_tokens": 10}}}))
  runs = (tmp_path / "a", tmp_path / "b", tmp_path / "c")
  budget = Budget(total=Caps(max_calls=20), runs=runs)
  assert budget.exhausted() is None
  # Run c, in flight, has made 4 calls: 19 in all, then 5: 20.
  assert budget.reached({"calls": 4}, tmp_path / "c") is None
  assert "made 20 calls" in budget.reached({"calls": 5}, tmp_path / "c")
  # Run a's own count is its live one, not its run.json's.
  assert budget.reached({"calls": 9}, tmp_path / "a") is None
  assert budget_lib.spent_by(tmp_path / "c") == (0, 0)
  assert Budget(total=Caps(max_tokens=200), runs=runs).exhausted()


def test_the_estimate_of_the_paper_cafe_is_near_its_published_run(capsys):
  """The 2-day café's normative arm, published in docs/results: the rule's
  estimate is within 30% of the calls it made (printed with the estimate
  the other published runs alone would give)."""
  cafe = load_scenario("hobbs_cafe")
  published = [r for r in estimate_lib.published_runs()
               if r["scenario"] == "hobbs_cafe" and r["arm"] == "normative"]
  assert len(published) == 1
  measured = published[0]["calls"]
  guess = estimate_lib.of_scenario(cafe, "normative")
  others = estimate_lib.of_scenario(cafe, "normative", runs=[
      r for r in estimate_lib.published_runs()
      if r["scenario"] != "hobbs_cafe"])
  with capsys.disabled():
    print(f"\nhobbs_cafe normative: published {measured} calls, estimate "
          f"{guess.calls:.0f} ({guess.calls / measured - 1:+.0%}); from the "
          f"other published runs alone {others.calls:.0f} "
          f"({others.calls / measured - 1:+.0%})")
  assert abs(guess.calls / measured - 1) <= 0.30
  assert guess.agent_hours == 140


def test_the_estimate_runs_nothing(tmp_path, capsys, monkeypatch):
  monkeypatch.chdir(tmp_path)
  assert cli.main(["run", "hobbs_cafe", "--estimate", "--price-in", "0.15",
                   "--price-out", "0.60"]) == 0
  printed = capsys.readouterr().out
  assert printed.startswith("estimate: hobbs_cafe, normative: 140 "
                            "agent-hours, ")
  assert "cost " in printed and not list(tmp_path.iterdir())


def test_compare_and_sweep_estimate_their_runs_and_run_nothing(
    tmp_path, capsys, monkeypatch):
  monkeypatch.chdir(tmp_path)
  assert cli.main(["compare", "hobbs_cafe", "--seeds", "1-3",
                   "--estimate"]) == 0
  lines = capsys.readouterr().out.splitlines()
  one = estimate_lib.of_scenario(load_scenario("hobbs_cafe"), "normative").calls
  assert lines[0].startswith("estimate: hobbs_cafe, normative, 3 seed(s): "
                             f"420 agent-hours, {3 * one:,.0f} calls")
  assert lines[-1].startswith("estimate: hobbs_cafe, both arms: 840 ")
  sweep = Path(tr.__file__).parents[1] / "examples" / "sweeps" / (
      "mini_seeds.yaml")
  assert cli.main(["sweep", str(sweep), "--estimate"]) == 0
  assert capsys.readouterr().out.startswith("estimate: ")
  assert not list(tmp_path.iterdir())

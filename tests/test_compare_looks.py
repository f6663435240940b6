"""`crsec compare --until-decided` (commands/compare_looks.py) on the
scripted compares of test_compare.py: no model runs.

`decided_run` writes runs whose findings every seed agrees on (all four
agents hold the three targets, the descriptive one a slot later, comply a
slot after holding, and two of them hold a norm nobody seeded), so the
compare stops as soon as its looks' levels allow; the runs end on day 1
within the hour, so the day-2 and conflict findings are the venue's to
leave undecided.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import AGENTS, RunBuilder  # pylint: disable=wrong-import-position
from test_compare import embedder, fake  # pylint: disable=unused-import,wrong-import-position

from crsec_concordia import cli, runner
from crsec_concordia.metrics.present import findings

DAY_2 = "Injunctive norms held and complied with by the end of day 2 (>= 90%)"
CONFLICTS = "Conflicts rise then fall"


def decided_run(out_dir: Path, arm: str, seed: int, steps: int) -> Path:
  b = RunBuilder(out_dir, arm=arm, seed=seed, steps=steps)
  for agent in AGENTS:
    if arm == "normative":
      b.hold(1, agent, "No smoking indoors.", origin="created")
      b.hold(1, agent, "Be quiet in public places.", origin="created")
      b.hold(2, agent, "Tip after meals.", origin="created",
             type="descriptive")
    b.action(2, agent, ["smoking_outside", "quiet_talk"])
    b.action(3, agent, ["tipping"])
  if arm == "normative":
    for agent in AGENTS[:2]:
      b.hold(2, agent, "Maintain a healthy environment.",
             origin="observation", source_agent=AGENTS[3],
             source_text="the smoke")
  return b.write()


@pytest.fixture
def decided(fake, monkeypatch):
  """The fake runner, writing `decided_run`s."""
  def run_episode(scenario, *, arm, seed, out_dir, endpoint, steps,
                  progress, **_):  # The referee's policy, budgets, ...
    fake.calls.append({"arm": arm, "seed": seed})
    if (arm, seed) in fake.failing:
      raise fake.failing[(arm, seed)]
    return decided_run(Path(out_dir), arm, seed, steps or 3)
  monkeypatch.setattr(runner, "run_episode", run_episode)
  return fake


def block(out: Path) -> dict:
  return json.loads((out / "compare.json").read_text())["until_decided"]


def test_it_stops_at_max_seeds_naming_what_is_left(fake, tmp_path, capsys):
  out = tmp_path / "cmp"
  argv = ["compare", "x", "--until-decided", "--max-seeds", "4", "--out",
          str(out), "--steps", "3"]
  assert cli.main(argv) == 0
  printed = capsys.readouterr().out
  assert sorted({c["seed"] for c in fake.calls}) == [1, 2, 3, 4]
  assert len(fake.calls) == 8
  b = block(out)
  assert [look["seeds"] for look in b["looks"]] == [3, 4]
  assert b["design"]["first"] == 3 and b["design"]["most"] == 4
  # The runs end on day 1 within an hour: the venue's, named with why.
  assert set(b["venue"]) == {DAY_2, CONFLICTS}
  assert "the runs end on day 1" in b["venue"][DAY_2]
  assert f"the venue cannot decide {DAY_2!r}" in printed
  # What is left says how many seeds its numbers would need.
  assert b["undecided"]
  assert b["undecided"]["Norms nobody seeded emerge"] > 4
  assert "undecided at 4 seeds (--max-seeds): 'Norms nobody seeded " \
         "emerge'; about" in printed
  # The same command again: everything reused, the same verdicts.
  assert cli.main(argv) == 0
  assert len(fake.calls) == 8 and block(out) == b


def test_it_adds_seed_pairs_and_stops_when_decided(decided, tmp_path, capsys):
  out = tmp_path / "cmp"
  assert cli.main(["compare", "x", "--until-decided", "--seeds", "1-4",
                   "--max-seeds", "9", "--out", str(out), "--steps",
                   "3"]) == 0
  b = block(out)
  seeds = [look["seeds"] for look in b["looks"]]
  assert seeds[0] == 4 and seeds == list(range(4, seeds[-1] + 1))
  assert seeds[-1] < 9, "it ran on after everything was decided"
  assert sorted({c["seed"] for c in decided.calls}) == list(
      range(1, seeds[-1] + 1))
  last = b["looks"][-1]["findings"]
  assert b["undecided"] == {} and set(b["venue"]) == {DAY_2, CONFLICTS}
  assert all(v != findings.UNSURE for k, v in last.items()
             if k not in b["venue"])
  assert last["Target norms emerge (each held by >= 50% at the end)"] == \
      findings.HOLDS
  assert all(findings.UNSURE in look["findings"].values()
             for look in b["looks"][:-1])
  assert f"look at {seeds[-1]} seeds" in capsys.readouterr().out
  # `crsec report --publish` decides with the compare's design.
  results = tmp_path / "results"
  assert cli.main(["report", "--publish", str(results), str(out)]) == 0
  group = json.loads((results / "results.json").read_text())["groups"][0]
  assert {f["finding"]: f["verdict"] for f in group["findings"]} == last


def test_an_interrupted_compare_resumes_at_its_look(fake, tmp_path, capsys):
  argv = ["compare", "x", "--until-decided", "--max-seeds", "5", "--steps",
          "3", "--jobs", "1", "--out"]
  whole = tmp_path / "whole"
  assert cli.main(argv + [str(whole)]) == 0
  fake.calls.clear()
  out = tmp_path / "cmp"
  fake.failing[("baseline", 4)] = RuntimeError("model crashed")
  assert cli.main(argv + [str(out)]) == 1
  assert block(out)["seeds"] == [1, 2, 3, 4]
  fake.failing.clear()
  fake.calls.clear()
  capsys.readouterr()
  assert cli.main(argv + [str(out)]) == 0
  assert "continuing at the look at 4 seeds" in capsys.readouterr().out
  # Only the failed run and the seed after it ran.
  assert sorted((c["arm"], c["seed"]) for c in fake.calls) == [
      ("baseline", 4), ("baseline", 5), ("normative", 5)]
  assert block(out)["looks"] == block(whole)["looks"]
  assert [look["seeds"] for look in block(out)["looks"]] == [3, 4, 5]
  # The plan is kept: another --max-seeds is refused, one line, exit 2.
  assert cli.main(argv[:3] + ["--max-seeds", "7", "--steps", "3", "--out",
                              str(out)]) == 2
  err = capsys.readouterr().err.strip()
  assert "--max-seeds 5" in err and "\n" not in err


@pytest.mark.parametrize("flags, says", [
    (["--max-seeds", "5"], "--max-seeds is for --until-decided"),
    (["--until-decided", "--seeds", "1-2"], "at least 3 seeds"),
    (["--until-decided", "--seeds", "1-5", "--max-seeds", "4"],
     "fewer than the 5 seeds")])
def test_bad_sequential_flags_are_one_line(fake, tmp_path, capsys, flags,
                                           says):
  assert cli.main(["compare", "x", "--out", str(tmp_path / "c"), *flags]) == 2
  err = capsys.readouterr().err.strip()
  assert says in err and "\n" not in err
  assert not fake.calls

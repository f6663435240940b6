"""Say, hold, do per agent and target, from hand-built runs (no LLM).

The stated rules are written as `crsec run` writes them
(RUN_DIR/stated_belief.csv, interviews/stated_table.py); the norms and
deeds by metrics_fixtures.RunBuilder.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from crsec_concordia import cli, load_run
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.interviews.stated_table import STATED_COLUMNS
from crsec_concordia.metrics.measure import run_metrics
from crsec_concordia.metrics.measure import say_hold_do as shd
from crsec_concordia.metrics.measure import say_hold_table
from crsec_concordia.metrics.present import report
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.format import STATED_BELIEF_CSV
sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import ABIGAIL, CARLOS, ISABELLA, SAM, RunBuilder

SMOKE, TIP = "no_smoking_indoors", "tip_after_meals"
BILL = {"id": "bill", "at": "09:20",
        "situation": "The server brings {actor} the bill.",
        "behaviours": ["tipping", "no_tip"]}


@pytest.fixture(scope="module", autouse=True)
def embedder():
  return shared_embedder()


def write_stated(run_dir: Path, said: dict[str, list[str] | None],
                 phase: str = "end") -> None:
  """stated_belief.csv: each agent's rules, None for a failed question;
  an agent left out was not asked."""
  with open(run_dir / STATED_BELIEF_CSV, "w", newline="",
            encoding="utf-8") as f:
    out = csv.DictWriter(f, fieldnames=STATED_COLUMNS)
    out.writeheader()
    for agent, rules in said.items():
      base = {"phase": phase, "slot": 6, "agent": agent, "role": "ordinary",
              "model": "scripted"}
      if rules is None:
        out.writerow({**base, "rule_index": -1, "rule": "",
                      "error": "invalid answer twice"})
      for i, rule in enumerate(rules or ()):
        out.writerow({**base, "rule_index": i, "rule": rule, "error": ""})
      if rules == []:
        out.writerow({**base, "rule_index": -1, "rule": "", "error": ""})


def cafe(path: Path, arm: str = "normative", seed: int = 1) -> Path:
  """Abigail (an entrepreneur) says and holds no smoking, and smokes
  indoors; Carlos says it, holds nothing and smokes outside; Isabella's
  question failed and she never acts on smoking, but meets the bill and is
  tagged with nothing; Sam was not asked, and both smokes indoors and
  outside."""
  b = RunBuilder(path, arm=arm, seed=seed, steps=6)
  b.scenario["occasions"] = [BILL]
  if arm == "normative":
    b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  b.action(2, ABIGAIL, ["smoking_indoors"])
  b.action(3, CARLOS, ["smoking_outside"])
  b.action(2, SAM, ["smoking_indoors"])
  b.action(4, SAM, ["smoking_outside"])
  b.record("action", 3, actor=ISABELLA, action="Isabella reads the bill.",
           narration="", place="indoors", behaviours=[], evidence="",
           occasion="bill")
  run_dir = b.write()
  write_stated(run_dir, {ABIGAIL: ["No smoking indoors."],
                         CARLOS: ["Do not smoke inside the café.",
                                  "Be kind to others."],
                         ISABELLA: None})
  return run_dir


def readings(frame, agent: str, target: str) -> tuple[str, str, str]:
  row = frame[(frame["agent"] == agent) & (frame["target"] == target)]
  assert len(row) == 1
  return tuple(row.iloc[0][["say", "hold", "do"]])


def test_each_agent_gets_its_three_readings(tmp_path):
  frame = shd.agent_table(reading.read_run(cafe(tmp_path / "run")))
  assert readings(frame, ABIGAIL, SMOKE) == (shd.STATES, shd.HOLDS,
                                             shd.VIOLATES)
  assert readings(frame, CARLOS, SMOKE) == (shd.STATES, shd.NOT_HELD,
                                            shd.COMPLIES)
  assert readings(frame, ISABELLA, SMOKE) == (shd.UNKNOWN, shd.NOT_HELD,
                                              shd.NO_OCCASION)
  assert readings(frame, SAM, SMOKE) == (shd.NOT_ASKED, shd.NOT_HELD,
                                         shd.BOTH)
  # The bill was put to Isabella; her answer was tagged with neither.
  assert readings(frame, ISABELLA, TIP)[2] == shd.UNTAGGED
  assert readings(frame, CARLOS, TIP) == (shd.SILENT, shd.NOT_HELD,
                                          shd.NO_OCCASION)
  abigail = frame[frame["agent"] == ABIGAIL].iloc[0]
  assert abigail["entrepreneur"] and abigail["role"] == "entrepreneur"
  assert not frame[frame["agent"] == CARLOS]["entrepreneur"].any()
  # Each reading names its reader's error, or says it is not measured.
  assert frame["say_error"].str.len().min() > 0
  assert (frame["do_error"].str.startswith(shd.NOT_MEASURED)).all()


def test_baseline_agents_have_no_norm_memory(tmp_path):
  frame = shd.agent_table(reading.read_run(cafe(tmp_path / "b", "baseline")))
  assert set(frame["hold"]) == {shd.NO_MEMORY}
  assert readings(frame, CARLOS, SMOKE) == (shd.STATES, shd.NO_MEMORY,
                                            shd.COMPLIES)


def test_a_run_that_asked_nobody_is_not_asked(tmp_path):
  run_dir = RunBuilder(tmp_path / "run", steps=2).write()
  frame = shd.agent_table(reading.read_run(run_dir))
  assert set(frame["say"]) == {shd.NOT_ASKED}
  assert set(frame["do"]) == {shd.NO_OCCASION}


def test_the_cells_and_the_say_do_gap_of_a_run(tmp_path):
  m = run_metrics.compute(reading.read_run(cafe(tmp_path / "run")))
  smoke = m.summary["say_hold_do"]["targets"][SMOKE]
  cells = {(c["say"], c["hold"], c["do"]): c for c in smoke["cells"]}
  inconsistent = cells[(shd.STATES, shd.HOLDS, shd.VIOLATES)]
  assert inconsistent["agents"] == 1 and inconsistent["share"] == 0.25
  assert inconsistent["entrepreneurs"] == 1
  assert cells[(shd.UNKNOWN, shd.NOT_HELD, shd.NO_OCCASION)]["agents"] == 1
  assert sum(c["share"] for c in smoke["cells"]) == pytest.approx(1.0)
  gap = smoke["say_do_gap"]
  # Sayers with a tagged deed: Abigail (violates), Carlos (complies).
  assert (gap["violating"], gap["n"], gap["gap"]) == (1, 2, 0.5)
  assert gap["low"] < 0.5 < gap["high"]
  # Nobody states tipping: no gap, and no interval made up.
  assert m.summary["say_hold_do"]["targets"][TIP]["say_do_gap"]["gap"] is None


def test_the_gap_over_runs_resamples_runs():
  def run(violating: int, complying: int):
    import pandas as pd  # pylint: disable=import-outside-toplevel
    rows = ([{"say": shd.STATES, "do": shd.VIOLATES}] * violating
            + [{"say": shd.STATES, "do": shd.COMPLIES}] * complying
            + [{"say": shd.SILENT, "do": shd.VIOLATES}] * 3)
    return pd.DataFrame(rows)
  gap = say_hold_table.say_do_gap([run(0, 4), run(4, 0), run(2, 2)])
  assert gap["gap"] == 0.5 and gap["n"] == 12 and gap["runs"] == 3
  # The runs disagree (0/4, 4/4, 2/4): wider than the agents' interval.
  pooled = say_hold_table.say_do_gap([run(6, 6)])
  assert gap["low"] < pooled["low"] < 0.5 < pooled["high"] < gap["high"]
  # Every sayer violating in every run: the runs' bootstrap cannot vary,
  # and the agents' interval still leaves room below.
  same = say_hold_table.say_do_gap([run(2, 0), run(3, 0)])
  assert same["gap"] == 1.0 and same["low"] < 0.9 and same["high"] == 1.0
  # No sayer violating: the interval starts at 0, where its point is.
  none = say_hold_table.say_do_gap([run(0, 2)])
  assert none["gap"] == 0.0 and none["low"] == 0.0 < none["high"] < 1.0


def test_report_writes_the_csv_summary_and_table(tmp_path):
  run_dir = cafe(tmp_path / "run")
  assert cli.main(["report", str(run_dir), "--out",
                   str(tmp_path / "r")]) == 0
  rows = list(csv.DictReader(open(run_dir / "metrics" / "say_hold_do.csv",
                                  encoding="utf-8")))
  assert len(rows) == 4 * 3
  assert {r["agent"] for r in rows if r["do"] == shd.VIOLATES} == {ABIGAIL}
  summary = json.loads((run_dir / "metrics" / "summary.json").read_text())
  assert summary["say_hold_do"]["targets"][SMOKE]["say_do_gap"]["n"] == 2
  page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
  assert "Say, hold, do" in page and "say-do gap" in page


def test_a_run_that_asked_nobody_keeps_its_report(tmp_path):
  run_dir = RunBuilder(tmp_path / "run", steps=2).write()
  m = run_metrics.compute(reading.read_run(run_dir))
  assert "say_hold_do" not in m.summary


def compare_dir(base: Path) -> Path:
  arms = {"normative": [], "baseline": []}
  for seed in (1, 2):
    for arm in arms:
      cafe(base / arm / f"seed_{seed}", arm=arm, seed=seed)
      arms[arm].append(f"{arm}/seed_{seed}")
  (base / "compare.json").write_text(json.dumps(
      {"scenario": "hobbs_cafe_test", "seeds": [1, 2], "arms": arms}))
  return base


def test_the_compare_report_shows_the_table(tmp_path):
  base = compare_dir(tmp_path / "cmp")
  result = report.compare_report(base)
  summary = json.loads((base / "compare_summary.json").read_text())
  block = summary["say_hold_do"]
  assert set(block) == {"normative", "baseline"}
  gap = block["normative"]["targets"][SMOKE]["say_do_gap"]
  assert (gap["violating"], gap["n"], gap["runs"]) == (2, 4, 2)
  baseline_cells = block["baseline"]["targets"][SMOKE]["cells"]
  assert {c["hold"] for c in baseline_cells} == {shd.NO_MEMORY}
  rows = list(csv.DictReader(open(base / "say_hold_do.csv",
                                  encoding="utf-8")))
  assert len(rows) == 4 * 4 * 3
  assert {r["arm"] for r in rows} == {"normative", "baseline"}
  page = result.index.read_text(encoding="utf-8")
  assert "Say, hold, do" in page and "normative" in page
  assert shd.NO_MEMORY in page


def test_load_run_returns_the_per_agent_table(tmp_path):
  data = load_run(compare_dir(tmp_path / "cmp"))
  table = data.say_hold_do
  assert len(table) == 4 * 4 * 3
  assert {"run", "arm", "seed", "agent", "target", "say", "hold",
          "do"} <= set(table.columns)
  mine = table[(table["arm"] == "normative") & (table["agent"] == ABIGAIL)
               & (table["target"] == SMOKE)]
  assert set(mine["say"]) == {shd.STATES}
  assert set(mine["do"]) == {shd.VIOLATES}

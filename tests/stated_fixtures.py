"""Hand-built runs with a stated_belief.csv (interviews/stated_table.py's
shape), on the paper café's ten agents (three entrepreneurs) and the
shipped targets' wording, so that the matcher's measured error holds.

`said(arm, seed, phase, agent, role)` gives an agent's stated rules, or
None for a failed question.
"""

from __future__ import annotations

import copy
import csv
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from crsec_concordia.interviews.stated_table import NO_RULE, STATED_COLUMNS
from crsec_concordia.metrics.classifiers import measured
from crsec_concordia.metrics.classifiers.correction import Rates
from crsec_concordia.metrics.measure.stated_shares import StatedRun
from crsec_concordia.rundir.format import STATED_BELIEF_CSV
from tests.metrics_fixtures import PAPER_AGENTS, RunBuilder, paper_scenario

Said = Callable[[str, int, str, str, str], Sequence[str] | None]
SMOKE = "No smoking indoors."
OTHER = "Greet the people you meet by name."
# A wording of each shipped target.
EVERY_TARGET = [SMOKE, "Be quiet in public places.", "Tip after meals."]
TARGET = "no_smoking_indoors"
ENTREPRENEURS = {a[0] for a in PAPER_AGENTS if a[1] == "entrepreneur"}


def shipped_scenario() -> dict:
  scenario = copy.deepcopy(paper_scenario())
  shipped = measured.load_measured()["targets"]
  ids = {"no_smoking_indoors": "no_smoking_indoors",
         "be_quiet": "quiet_in_public", "tip_after_meals": "tip_after_meals"}
  for t in scenario["target_norms"]:
    t["id"] = ids[t["id"]]
    t["text"] = shipped[t["id"]]["text"]
    t["aliases"] = shipped[t["id"]]["aliases"]
  return scenario


def write_stated(run_dir: Path, arm: str, seed: int, said: Said) -> None:
  with open(run_dir / STATED_BELIEF_CSV, "w", newline="",
            encoding="utf-8") as f:
    out = csv.DictWriter(f, STATED_COLUMNS)
    out.writeheader()
    for phase, slot in (("start", 0), ("end", 4)):
      for name, role, *_ in PAPER_AGENTS:
        rules = said(arm, seed, phase, name, role)
        base = {"phase": phase, "slot": slot, "agent": name, "role": role,
                "model": "scripted", "error": ""}
        if not rules:
          out.writerow({**base, "rule_index": NO_RULE, "rule": "",
                        "error": "invalid answer" if rules is None else ""})
        for i, rule in enumerate(rules or ()):
          out.writerow({**base, "rule_index": i, "rule": rule})


def stated_run(path: Path, arm: str, seed: int, said: Said | None) -> Path:
  b = RunBuilder(path, arm=arm, seed=seed, steps=4,
                 scenario=shipped_scenario())
  b.action(1, "Carlos Gomez", ["smoking_outside"], "Carlos smokes outside.")
  b.write()
  if said is not None:
    write_stated(path, arm, seed, said)
  return path


def stated_compare(root: Path, said: Said | None, seeds=(1,)) -> Path:
  arms = {arm: [str(stated_run(root / arm / f"seed_{s}", arm, s, said)
                    .relative_to(root)) for s in seeds]
          for arm in ("normative", "baseline")}
  (root / "compare.json").write_text(json.dumps(
      {"scenario": "hobbs_cafe_synthetic", "seeds": list(seeds),
       "arms": arms, "failed": [], "status": "completed"}))
  return root


def everyone(arm, seed, phase, agent, role):  # pylint: disable=unused-argument
  """Every agent states the target, at the start and at the end."""
  return [SMOKE, OTHER]


def normative_gain(arm, seed, phase, agent, role):  # pylint: disable=unused-argument
  """Normative non-entrepreneurs gain every target; nobody else states one
  (entrepreneurs always state the first)."""
  if role == "entrepreneur":
    return [SMOKE]
  if arm == "normative" and phase == "end":
    return EVERY_TARGET
  return [OTHER]


# The matcher's measured error on the shipped café target (test half).
CAFE_RATES = Rates(tp=24, fp=12, fn=0, tn=82)


def flags_run(arm: str, seed: int, start: Sequence[bool],
              end: Sequence[bool]) -> StatedRun:
  """A run's stated flags for one target "t", each agent one rule."""
  n = len(start)
  return StatedRun(
      arm=arm, asked=("start", "end"),
      agents=tuple(f"a{i}" for i in range(n)),
      flags={"start": {"t": np.asarray(start, bool)},
             "end": {"t": np.asarray(end, bool)}},
      rules={"start": np.ones(n, int), "end": np.ones(n, int)},
      present={"start": np.ones(n, bool), "end": np.ones(n, bool)},
      failed={"start": (), "end": ()},
      entrepreneurs={"start": {}, "end": {}},
      rates={"t": (CAFE_RATES, "measured")}, seed=seed)

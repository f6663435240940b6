"""What each intervention changed: the N slots before it and after it.

An intervention (game_masters/interventions.py: a notice posted, agents
arriving or leaving, a norm taught, a place closed) happens as its slot
opens; its effect on norms shows, if at all, in the slots that follow.
For each intervention record of a run, and each target norm, this module
sets the window of `WINDOW` slots before it (the slot it happens in is
not among them) beside the window of as many slots from it on: belief
(the share holding the target, adoption.py) and behaviour (the share
whose latest relevant action complies) at each window's last slot, and
the conflicts about the target within each window. A window cut by the
run's start or end holds the slots there are (`slots_before`,
`slots_after`); an intervention at the first slot has no window before.
The shares are adoption.py's, over the agents present at each slot: the
window after an arrive counts the newcomers, the one after a leave no
longer counts the leavers.
A run without interventions has none of these (its summary is as it was).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from crsec_concordia.rundir.format import INTERVENTION
from crsec_concordia.rundir.reading import Run

WINDOW = 3  # Slots each side.
WINDOW_COLUMNS = ["index", "intervention", "step", "elapsed_minutes",
                  "target", "slots_before", "slots_after", "belief_before",
                  "belief_after", "behaviour_before", "behaviour_after",
                  "conflicts_before", "conflicts_after"]


def _last(rows: pd.DataFrame, column: str) -> float | None:
  if rows.empty or column not in rows:
    return None
  value = rows[column].iloc[-1]
  return None if value is None or (isinstance(value, float)
                                   and math.isnan(value)) else float(value)


def _total(rows: pd.DataFrame, column: str) -> float | None:
  if rows.empty or column not in rows:
    return None
  return float(rows[column].fillna(0).sum())


def marks(run: Run, per_step: pd.DataFrame) -> list[tuple[float, str]]:
  """(elapsed minutes, kind) of each intervention: a timeline's marks."""
  at = dict(zip(per_step.get("step", ()), per_step.get("elapsed_minutes", ())))
  return [(float(at[r["step"]]), str(r.get("intervention", "")))
          for r in run.of_kind(INTERVENTION) if r.get("step") in at]


def windows(run: Run, per_step: pd.DataFrame, target_ids: Sequence[str],
            window: int = WINDOW) -> list[dict[str, Any]]:
  """One row per intervention and target (WINDOW_COLUMNS), in the order
  the interventions happened."""
  rows = []
  steps = per_step["step"] if "step" in per_step else pd.Series(dtype=int)
  for record in run.of_kind(INTERVENTION):
    step = int(record["step"])
    before = per_step[(steps >= step - window) & (steps < step)]
    after = per_step[(steps >= step) & (steps < step + window)]
    elapsed = _last(per_step[steps == step], "elapsed_minutes")
    for target in target_ids:
      rows.append({
          "index": record.get("index"),
          "intervention": record.get("intervention"), "step": step,
          "elapsed_minutes": elapsed, "target": target,
          "slots_before": len(before), "slots_after": len(after),
          "belief_before": _last(before, f"belief.{target}"),
          "belief_after": _last(after, f"belief.{target}"),
          "behaviour_before": _last(before, f"behaviour.{target}"),
          "behaviour_after": _last(after, f"behaviour.{target}"),
          "conflicts_before": _total(before, f"conflicts.{target}"),
          "conflicts_after": _total(after, f"conflicts.{target}")})
  return rows

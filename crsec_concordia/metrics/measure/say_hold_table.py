"""The say-hold-do table: the share of agents in each (say, hold, do) cell
per target, and the say-do gap with its 95% interval.

THE SAY-DO GAP of a target: among the agents who state it (SAY "states")
and whose deeds on it were tagged (DO complies, violates or both), the
share whose deeds include a violation (violates or both). It asks the
question of the attitude-behaviour literature: of those who say the rule,
how many break it? Agents with no tagged deed (no occasion, or an occasion
the referee tagged nothing in) tell nothing about it and are out of both
counts; so are agents not asked or whose question failed. It is a raw
share: the readers' measured errors are shown beside it, not folded in.

Its interval: the Jeffreys interval of violators out of eligible sayers
(Beta(k + 1/2, n - k + 1/2) quantiles, defined at 0 and at all), which
treats the agents as independent draws; over several runs (a compare arm)
widened, side by side, to a percentile bootstrap of runs as clusters (the
ratio of summed counts per draw), which carries the runs' spread. Neither
alone holds 95% on a few seeds: the bootstrap of 3 runs covered the true
gap 60-88% of the time in bench/say_do_gap_coverage.py, the union 91-98%
(docs/metrics.md has the table).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from crsec_concordia.metrics.classifiers.correction import CONFIDENCE
from crsec_concordia.metrics.measure import say_hold_do as shd

GAP_DRAWS = 2000
DEFINITION = ("say-do gap: among agents who state the target at the end and "
              "whose deeds on it were tagged, the share whose deeds include "
              "a violation; 95% Jeffreys interval over agents, widened over "
              "several runs to a percentile bootstrap of runs as clusters")
_SEED = 0


def _counts(frame: pd.DataFrame) -> tuple[int, int]:
  """(violating sayers, sayers with a tagged deed) of one run's rows."""
  eligible = frame[(frame["say"] == shd.STATES)
                   & frame["do"].isin(shd.TAGGED)]
  violating = eligible["do"].isin((shd.VIOLATES, shd.BOTH))
  return int(violating.sum()), len(eligible)


def say_do_gap(runs: Sequence[pd.DataFrame],
               confidence: float = CONFIDENCE) -> dict[str, Any]:
  """The gap over one target's rows of each run, with its interval and
  what it stands on (`n` sayers with a tagged deed, `runs`)."""
  counts = np.asarray([_counts(f) for f in runs], dtype=float).reshape(-1, 2)
  k, n = counts.sum(axis=0) if len(counts) else (0.0, 0.0)
  out: dict[str, Any] = {"gap": None, "low": None, "high": None,
                         "violating": int(k), "n": int(n), "runs": len(runs)}
  if not n:
    return out
  tail = (1 - confidence) / 2
  out["gap"] = float(k / n)
  beta = scipy_stats.beta(k + 0.5, n - k + 0.5)
  # Jeffreys' ends at 0 and 1 where none or all violate (Brown, Cai and
  # DasGupta 2001), so the interval holds its own point.
  low = 0.0 if k == 0 else float(beta.ppf(tail))
  high = 1.0 if k == n else float(beta.ppf(1 - tail))
  used = counts[counts[:, 1] > 0]
  if len(used) >= 2:  # The runs' spread, where it is wider.
    rng = np.random.default_rng(_SEED)
    picks = rng.integers(0, len(used), size=(GAP_DRAWS, len(used)))
    summed = used[picks].sum(axis=1)
    ratios = summed[:, 0] / summed[:, 1]
    spread = np.quantile(ratios, [tail, 1 - tail])
    low, high = min(low, spread[0]), max(high, spread[1])
  out["low"], out["high"] = float(low), float(high)
  return out


def cell_shares(frame: pd.DataFrame) -> list[dict[str, Any]]:
  """The occupied (say, hold, do) cells of one target's rows (agents, or
  agents of several runs): agents, entrepreneurs among them, share."""
  total = len(frame)
  cells = []
  for (say, hold, do), rows in frame.groupby(["say", "hold", "do"],
                                             sort=False):
    cells.append({"say": say, "hold": hold, "do": do, "agents": len(rows),
                  "entrepreneurs": int(rows["entrepreneur"].sum()),
                  "share": len(rows) / total})
  order = {name: i for i, name in enumerate(
      (*shd.SAYS, *shd.HOLDINGS, *shd.DEEDS))}
  return sorted(cells, key=lambda c: (order[c["say"]], order[c["hold"]],
                                      order[c["do"]]))


def block(runs: Sequence[pd.DataFrame]) -> dict[str, Any]:
  """The summary's `say_hold_do` block of one run or arm (a frame of
  agent_table per run): per target its cells, gap and readers' errors."""
  frames = [f for f in runs if not f.empty]
  out: dict[str, Any] = {"definition": DEFINITION, "phase": "end",
                         "runs": len(frames), "targets": {}}
  if not frames:
    return out
  ids = list(dict.fromkeys(frames[0]["target"]))
  for tid in ids:
    mine = [f[f["target"] == tid] for f in frames]
    pooled = pd.concat(mine, ignore_index=True)
    out["targets"][tid] = {
        "cells": cell_shares(pooled),
        "say_do_gap": say_do_gap(mine),
        "errors": {r: sorted(set(pooled[f"{r}_error"]))
                   for r in ("say", "hold", "do")}}
  return out

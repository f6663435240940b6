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

Its interval: one run's agents are independent draws, so the Jeffreys
interval of violators out of eligible sayers (the beta quantiles, defined
at 0 and at all); several runs (a compare arm) are clusters, so a
percentile bootstrap of runs (the ratio of summed counts per draw). With
two or three seeds that interval is short of 95%: `n` and `runs` say how
much it stands on.
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
              "a violation; 95% Jeffreys interval over agents (one run) or "
              "percentile bootstrap over runs as clusters (several)")
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
  used = counts[counts[:, 1] > 0]
  if len(used) < 2:
    beta = scipy_stats.beta(k + 0.5, n - k + 0.5)
    low, high = beta.ppf(tail), beta.ppf(1 - tail)
  else:
    rng = np.random.default_rng(_SEED)
    picks = rng.integers(0, len(used), size=(GAP_DRAWS, len(used)))
    summed = used[picks].sum(axis=1)
    ratios = summed[:, 0] / summed[:, 1]
    low, high = np.quantile(ratios, [tail, 1 - tail])
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

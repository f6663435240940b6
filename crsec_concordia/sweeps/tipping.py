"""A sweep's tipping curve, when its scenarios have a committed minority.

For a sweep whose runs have committed agents (metrics/measure/tipping.py),
each normative run gives a point: the committed minority's share of all
agents, and the share of the other agents that end holding and following
the minority's norm. Runs are grouped by scenario, endpoint and condition
(a condition is one minority size: the sweep's axis); per group the mean
over seeds with a 95% t-interval (mean ± t(0.975, n-1)·sd/√n, cut to
0..1: the statistics of `crsec compare`, `aggregate.mean_ci`; none for one
seed). Baseline runs hold no norms and are left out.

  sweep_tipping_runs   one row per run: its point
  sweep_tipping        per scenario, endpoint and condition: the minority
                       share, n, mean, sd, ci_low, ci_high and the seeds'
                       values, for `adopted` and also `holding` and
                       `following` alone
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from crsec_concordia.metrics.measure import aggregate as compare_aggregate
from crsec_concordia.metrics.measure import tipping

# A sweep's cell (sweeps/aggregate.py): the runs aggregated over seeds.
CELL = ["scenario", "condition", "endpoint"]

RUNS_TABLE = "sweep_tipping_runs"
TABLE = "sweep_tipping"
MEASURES = ("adopted", "holding", "following")
INTERVAL = "95% t-interval over seeds"
RUN_COLUMNS = [*CELL, "seed", "target", "agents", "committed",
               "minority_share", *MEASURES]
CURVE_COLUMNS = [*CELL, "target", "minority_share", "measure", "n", "mean",
                 "sd", "ci_low", "ci_high", "values", "seeds"]


def points(cells: Mapping[tuple[str, str, str],
                          compare_aggregate.CompareMetrics]) -> pd.DataFrame:
  """One row per normative run of a scenario with a committed minority
  (`cells`: each cell's metrics, as sweeps/aggregate.py measures them)."""
  by_scenario: dict[str, str] = {}
  runs = []
  for cell, cm in sorted(cells.items()):
    for m in cm.runs.get("normative", []):
      runs.append((cell, m))
      target = tipping.minority_target(m)
      if target is not None:
        by_scenario.setdefault(cell[0], target)
  rows = []
  for cell, m in runs:
    target = by_scenario.get(cell[0])
    if target is not None:
      rows.append({**dict(zip(CELL, cell)), "seed": m.run.seed,
                   **tipping.outcome(m, target)})
  return pd.DataFrame(rows, columns=RUN_COLUMNS)


def curve(runs: pd.DataFrame) -> pd.DataFrame:
  """Per scenario, endpoint and condition, each measure over seeds."""
  rows = []
  for keys, group in runs.groupby([*CELL, "target"], sort=True):
    share = float(group["minority_share"].mean())
    for measure in MEASURES:
      kept = group[group[measure].notna()]
      stats = compare_aggregate.mean_ci(kept[measure].tolist(),
                                        bounds=(0.0, 1.0))
      rows.append({**dict(zip([*CELL, "target"], keys)),
                   "minority_share": share, "measure": measure,
                   **{k: stats[k] for k in ("n", "mean", "sd", "ci_low",
                                            "ci_high")},
                   "values": [float(v) for v in kept[measure]],
                   "seeds": [int(s) for s in kept["seed"]]})
  frame = pd.DataFrame(rows, columns=CURVE_COLUMNS)
  return frame.sort_values([*CELL[:1], "endpoint", "minority_share",
                            "measure"], kind="stable").reset_index(drop=True)


def adopted(frame: pd.DataFrame) -> pd.DataFrame:
  """The curve itself: the `adopted` rows."""
  return frame[frame["measure"] == "adopted"].reset_index(drop=True)

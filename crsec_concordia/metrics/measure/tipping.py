"""The committed-minority experiment: how far the minority's norm reaches.

A population starts holding one convention (a target norm) and a
committed minority (agents marked `committed` in the scenario, who never
revise or drop their norms) holds another. At the end of a run, among the
agents who are not committed:

  holding     the share holding a qualified norm that MEANS the minority's
              target (belief, adoption.py)
  following   the share whose latest action relevant to that target
              complies with it (behaviour, adoption.py)
  adopted     the share doing both: the tipping curve's value

Agents absent at the end (gone, or never arrived: their flags None,
adoption.py) are left out of these shares.

The minority's norm is the target most committed agents hold at the first
measured step (their own initial norms; a tie goes to the scenario's first
target). A run without committed agents (the 0% point of the curve) has
none of its own: the caller names the one other runs of the same
scenario found (`minority_target`, `outcome`).

Over runs (a sweep's, or those `crsec report --publish` is given),
grouped by scenario, condition and endpoint (a condition is one minority
size: the sweep's axis), each normative run is a point (`points`) and per
group the curve gives the mean over seeds with a 95% t-interval (mean ±
t(0.975, n-1)·sd/√n, cut to 0..1: `aggregate.mean_ci`, the statistics of
`crsec compare`; none for one seed) of `adopted`, and of `holding` and
`following` alone (`curve`). Baseline runs hold no norms and are left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from crsec_concordia.metrics.measure import aggregate, places
from crsec_concordia.metrics.measure.run_metrics import RunMetrics

# The runs aggregated over seeds: a sweep's cell (sweeps/aggregate.py).
CELL = ["scenario", "condition", "endpoint"]
TIPPING_MEASURES = ("adopted", "holding", "following")
INTERVAL = "95% t-interval over seeds"
RUN_COLUMNS = [*CELL, "seed", "target", "agents", "committed",
               "minority_share", *TIPPING_MEASURES]
CURVE_COLUMNS = [*CELL, "target", "minority_share", "measure", "n", "mean",
                 "sd", "ci_low", "ci_high", "values", "seeds"]


def _first(flags: Sequence[Any]) -> Any:
  return next((f for f in flags if f is not None), None)


def minority_target(m: RunMetrics) -> str | None:
  """The target most of the run's committed agents hold at first, or None
  (no committed agent, or none of them holds a target)."""
  committed = places.committed(m.run)
  if not committed:
    return None
  agents = m.run.agents
  counts: Counter[str] = Counter()
  for target, per_step in (m.agent_flags.get("belief") or {}).items():
    first = _first(per_step)
    if first is not None:
      counts[target] = sum(bool(first[i]) for i, a in enumerate(agents)
                           if a in committed)
  order = [t.id for t in m.run.targets]
  best = max(counts.values(), default=0)
  if not best:
    return None
  return next(t for t in order if counts.get(t) == best)


def _share(flags: Sequence[Any] | None, members: Sequence[int]
           ) -> float | None:
  """The share of `members` flagged, among those present (not None)."""
  if flags is None:
    return None
  here = [i for i in members if flags[i] is not None]
  if not here:
    return None
  return sum(bool(flags[i]) for i in here) / len(here)


def outcome(m: RunMetrics, target: str) -> dict[str, Any]:
  """The run's point on the curve for the minority's `target`: the
  committed share of all agents and, among the others, the shares holding,
  following, and both at the last step (None where not measured)."""
  agents = m.run.agents
  committed = places.committed(m.run)
  others = [i for i, a in enumerate(agents) if a not in committed]
  belief = (m.agent_flags.get("belief") or {}).get(target) or []
  behaviour = (m.agent_flags.get("behaviour") or {}).get(target) or []
  held = belief[-1] if belief else None
  done = behaviour[-1] if behaviour else None
  both = None if held is None or done is None else [
      None if h is None or d is None else bool(h and d)
      for h, d in zip(held, done)]
  return {"target": target, "agents": len(agents),
          "committed": len(committed),
          "minority_share": len(committed) / len(agents) if agents else None,
          "holding": _share(held, others), "following": _share(done, others),
          "adopted": _share(both, others)}


def points(cells: Mapping[tuple[str, str, str], Any]) -> pd.DataFrame:
  """One row per normative run of a scenario with a committed minority
  (`cells`: per cell, anything whose `runs` maps an arm to its runs'
  RunMetrics: a compare's metrics, a published group)."""
  by_scenario: dict[str, str] = {}
  runs = []
  for cell, cm in sorted(cells.items()):
    for m in cm.runs.get("normative", []):
      runs.append((cell, m))
      target = minority_target(m)
      if target is not None:
        by_scenario.setdefault(cell[0], target)
  rows = []
  for cell, m in runs:
    target = by_scenario.get(cell[0])
    if target is not None:
      rows.append({**dict(zip(CELL, cell)), "seed": m.run.seed,
                   **outcome(m, target)})
  return pd.DataFrame(rows, columns=RUN_COLUMNS)


def curve(runs: pd.DataFrame) -> pd.DataFrame:
  """Per scenario, endpoint and condition, each measure over seeds."""
  rows = []
  for keys, group in runs.groupby([*CELL, "target"], sort=True):
    share = float(group["minority_share"].mean())
    for measure in TIPPING_MEASURES:
      kept = group[group[measure].notna()]
      stats = aggregate.mean_ci(kept[measure].tolist(), bounds=(0.0, 1.0))
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

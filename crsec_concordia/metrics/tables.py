"""Tidy tables for researchers: long form, one value per row.

The per-step CSVs are wide (a column per measure and target), which suits a
spreadsheet but not pandas/R group-bys across runs. These tables hold the
same numbers long, with the same columns in every file so that runs,
compares and sweeps concatenate:

  long      run, arm, seed, step, time, target, metric, value
            (target is "" for run-wide columns such as conflicts)
  per_seed  run, arm, seed, target, metric, value: the run-level numbers
            `aggregate.scalars` compares across arms, one row per seed

Each is written as CSV (cells made safe for spreadsheets, csv_cells.py)
and Parquet (values as they are).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from crsec_concordia.metrics.csv_cells import safe_frame

LONG = ["run", "arm", "seed", "step", "time", "target", "metric", "value"]
PER_SEED = ["run", "arm", "seed", "target", "metric", "value"]
_TIME = ("step", "day", "clock", "time", "elapsed_minutes", "hour")


def _split(name: str) -> tuple[str, str]:
  """"belief.no_smoking" -> ("no_smoking", "belief"); "conflicts" -> ("", ...)."""
  metric, _, target = name.partition(".")
  return target, metric


def long_form(metrics) -> pd.DataFrame:
  """One run's per-step table, long (RunMetrics -> DataFrame)."""
  frame = metrics.per_step
  values = [c for c in frame.columns if c not in _TIME
            and pd.api.types.is_numeric_dtype(frame[c])]
  if frame.empty or not values:
    return pd.DataFrame(columns=LONG)
  out = frame.melt(id_vars=["step", "time"], value_vars=values,
                   var_name="column", value_name="value")
  parts = out["column"].map(_split)
  out["target"] = parts.map(lambda p: p[0])
  out["metric"] = parts.map(lambda p: p[1])
  out["run"] = metrics.run.name
  out["arm"] = metrics.run.arm
  out["seed"] = metrics.run.seed
  out["value"] = out["value"].astype(float)
  return out[LONG].sort_values(["step", "metric", "target"],
                               kind="stable").reset_index(drop=True)


def per_seed(runs: Iterable) -> pd.DataFrame:
  """Run-level numbers of several runs (RunMetrics), one row per value."""
  from crsec_concordia.metrics.aggregate import scalars  # pylint: disable=import-outside-toplevel
  rows = []
  for m in runs:
    for name, value in scalars(m.summary).items():
      target, metric = _split(name)
      rows.append({"run": m.run.name, "arm": m.run.arm, "seed": m.run.seed,
                   "target": target, "metric": metric,
                   "value": None if value is None else float(value)})
  return pd.DataFrame(rows, columns=PER_SEED)


def write(frame: pd.DataFrame, out: Path, name: str) -> list[Path]:
  """`name`.csv and `name`.parquet in `out`."""
  out.mkdir(parents=True, exist_ok=True)
  csv, parquet = out / f"{name}.csv", out / f"{name}.parquet"
  safe_frame(frame).to_csv(csv, index=False)
  frame.to_parquet(parquet, index=False)
  return [csv, parquet]

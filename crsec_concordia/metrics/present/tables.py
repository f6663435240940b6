"""The metrics as files: CSV for spreadsheets, Parquet and tidy tables.

The per-step CSVs are wide (a column per measure and target), which suits a
spreadsheet but not pandas/R group-bys across runs. The tidy tables hold the
same numbers long, with the same columns in every file so that runs,
compares and sweeps concatenate:

  long      run, arm, seed, step, time, target, metric, value
            (target is "" for run-wide columns such as conflicts)
  per_seed  run, arm, seed, target, metric, value: the run-level numbers
            `aggregate.scalars` compares across arms, one row per seed
  events    every record of events.jsonl, one row each, nested fields
            flattened into dotted columns ("occasion_check.accepted")

Each table is written as CSV (cells made safe for spreadsheets,
csv_cells.py) and, with the `parquet` extra, as Parquet (values as they
are): `write_table`, which the sweeps use too. Without the extra, CSV only
and one line saying so, since CSV users need nothing more. The events are
Parquet only: as CSV they would be events.jsonl again, less readable.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from crsec_concordia.errors import MissingExtra, require
from crsec_concordia.metrics.measure import aggregate, run_metrics
from crsec_concordia.metrics.measure import say_hold_do
from crsec_concordia.metrics.present.csv_cells import safe_frame
from crsec_concordia.metrics.present.stated_report import (COMPARE_STATED_CSV,
                                                           STATED_CSV)
from crsec_concordia.metrics.present.stated_report import stated_table_rows
from crsec_concordia.rundir.format import METRICS, PER_STEP_CSV, SUMMARY_JSON

# The events' table in a run's metrics directory.
EVENTS_TABLE = "events"

_LOG = logging.getLogger(__name__)

LONG = ["run", "arm", "seed", "step", "time", "target", "metric", "value"]
PER_SEED = ["run", "arm", "seed", "target", "metric", "value"]
# A run's metrics directory (RUN_DIR/metrics/; PER_STEP_CSV and SUMMARY_JSON
# are the run directory's names, which the viewer reads too).
PER_HOUR_CSV = "per_hour.csv"
# A run of several places or of groups: adoption per place and group
# (measure/places.py), as CSV and Parquet.
BY_PLACE = "adoption_by_place"
# A compare directory's.
COMPARE_SUMMARY_JSON = "compare_summary.json"
COMPARE_SUMMARY_CSV = "compare_summary.csv"
COMPARE_PER_STEP_CSV = "compare_per_step.csv"

_lock = threading.Lock()
_said = False  # Whether the missing extra's line was logged.


def parquet_available() -> bool:
  """Whether Parquet can be written; says once per process when not."""
  try:
    # pyarrow is the `parquet` extra, pandas' Parquet engine; imported late.
    require("pyarrow", "parquet", "Parquet output")
  except MissingExtra as e:
    global _said  # pylint: disable=global-statement
    with _lock:
      first, _said = not _said, True
    if first:
      _LOG.warning("%s; writing CSV only", e)
    return False
  return True


def write_parquet(frame: pd.DataFrame, out: Path, name: str) -> Path | None:
  """`name`.parquet in `out` where the extra is installed, else None. A
  file of an earlier write is then removed: it would sit beside newer
  tables as if it held the same numbers."""
  out.mkdir(parents=True, exist_ok=True)
  path = out / f"{name}.parquet"
  if not parquet_available():
    path.unlink(missing_ok=True)
    return None
  frame.to_parquet(path, index=False)
  return path


def write_table(frame: pd.DataFrame, out: Path, name: str, *,
                parquet: pd.DataFrame | None = None) -> list[Path]:
  """`name`.csv in `out`, and `name`.parquet where the extra is installed
  (`parquet`: the frame to write there, when it differs)."""
  out.mkdir(parents=True, exist_ok=True)
  csv = out / f"{name}.csv"
  safe_frame(frame).to_csv(csv, index=False)
  path = write_parquet(frame if parquet is None else parquet, out, name)
  return [csv] if path is None else [csv, path]


def _split(name: str) -> tuple[str, str]:
  """"belief.no_smoking" -> ("no_smoking", "belief"); "conflicts" -> ("", ...)."""
  metric, _, target = name.partition(".")
  return target, metric


def long_form(metrics: run_metrics.RunMetrics) -> pd.DataFrame:
  """One run's per-step table, long."""
  frame = metrics.per_step
  values = [c for c in frame.columns if c not in run_metrics.TIME_COLUMNS
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


def per_seed(runs: Iterable[run_metrics.RunMetrics]) -> pd.DataFrame:
  """Run-level numbers of several runs, one row per value."""
  rows = []
  for m in runs:
    for name, value in aggregate.scalars(m.summary).items():
      target, metric = _split(name)
      rows.append({"run": m.run.name, "arm": m.run.arm, "seed": m.run.seed,
                   "target": target, "metric": metric,
                   "value": None if value is None else float(value)})
  return pd.DataFrame(rows, columns=PER_SEED)


def events_frame(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
  """Records as a table: one row each, nested mappings flattened into
  dotted columns; lists (turns, behaviours) kept as they are."""
  if not records:
    return pd.DataFrame(columns=["kind", "step"])
  return pd.json_normalize([dict(r) for r in records], sep=".")


def _missing(value: Any) -> bool:
  return value is None or (isinstance(value, float) and math.isnan(value))


def file_cells(frame: pd.DataFrame) -> pd.DataFrame:
  """A copy whose nested cells (lists, mappings) and text columns of mixed
  types are JSON text: what a CSV cell and a Parquet column can hold."""
  out = frame.copy()
  for column in out.columns:
    if out[column].dtype != object:
      continue
    kinds = {type(v) for v in out[column] if not _missing(v)}
    if len(kinds) > 1 or kinds & {list, tuple, dict}:
      out[column] = [None if _missing(v) else v if isinstance(v, str)
                     else json.dumps(v, ensure_ascii=False)
                     for v in out[column]]
  return out


def write_run(metrics: run_metrics.RunMetrics,
              out_dir: str | Path | None = None) -> Path:
  """A run's per-step and per-hour CSVs, its long table, its events (as
  Parquet) and summary.json; returns the metrics directory
  (RUN_DIR/metrics/)."""
  out = Path(out_dir) if out_dir else metrics.run.path / METRICS
  out.mkdir(parents=True, exist_ok=True)
  safe_frame(metrics.per_step).to_csv(out / PER_STEP_CSV, index=False)
  safe_frame(metrics.per_hour).to_csv(out / PER_HOUR_CSV, index=False)
  write_table(long_form(metrics), out, "long")
  write_parquet(file_cells(events_frame(metrics.run.records)), out,
                EVENTS_TABLE)
  if not metrics.places.empty:
    write_table(metrics.places, out, BY_PLACE)
  if metrics.summary.get("by_model"):  # A run with models by role.
    write_table(pd.DataFrame(metrics.summary["by_model"]), out, "by_model")
  for name, rows in metrics.summary.get("network", {}).items():
    write_table(pd.DataFrame(rows), out, name)  # diffusion_tree, by_distance
  if "say_hold_do" in metrics.summary:  # The run asked its agents.
    write_table(say_hold_do_rows([metrics]), out, say_hold_do.SHD_TABLE)
  if metrics.summary.get("stated_belief"):  # The agents were asked.
    write_table(stated_table_rows(metrics.summary["stated_belief"]), out,
                STATED_CSV)
  (out / SUMMARY_JSON).write_text(
      json.dumps(run_metrics.json_safe(metrics.summary), indent=2,
                 ensure_ascii=False), encoding="utf-8")
  return out


def say_hold_do_rows(runs: Iterable[run_metrics.RunMetrics]) -> pd.DataFrame:
  """The say-hold-do rows of several runs, each named (run, arm, seed)."""
  frames = [m.say_hold_do.assign(run=m.run.name, arm=m.run.arm,
                                 seed=m.run.seed) for m in runs]
  columns = ["run", "arm", "seed", *say_hold_do.COLUMNS]
  frames = [f[columns] for f in frames if not f.empty]
  return (pd.concat(frames, ignore_index=True) if frames
          else pd.DataFrame(columns=columns))


def write_runs(metrics: aggregate.CompareMetrics) -> None:
  """Each run's metrics, in its own run directory."""
  for ms in metrics.runs.values():
    for m in ms:
      write_run(m)


def write_compare(metrics: aggregate.CompareMetrics,
                  out_dir: str | Path | None = None) -> Path:
  """Each run's metrics, then the compare directory's: compare_summary
  (JSON and CSV, one row per arm or "effect" and metric), the per-step
  means, and the tidy tables of every run."""
  write_runs(metrics)
  out = Path(out_dir) if out_dir else metrics.path
  out.mkdir(parents=True, exist_ok=True)
  (out / COMPARE_SUMMARY_JSON).write_text(
      json.dumps(metrics.summary, indent=2, ensure_ascii=False),
      encoding="utf-8")
  safe_frame(metrics.per_step).to_csv(out / COMPARE_PER_STEP_CSV,
                                      index=False)
  rows = []
  for arm, data in metrics.summary["arms"].items():
    for name, stats in data["metrics"].items():
      rows.append({"group": arm, "metric": name,
                   **{k: stats[k] for k in ("n", "mean", "ci_low",
                                            "ci_high")}})
  for name, stats in metrics.summary["effects"].items():
    rows.append({"group": "effect", "metric": name,
                 **{k: stats[k] for k in ("n", "mean", "ci_low", "ci_high")}})
  safe_frame(pd.DataFrame(rows, columns=[
      "group", "metric", "n", "mean", "ci_low", "ci_high"])).to_csv(
          out / COMPARE_SUMMARY_CSV, index=False)
  if (metrics.summary.get("stated_belief") or {}).get("asked"):
    write_table(stated_table_rows(metrics.summary["stated_belief"]), out,
                COMPARE_STATED_CSV)
  runs = [m for ms in metrics.runs.values() for m in ms]
  if "say_hold_do" in metrics.summary:  # Some run asked its agents.
    write_table(say_hold_do_rows(runs), out, say_hold_do.SHD_TABLE)
  write_table(per_seed(runs), out, "compare_per_seed")
  write_table(pd.concat([long_form(m) for m in runs], ignore_index=True)
              if runs else pd.DataFrame(columns=LONG), out, "compare_long")
  return out

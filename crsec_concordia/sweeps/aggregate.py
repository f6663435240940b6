"""A sweep's metrics: per condition over seeds, and each ablation's effect.

Every completed run's metrics are computed as for a compare directory
(crsec_concordia.metrics.measure.aggregate, one call per cell: scenario,
condition and endpoint, with both arms), and then, from the run-level
numbers:

- per cell and arm, each metric's mean over seeds with its 95% t-interval
  (`aggregate.mean_ci`, the same statistics as `crsec compare`);
- per cell, normative - baseline, paired by seed;
- per condition other than the reference (the full architecture, by
  default the first condition), condition - reference for the same
  scenario, endpoint and arm, paired by seed: what switching a module off
  (or changing a threshold) does to conflicts, belief and behaviour.

Tables, in the sweep directory, each as CSV and (with the `parquet` extra)
Parquet:
  sweep_runs      one row per run and metric (the raw numbers)
  sweep_summary   per cell, arm and metric: n, mean, sd, ci_low, ci_high
  sweep_effects   per comparison: the same for paired differences
  sweep_per_step  per cell, arm, step and per-step column: n, mean, CI
  sweep_tipping   the committed-minority tipping curve, when the runs
                  have committed agents (metrics/measure/tipping.py), and
  sweep_tipping_runs  its points, one per run
and sweep_summary.json (cells with their run counts, failed runs, and the
tables' rows).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from crsec_concordia.errors import UserError
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.metrics.measure import aggregate as compare_aggregate
from crsec_concordia.metrics.measure import run_metrics, tipping
from crsec_concordia.metrics.measure.tipping import CELL
from crsec_concordia.metrics.present import tables
from crsec_concordia.rundir import reading as rundir
from crsec_concordia.sweeps import grid

SWEEP_SUMMARY_JSON = "sweep_summary.json"
TABLES = ("sweep_runs", "sweep_summary", "sweep_effects", "sweep_per_step")
STATS = ["n", "mean", "sd", "ci_low", "ci_high"]
TREATMENT = "normative - baseline"
TIPPING = "sweep_tipping"
TIPPING_RUNS = "sweep_tipping_runs"


@dataclasses.dataclass
class SweepMetrics:
  path: Path
  manifest: dict[str, Any]
  cells: dict[tuple[str, str, str], compare_aggregate.CompareMetrics]
  runs: pd.DataFrame
  summary: pd.DataFrame
  effects: pd.DataFrame
  per_step: pd.DataFrame
  reference: str
  # The tipping curve's points (one per run) and the curve; empty for a
  # sweep without a committed minority.
  tipping_runs: pd.DataFrame = dataclasses.field(
      default_factory=lambda: pd.DataFrame(columns=tipping.RUN_COLUMNS))
  tipping: pd.DataFrame = dataclasses.field(
      default_factory=lambda: pd.DataFrame(columns=tipping.CURVE_COLUMNS))

  def tables(self) -> dict[str, pd.DataFrame]:
    out = dict(zip(TABLES, (self.runs, self.summary, self.effects,
                            self.per_step)))
    if not self.tipping_runs.empty:
      out[TIPPING_RUNS] = self.tipping_runs
      out[TIPPING] = self.tipping
    return out


def _finite(value: Any) -> bool:
  return value is not None and not (isinstance(value, float)
                                    and math.isnan(value))


def _stats(values: list[Any], metric: str, difference: bool = False
           ) -> dict[str, Any]:
  out = compare_aggregate.mean_ci(
      values, bounds=compare_aggregate.metric_range(metric, difference))
  return {k: out[k] for k in STATS}


def _paired(frame: pd.DataFrame, treated: dict[str, Any],
            control: dict[str, Any]) -> list[dict[str, Any]]:
  """Per metric, the mean of treated - control over the seeds both have."""
  def pick(where: dict[str, Any]) -> pd.DataFrame:
    rows = frame
    for key, value in where.items():
      rows = rows[rows[key] == value]
    return rows.set_index(["metric", "seed"])["value"]
  a, b = pick(treated), pick(control)
  both = a.index.intersection(b.index)
  out = []
  for metric in sorted({m for m, _ in both}):
    seeds, diffs = [], []
    for seed in sorted(s for m, s in both if m == metric):
      x, y = a[(metric, seed)], b[(metric, seed)]
      if _finite(x) and _finite(y):
        diffs.append(float(x) - float(y))
        seeds.append(int(seed))
    if diffs:
      out.append({"metric": metric, **_stats(diffs, metric, True),
                  "seeds": seeds})
  return out


def _load(path: Path) -> tuple[dict[str, Any], list[grid.RunSpec]]:
  data = grid.read_manifest(path)
  if data is None:
    raise UserError(f"{path} is not a sweep directory (no readable "
                    f"{grid.SWEEP_JSON}); pass one written by `crsec sweep`")
  return data, grid.runs_of(data)


def aggregate_sweep(path: str | Path,
                    matcher_factory: Callable[[rundir.Run], NormMatcher]
                    | None = None) -> SweepMetrics:
  """Metrics of every completed run of the sweep at `path`, aggregated."""
  path = Path(path)
  data, runs = _load(path)
  cells = _cells(path, data, runs)
  by_cell, runs_frame, per_step = _measure(path, cells, matcher_factory)
  reference = str(data.get("reference") or next(iter(
      data.get("spec", {}).get("conditions") or {"full": None})))
  points = tipping.points(by_cell)
  return SweepMetrics(path=path, manifest=data, cells=by_cell,
                      runs=runs_frame, summary=_summary(runs_frame),
                      effects=_effects(runs_frame, cells, reference),
                      per_step=per_step, reference=reference,
                      tipping_runs=points, tipping=tipping.curve(points))


Cells = dict[tuple[str, str, str], dict[str, list[grid.RunSpec]]]


def _cells(path: Path, data: dict[str, Any],
           runs: list[grid.RunSpec]) -> Cells:
  """The completed runs, by cell and arm."""
  status = {r["id"]: r.get("status") for r in data["runs"]}
  cells: Cells = {}
  for run in runs:
    if status.get(run.id) == "completed" and rundir.is_run_dir(
        path / run.run_dir):
      cells.setdefault(run.cell, {}).setdefault(run.arm, []).append(run)
  if not cells:
    raise UserError(f"{path / grid.SWEEP_JSON} has no completed run to "
                    "aggregate; run `crsec sweep` again")
  return cells


def _measure(path: Path, cells: Cells,
             matcher_factory: Callable[[rundir.RunData], NormMatcher] | None
             ) -> tuple[dict[tuple[str, str, str],
                             compare_aggregate.CompareMetrics],
                        pd.DataFrame, pd.DataFrame]:
  """Each cell's runs measured: (the cells' metrics, one row per run and
  scalar metric, the per-step table of every cell)."""
  by_cell: dict[tuple[str, str, str], compare_aggregate.CompareMetrics] = {}
  rows, steps = [], []
  for cell, arms in cells.items():
    seeds = sorted({r.seed for rs in arms.values() for r in rs})
    metrics = compare_aggregate.aggregate_runs(
        path, {arm: [path / r.run_dir for r in rs] for arm, rs in arms.items()},
        {"scenario": cell[0], "seeds": seeds}, matcher_factory)
    by_cell[cell] = metrics
    ids = {(r.arm, r.seed): r.id for rs in arms.values() for r in rs}
    for arm, ms in metrics.runs.items():
      for m in ms:
        for name, value in compare_aggregate.scalars(m.summary).items():
          rows.append({"id": ids.get((arm, m.run.seed)),
                       **dict(zip(CELL, cell)), "arm": arm,
                       "seed": m.run.seed, "metric": name,
                       "value": float(value) if _finite(value) else None})
    frame = metrics.per_step.copy()
    for key, value in zip(CELL, cell):
      frame.insert(0, key, value)
    steps.append(frame)
  runs_frame = pd.DataFrame(rows, columns=["id", *CELL, "arm", "seed",
                                           "metric", "value"])
  per_step = (pd.concat(steps, ignore_index=True) if steps else
              pd.DataFrame())
  return by_cell, runs_frame, per_step


def _summary(runs_frame: pd.DataFrame) -> pd.DataFrame:
  """Each metric's mean and interval per cell and arm."""
  summary = []
  for keys, group in runs_frame.groupby([*CELL, "arm", "metric"], sort=True):
    summary.append({**dict(zip([*CELL, "arm", "metric"], keys)),
                    **_stats(group["value"].tolist(), keys[-1])})
  return pd.DataFrame(summary, columns=[*CELL, "arm", "metric", *STATS])


def _effects(runs_frame: pd.DataFrame, cells: Cells,
             reference: str) -> pd.DataFrame:
  """Paired effects: normative - baseline in every cell, and each other
  condition - the reference, per arm."""
  effects = []
  for cell in sorted(cells):
    scenario, condition, endpoint = cell
    where = dict(zip(CELL, cell))
    for row in _paired(runs_frame, {**where, "arm": "normative"},
                       {**where, "arm": "baseline"}):
      effects.append({**where, "comparison": TREATMENT, "arm": "",
                      **row})
    if condition == reference:
      continue
    ref = {"scenario": scenario, "condition": reference,
           "endpoint": endpoint}
    for arm in sorted(cells[cell]):
      for row in _paired(runs_frame, {**where, "arm": arm},
                         {**ref, "arm": arm}):
        effects.append({**where, "comparison": f"{condition} - {reference}",
                        "arm": arm, **row})
  return pd.DataFrame(effects, columns=[*CELL, "comparison", "arm",
                                        "metric", *STATS, "seeds"])


def cell_counts(metrics: SweepMetrics) -> list[dict[str, Any]]:
  """Per cell: completed runs per arm, seeds, and failed runs."""
  failed: dict[tuple[str, str, str], int] = {}
  for r in metrics.manifest["runs"]:
    if r.get("status") == "failed":
      key = (r["scenario"], r["condition"], r["endpoint"])
      failed[key] = failed.get(key, 0) + 1
  out = []
  for cell, cm in sorted(metrics.cells.items()):
    out.append({**dict(zip(CELL, cell)),
                "runs": {arm: len(ms) for arm, ms in cm.runs.items()},
                "seeds": sorted({m.run.seed for ms in cm.runs.values()
                                 for m in ms}),
                "failed": failed.get(cell, 0)})
  return out


def write(metrics: SweepMetrics, out_dir: str | Path | None = None) -> Path:
  """Each run's metrics, the tables as CSV and Parquet, and
  sweep_summary.json."""
  for cell in metrics.cells.values():
    tables.write_runs(cell)
  out = Path(out_dir) if out_dir else metrics.path
  out.mkdir(parents=True, exist_ok=True)
  for name, frame in metrics.tables().items():
    parquet = frame.copy()
    for column in ("seeds", "values"):  # Lists: Parquet takes them, CSV
      if column in parquet:             # shows them.
        parquet[column] = parquet[column].map(list)
    tables.write_table(frame, out, name, parquet=parquet)
  failed = [{k: r.get(k) for k in ("id", *CELL, "arm", "seed", "error")}
            for r in metrics.manifest["runs"] if r.get("status") == "failed"]
  summary = {
      "name": metrics.manifest.get("name"), "confidence": 0.95,
      "reference": metrics.reference,
      "effects": f"{TREATMENT}, and condition - reference, paired by seed",
      "cells": cell_counts(metrics), "failed": failed,
      "summary": metrics.summary.to_dict(orient="records"),
      "effects_table": metrics.effects.to_dict(orient="records"),
  }
  if not metrics.tipping.empty:
    summary["tipping"] = {"interval": tipping.INTERVAL,
                          "curve": metrics.tipping.to_dict(orient="records")}
  (out / SWEEP_SUMMARY_JSON).write_text(json.dumps(
      run_metrics.json_safe(summary), indent=2, ensure_ascii=False),
                                  encoding="utf-8")
  return out


def key_metrics(metrics: SweepMetrics) -> list[str]:
  """Conflicts, then belief and behaviour at the end per target norm."""
  names = set(metrics.summary["metric"])
  keys = ["conflicts_total"]
  keys += sorted(n for n in names if n.startswith("belief_final."))
  keys += sorted(n for n in names if n.startswith("behaviour_final."))
  keys += ["norm_conversations_total", "llm_calls_total", "tokens_total"]
  return [k for k in keys if k in names]


def headline(metrics: SweepMetrics) -> list[str]:
  """A few lines for the terminal: ablation and treatment effects."""
  def fmt(row: Any) -> str:
    if row["mean"] is None or not _finite(row["mean"]):
      return "n/a"
    if not _finite(row["ci_low"]):
      return f"{row['mean']:.2f} (n={row['n']})"
    return (f"{row['mean']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
            f" (n={row['n']})")
  keys = set(key_metrics(metrics)) - {"llm_calls_total", "tokens_total",
                                      "norm_conversations_total"}
  lines = []
  for _, row in metrics.effects.iterrows():
    if row["metric"] in keys and row["arm"] in ("", "normative"):
      lines.append(f"{row['scenario']}/{row['condition']}/{row['endpoint']}"
                   f" {row['comparison']} {row['metric']}: {fmt(row)}")
  for _, row in tipping.adopted(metrics.tipping).iterrows():
    lines.append(f"{row['scenario']}/{row['condition']}/{row['endpoint']} "
                 f"tipping: committed {100 * row['minority_share']:.0f}%, "
                 f"others holding and following its norm: {fmt(row)}")
  return lines

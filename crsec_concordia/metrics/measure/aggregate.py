"""Aggregating runs over seeds: means, 95% CIs and the treatment effect.

For each arm and metric, the mean over seeds with a 95% confidence interval
from the t-distribution (mean +- t(0.975, n-1) * sd / sqrt(n)); with one
seed there is no interval (null). Seeds whose value is missing (a baseline's
belief, a level never reached) are left out and `n` says how many counted.

The treatment effect is normative minus baseline, paired by seed (both arms
ran on the same seeds): the mean of the per-seed differences with its t
interval. `CompareMetrics.summary` holds, per arm, {metric: {mean,
ci_low, ci_high, n, values}} and the effects {metric: {...}};
`per_step` per arm, step and per-step column: n, mean, CI.
metrics/present/tables.py writes them (compare_summary.json and the
compare_* tables).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.metrics.measure import run_metrics, stated_shares
from crsec_concordia.metrics.measure import say_hold_do, say_hold_table
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.format import ARMS
from crsec_concordia.rundir.reading import Run

MatcherFactory = Callable[[Run], NormMatcher]


# Metrics that are shares of agents (0..1) and the belief-behaviour gap
# (-1..1), by the part of their name before the target id; every other
# metric is a count, a number of tokens or minutes (>= 0).
_SHARES = ("belief", "behaviour", "plan")
_GAPS = ("gap",)


def metric_range(metric: str, difference: bool = False
                 ) -> tuple[float | None, float | None]:
  """The values `metric` can take (of a paired difference, with
  `difference`): where a confidence interval is cut, since the mean cannot
  lie outside. With 2 or 3 seeds a t-interval easily reaches below zero
  conflicts or above every agent."""
  head = metric.split(".", 1)[0]
  if head.startswith(_SHARES):
    return (-1.0, 1.0) if difference else (0.0, 1.0)
  if head.startswith(_GAPS):
    return (-2.0, 2.0) if difference else (-1.0, 1.0)
  return (None, None) if difference else (0.0, None)


def mean_ci(values: Sequence[float | None], confidence: float = 0.95,
            bounds: tuple[float | None, float | None] = (None, None)
            ) -> dict[str, Any]:
  """Mean and t-interval of the finite values, cut to `bounds`
  (`metric_range`)."""
  finite = [float(v) for v in values
            if v is not None and not math.isnan(float(v))]
  n = len(finite)
  out: dict[str, Any] = {"mean": None, "ci_low": None, "ci_high": None,
                         "sd": None, "n": n}
  if not n:
    return out
  mean = float(np.mean(finite))
  out["mean"] = mean
  if n >= 2:
    sd = float(np.std(finite, ddof=1))
    half = (float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd
            / math.sqrt(n))
    low, high = mean - half, mean + half
    if bounds[0] is not None:
      low = max(low, bounds[0])
    if bounds[1] is not None:
      high = min(high, bounds[1])
    out.update(sd=sd, ci_low=low, ci_high=high)
  return out


def scalars(summary: dict[str, Any]) -> dict[str, float | None]:
  """The run-level numbers that are compared across arms, flat."""
  totals = summary.get("totals", {})
  out: dict[str, float | None] = {
      f"{name}_total": totals.get(name)
      for name in ("conflicts", "conversations", "norm_conversations",
                   "thoughts", "norm_thoughts", "llm_calls")}
  prompt, completion = totals.get("prompt_tokens"), totals.get(
      "completion_tokens")
  out["tokens_total"] = (None if prompt is None or completion is None
                         else prompt + completion)
  out["actions_total"] = summary.get("actions")
  out["emergent_norms"] = float(len(summary.get("emergent_norms") or []))
  for target_id, t in (summary.get("targets") or {}).items():
    for measure, value in (t.get("final") or {}).items():
      out[f"{measure}_final.{target_id}"] = value
    out[f"behaviour_mean.{target_id}"] = t.get("mean_behaviour")
    for name in ("conflicts", "violations", "conversations"):
      out[f"{name}.{target_id}"] = t.get(name)
    for measure in ("belief", "behaviour"):
      for level, hit in (t.get("time_to", {}).get(measure) or {}).items():
        out[f"minutes_to_{level.rstrip('%')}_{measure}.{target_id}"] = (
            hit["elapsed_minutes"] if hit else None)
  return out


@dataclasses.dataclass
class CompareMetrics:
  path: Path
  runs: dict[str, list[run_metrics.RunMetrics]]
  per_step: pd.DataFrame       # long: arm, step, time, elapsed, metric, ...
  summary: dict[str, Any]


def _per_step(arm: str, metrics: list[run_metrics.RunMetrics]
              ) -> list[dict[str, Any]]:
  frames = []
  for m in metrics:
    frame = m.per_step.copy()
    frame["seed"] = m.run.seed
    frames.append(frame)
  if not frames:
    return []
  data = pd.concat(frames, ignore_index=True)
  value_columns = [c for c in data.columns
                   if c not in run_metrics.TIME_COLUMNS and c != "seed"
                   and pd.api.types.is_numeric_dtype(data[c])]
  rows = []
  for step, group in data.groupby("step", sort=True):
    first = group.iloc[0]
    for column in value_columns:
      stats = mean_ci(group[column].tolist(), bounds=metric_range(column))
      rows.append({"arm": arm, "step": int(step), "time": first["time"],
                   "elapsed_minutes": int(first["elapsed_minutes"]),
                   "metric": column, "n": stats["n"], "mean": stats["mean"],
                   "ci_low": stats["ci_low"], "ci_high": stats["ci_high"]})
  return rows


def aggregate(path: str | Path,
              matcher_factory: MatcherFactory | None = None
              ) -> CompareMetrics:
  """Computes each run's metrics and aggregates them per arm and effect."""
  compare = reading.read_compare(path)
  return aggregate_runs(compare.path, compare.runs, compare.manifest,
                        matcher_factory)


def aggregate_runs(path: Path, run_dirs: dict[str, list[Path]],
                   manifest: dict[str, Any],
                   matcher_factory: MatcherFactory | None = None
                   ) -> CompareMetrics:
  """`aggregate` of run directories grouped by arm (a compare directory's,
  or one cell of a sweep: crsec_concordia/sweeps/aggregate.py)."""
  runs: dict[str, list[run_metrics.RunMetrics]] = {}
  for arm, dirs in run_dirs.items():
    for d in dirs:
      run = reading.read_run(d)
      matcher = matcher_factory(run) if matcher_factory else None
      runs.setdefault(arm, []).append(run_metrics.compute(run, matcher))
  per_arm: dict[str, dict[str, dict[int | None, float | None]]] = {}
  arms_out: dict[str, Any] = {}
  for arm, metrics in runs.items():
    values: dict[str, dict[int | None, float | None]] = {}
    for m in metrics:
      for name, value in scalars(m.summary).items():
        values.setdefault(name, {})[m.run.seed] = value
    per_arm[arm] = values
    arms_out[arm] = {
        "seeds": [m.run.seed for m in metrics],
        "runs": [str(m.run.path) for m in metrics],
        "metrics": {name: {**mean_ci(list(v.values()),
                                     bounds=metric_range(name)),
                           "values": list(v.values())}
                    for name, v in sorted(values.items())}}
  effects: dict[str, Any] = {}
  if "normative" in per_arm and "baseline" in per_arm:
    treated, control = per_arm["normative"], per_arm["baseline"]
    for name in sorted(set(treated) & set(control)):
      diffs, seeds = [], []
      for seed, value in treated[name].items():
        other = control[name].get(seed)
        if value is None or other is None:
          continue
        if math.isnan(float(value)) or math.isnan(float(other)):
          continue
        diffs.append(float(value) - float(other))
        seeds.append(seed)
      if diffs:
        effects[name] = {**mean_ci(diffs, bounds=metric_range(name, True)),
                         "values": diffs, "seeds": seeds}
  rows = []
  for arm in runs:
    rows.extend(_per_step(arm, runs[arm]))
  per_step = pd.DataFrame(rows, columns=["arm", "step", "time",
                                         "elapsed_minutes", "metric", "n",
                                         "mean", "ci_low", "ci_high"])
  summary: dict[str, Any] = {
      "scenario": manifest.get("scenario"),
      "seeds": manifest.get("seeds"),
      "confidence": 0.95,
      "effect": "normative - baseline, paired by seed",
      "arms": arms_out,
      "effects": effects,
      "failed": manifest.get("failed", []),
      "stated_belief": stated_shares.stated_block(
          {arm: [m.stated for m in ms if m.stated is not None]
           for arm, ms in runs.items()}),
  }
  if any(say_hold_do.asked(m.run) for ms in runs.values() for m in ms):
    # Only when a run asked its agents their rules: per arm, runs pooled.
    summary["say_hold_do"] = {arm: say_hold_table.block(
        [m.say_hold_do for m in ms]) for arm, ms in runs.items()}
  return CompareMetrics(path=path, runs=runs, per_step=per_step,
                        summary=run_metrics.json_safe(summary))

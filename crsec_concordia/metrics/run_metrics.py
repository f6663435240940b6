"""All metrics of one run: per-step and per-hour tables and a summary.

`compute(run)` returns RunMetrics; `write(metrics, out_dir)` exports
  metrics/per_step.csv   one row per step (quiet steps included)
  metrics/per_hour.csv   one row per simulated hour: counts summed, shares
                         as at the hour's last step
  metrics/long.{csv,parquet}  the per-step numbers long (tables.py)
  metrics/summary.json   totals, final shares, time to 50/90/100%, the
                         belief-behaviour lag, emergent norms, diffusion
                         edges, LLM usage per module, the matcher used
Per-target columns are named "<measure>.<target id>". docs/metrics.md
defines every column.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsec_concordia.metrics import activity, adoption, corrected, diffusion
from crsec_concordia.metrics import emergent
from crsec_concordia.metrics import rundir, timeline, usage
from crsec_concordia.metrics.csv_cells import safe_frame
from crsec_concordia.metrics.matching import NormMatcher

LEVELS = (0.5, 0.9, 1.0)
COUNT_COLUMNS = ("conflicts", "conversations", "norm_conversations",
                 "thoughts", "norm_thoughts", "llm_calls", "prompt_tokens",
                 "completion_tokens")
COUNT_PREFIXES = ("conflicts.", "conversations.", "thoughts.", "violations.",
                  "compliances.")


@dataclasses.dataclass
class RunMetrics:
  run: rundir.RunData
  per_step: pd.DataFrame
  per_hour: pd.DataFrame
  summary: dict[str, Any]
  # Per-agent states for pooling corrected shares over runs (corrected.py):
  # {"belief": {id: [per step]}, "behaviour": {...}, "norms": [per step]}.
  agent_flags: dict[str, Any] = dataclasses.field(default_factory=dict)
  rates: dict[str, Any] = dataclasses.field(default_factory=dict)


def _level_key(level: float) -> str:
  return f"{int(round(level * 100))}%"


def _finite(value: Any) -> float | None:
  try:
    value = float(value)
  except (TypeError, ValueError):
    return None
  return None if math.isnan(value) else value


def _peak(values: list[float]) -> float | None:
  finite = [v for v in values if _finite(v) is not None]
  return max(finite) if finite else None


def _last(values: list[float]) -> float | None:
  return _finite(values[-1]) if values else None


def compute(run: rundir.RunData, matcher: NormMatcher | None = None
            ) -> RunMetrics:
  """Computes every metric of `run` (see docs/metrics.md)."""
  if matcher is None:
    matcher = NormMatcher(run.targets)
  steps = timeline.run_steps(run)
  times = timeline.step_times(run, steps)
  ordered = [times[s] for s in steps]
  columns: dict[str, list[Any]] = {
      "step": steps, "day": [t.day for t in ordered],
      "clock": [t.clock for t in ordered], "time": [t.label for t in ordered],
      "elapsed_minutes": [t.elapsed for t in ordered],
      "hour": [t.hour for t in ordered]}
  totals, per_target = activity.counts(run, steps, matcher)
  columns.update(totals)
  columns.update(activity.llm_per_step(run, steps))
  beliefs = adoption.belief(run, steps, matcher)
  behaviours = adoption.behaviour(run, steps, matcher, flags=True)
  plans = adoption.plans(run, steps, matcher)
  for t in matcher.targets:
    columns[f"belief.{t.id}"] = beliefs["share"][t.id]
    for measure, values in behaviours.items():
      if measure == "flags":
        continue
      columns[f"{measure}.{t.id}"] = values[t.id]
    for measure, values in plans.items():
      columns[f"{measure}.{t.id}"] = values[t.id]
    columns[f"gap.{t.id}"] = list(
        np.array(beliefs["share"][t.id], dtype=float)
        - np.array(behaviours["behaviour"][t.id], dtype=float))
    for measure, values in per_target.items():
      columns[f"{measure}.{t.id}"] = values[t.id]
  rates = corrected.measured_rates(run, matcher)
  columns.update(corrected.per_step_columns(beliefs, behaviours, rates))
  per_step = pd.DataFrame(columns)
  per_hour = _per_hour(per_step)

  targets_summary = {}
  for t in matcher.targets:
    time_to: dict[str, dict[str, Any]] = {}
    for measure in ("belief", "behaviour", "behaviour_observed",
                    "behaviour_nonviolating", "plan"):
      values = columns[f"{measure}.{t.id}"]
      time_to[measure] = {_level_key(level): timeline.time_to(values, ordered,
                                                              level)
                          for level in LEVELS}
    lag = {}
    for level in LEVELS:
      key = _level_key(level)
      b, a = time_to["belief"][key], time_to["behaviour"][key]
      lag[key] = (a["elapsed_minutes"] - b["elapsed_minutes"]
                  if a and b else None)
    behaviour_values = np.array(columns[f"behaviour.{t.id}"], dtype=float)
    targets_summary[t.id] = {
        "text": t.text, "type": t.type,
        "complies": list(t.complies), "violates": list(t.violates),
        "final": {m: _last(columns[f"{m}.{t.id}"])
                  for m in ("belief", "behaviour", "behaviour_observed",
                            "behaviour_nonviolating", "plan",
                            "plan_observed", "gap")},
        "peak_belief": _peak(columns[f"belief.{t.id}"]),
        "mean_behaviour": _finite(behaviour_values.mean())
                          if len(behaviour_values) else None,
        "time_to": time_to,
        "behaviour_lag_minutes": lag,
        "conflicts": int(sum(columns[f"conflicts.{t.id}"])),
        "conversations": int(sum(columns[f"conversations.{t.id}"])),
        "violations": int(sum(columns[f"violations.{t.id}"])),
        "holders": beliefs["holders"][t.id],
    }
  summary = {
      "run": {"path": str(run.path), "scenario": run.scenario.get("name"),
              "arm": run.arm, "seed": run.seed,
              "status": run.run.get("status"),
              "completed_steps": run.run.get("completed_steps"),
              "max_steps": run.run.get("max_steps"),
              "model": run.run.get("model")},
      "agents": run.agents,
      "roles": run.roles,
      "steps": {"first": steps[0] if steps else None,
                "last": steps[-1] if steps else None,
                "count": len(steps),
                "minutes_per_step": run.clock.minutes_per_step},
      "has_norms": run.has_norms,
      "totals": {c: _finite(np.nansum(columns[c])) if steps else 0.0
                 for c in COUNT_COLUMNS},
      "actions": len(run.of_kind("action")),
      "failures": len(run.of_kind("failure")),
      "targets": targets_summary,
      "emergent_norms": emergent.emergent_norms(run, matcher),
      "diffusion": diffusion.edges(run, matcher),
      "usage": usage.summarize(run.usage),
      "matcher": matcher.describe(),
      "correction": corrected.summary_block(rates, beliefs, behaviours),
  }
  if all(math.isnan(v) for v in columns["llm_calls"]):
    for c in ("llm_calls", "prompt_tokens", "completion_tokens"):
      summary["totals"][c] = None
  return RunMetrics(run=run, per_step=per_step, per_hour=per_hour,
                    summary=summary, rates=rates, agent_flags={
                        "belief": beliefs["flags"],
                        "behaviour": behaviours.get("flags", {}),
                        "norms": beliefs["norms"]})


def _per_hour(per_step: pd.DataFrame) -> pd.DataFrame:
  if per_step.empty:
    return pd.DataFrame(columns=["hour", "day", "first_step", "last_step"])
  rows = []
  for hour, group in per_step.groupby("hour", sort=False):
    row: dict[str, Any] = {"hour": hour, "day": int(group["day"].iloc[0]),
                           "first_step": int(group["step"].iloc[0]),
                           "last_step": int(group["step"].iloc[-1]),
                           "elapsed_minutes": int(group["elapsed_minutes"]
                                                  .iloc[0])}
    for column in per_step.columns:
      if column in ("step", "day", "clock", "time", "elapsed_minutes", "hour"):
        continue
      if column in COUNT_COLUMNS or column.startswith(COUNT_PREFIXES):
        row[column] = group[column].sum(min_count=1)
      else:
        row[column] = group[column].iloc[-1]
    rows.append(row)
  return pd.DataFrame(rows)


def _json_safe(value: Any) -> Any:
  if isinstance(value, dict):
    return {str(k): _json_safe(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_json_safe(v) for v in value]
  if isinstance(value, (np.integer,)):
    return int(value)
  if isinstance(value, (float, np.floating)):
    return None if math.isnan(value) or math.isinf(value) else float(value)
  return value


def write(metrics: RunMetrics, out_dir: str | Path | None = None) -> Path:
  """Writes the CSVs and summary.json; returns the metrics directory."""
  out = Path(out_dir) if out_dir else metrics.run.path / "metrics"
  out.mkdir(parents=True, exist_ok=True)
  safe_frame(metrics.per_step).to_csv(out / "per_step.csv", index=False)
  safe_frame(metrics.per_hour).to_csv(out / "per_hour.csv", index=False)
  from crsec_concordia.metrics import tables  # pylint: disable=import-outside-toplevel
  tables.write(tables.long_form(metrics), out, "long")
  (out / "summary.json").write_text(
      json.dumps(_json_safe(metrics.summary), indent=2, ensure_ascii=False),
      encoding="utf-8")
  return out


def json_safe(value: Any) -> Any:
  """NaN -> null, numpy scalars -> Python, recursively."""
  return _json_safe(value)

"""All metrics of one run: per-step and per-hour tables and a summary.

`compute(run)` measures a run (activity.py, adoption.py, emergent.py,
diffusion.py, usage.py, and the corrected shares of
metrics/classifiers/corrected.py) and tables it as RunMetrics:
  per_step   one row per step (quiet steps included)
  per_hour   one row per simulated hour: counts summed, shares as at the
             hour's last step
  summary    totals, final shares, time to 50/90/100%, the belief-behaviour
             lag, emergent norms, diffusion edges, LLM usage per module, the
             matcher used
  places     for a run of several places or of groups (places.py): per
             step, place or group and target, belief and behaviour; the
             summary's `places` block has the last step's shares and the
             norms carried between places (absent for a one-room run)
Per-target columns are named "<measure>.<target id>"; docs/metrics.md
defines every column. metrics/present/tables.py writes them to files.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from crsec_concordia.metrics.classifiers import corrected
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.metrics.measure import activity, adoption, diffusion, ties
from crsec_concordia.metrics.measure import by_model, interventions
from crsec_concordia.metrics.measure import emergent, places, timeline, usage
from crsec_concordia.metrics.measure import say_hold_do, say_hold_table
from crsec_concordia.metrics.measure import stated_shares
from crsec_concordia.rundir.format import ACTION, FAILURE, INTERVENTION
from crsec_concordia.rundir.reading import Run
from crsec_concordia.scenarios import TargetNorm

LEVELS = (0.5, 0.9, 1.0)
TIME_COLUMNS = ("step", "day", "clock", "time", "elapsed_minutes", "hour")
COUNT_COLUMNS = ("conflicts", "conversations", "norm_conversations",
                 "thoughts", "norm_thoughts", "llm_calls", "prompt_tokens",
                 "completion_tokens")
COUNT_PREFIXES = ("conflicts.", "conversations.", "thoughts.", "violations.",
                  "compliances.")
# The shares whose time to 50/90/100% the summary gives, and those whose
# value at the end it gives.
_TIMED = ("belief", "behaviour", "behaviour_observed",
          "behaviour_nonviolating", "plan")
_FINAL = (*_TIMED, "plan_observed", "gap")


@dataclasses.dataclass
class RunMetrics:
  run: Run
  per_step: pd.DataFrame
  per_hour: pd.DataFrame
  summary: dict[str, Any]
  # Per-agent states for pooling corrected shares over runs (corrected.py):
  # {"belief": {id: [per step]}, "behaviour": {...}, "norms": [per step]}.
  agent_flags: dict[str, Any] = dataclasses.field(default_factory=dict)
  rates: dict[str, Any] = dataclasses.field(default_factory=dict)
  # Adoption per place and group (places.ADOPTION_COLUMNS); empty for a
  # one-room run.
  places: pd.DataFrame = dataclasses.field(
      default_factory=lambda: pd.DataFrame(columns=places.ADOPTION_COLUMNS))
  # Say, hold, do per agent and target (say_hold_do.COLUMNS).
  say_hold_do: pd.DataFrame = dataclasses.field(
      default_factory=lambda: pd.DataFrame(columns=say_hold_do.COLUMNS))
  # The rules the agents stated at the start and the end, read by the
  # matcher (stated_shares.py); None when not measured.
  stated: stated_shares.StatedRun | None = None


@dataclasses.dataclass(frozen=True)
class _Measured:
  """What the measures give for one run, before it is tabled."""
  counts: dict[str, list[float]]               # activity, run-wide
  per_target: dict[str, dict[str, list[float]]]  # activity, per target
  llm: dict[str, list[float]]
  beliefs: dict[str, Any]
  behaviours: dict[str, Any]
  plans: dict[str, Any]


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


def compute(run: Run, matcher: NormMatcher | None = None) -> RunMetrics:
  """Computes every metric of `run` (see docs/metrics.md)."""
  if matcher is None:
    matcher = NormMatcher(run.targets, behaviours=run.behaviours)
  steps = timeline.run_steps(run)
  times = timeline.step_times(run, steps)
  ordered = [times[s] for s in steps]
  measured = _measure(run, steps, matcher)
  columns = _time_columns(ordered)
  columns.update(measured.counts)
  columns.update(measured.llm)
  columns.update(_target_columns(matcher.targets, measured))
  rates = corrected.measured_rates(run, matcher)
  columns.update(corrected.per_step_columns(measured.beliefs,
                                            measured.behaviours, rates))
  per_step = pd.DataFrame(columns)
  summary = _summary(run, matcher, columns, ordered, measured, rates)
  by_place = _places(run, steps, measured, summary)
  agents = say_hold_do.agent_table(run, matcher, rates)
  if say_hold_do.asked(run):
    # Only when the run asked its agents their rules: a run without keeps
    # the summary it had.
    summary["say_hold_do"] = say_hold_table.block([agents])
  stated = stated_shares.stated_run(run, matcher)
  if stated.asked:
    # Only where the agents were asked: a run without keeps its summary.
    summary["stated_belief"] = json_safe(
        stated_shares.stated_block({run.arm: [stated]}))
  return RunMetrics(
      run=run, per_step=per_step, per_hour=_per_hour(per_step),
      summary=summary, places=by_place, say_hold_do=agents, stated=stated,
      rates=rates, agent_flags={
          "belief": measured.beliefs["flags"],
          "behaviour": measured.behaviours.get("flags", {}),
          "norms": measured.beliefs["norms"]})


def _measure(run: Run, steps: Sequence[int], matcher: NormMatcher
             ) -> _Measured:
  counts, per_target = activity.counts(run, steps, matcher)
  return _Measured(
      counts=counts, per_target=per_target,
      llm=activity.llm_per_step(run, steps),
      beliefs=adoption.belief(run, steps, matcher),
      behaviours=adoption.behaviour(run, steps, matcher, flags=True),
      plans=adoption.plans(run, steps, matcher))


def _places(run: Run, steps: Sequence[int], m: _Measured,
            summary: dict[str, Any]) -> pd.DataFrame:
  """Adoption per place and group, and the summary's `places` block, for
  a run of several places or of groups; an empty table for one room."""
  if not places.is_town(run):
    return pd.DataFrame(columns=places.ADOPTION_COLUMNS)
  where = places.positions(run, steps)
  frame = places.adoption_by_place(run, steps, m.beliefs["flags"],
                                   m.behaviours.get("flags", {}), where)
  times = timeline.step_times(run, steps)
  carried = places.carried(run, steps, m.beliefs["flags"], where)
  for row in carried:
    row["time"] = times[row["step"]].label
  summary["places"] = {
      "places": places.declared_places(run.scenario),
      "groups": places.groups(run),
      "committed": sorted(places.committed(run)),
      "final": places.final(frame), "carried": carried}
  return frame


def _time_columns(ordered: Sequence[timeline.StepTime]
                  ) -> dict[str, list[Any]]:
  return {"step": [t.step for t in ordered], "day": [t.day for t in ordered],
          "clock": [t.clock for t in ordered],
          "time": [t.label for t in ordered],
          "elapsed_minutes": [t.elapsed for t in ordered],
          "hour": [t.hour for t in ordered]}


def _target_columns(targets: Sequence[TargetNorm], m: _Measured
                    ) -> dict[str, list[Any]]:
  """Per target, in order: belief, behaviour, plan, gap, activity."""
  columns: dict[str, list[Any]] = {}
  for t in targets:
    columns[f"belief.{t.id}"] = m.beliefs["share"][t.id]
    for measure, values in m.behaviours.items():
      if measure == "flags":
        continue
      columns[f"{measure}.{t.id}"] = values[t.id]
    for measure, values in m.plans.items():
      columns[f"{measure}.{t.id}"] = values[t.id]
    columns[f"gap.{t.id}"] = list(
        np.array(m.beliefs["share"][t.id], dtype=float)
        - np.array(m.behaviours["behaviour"][t.id], dtype=float))
    for measure, values in m.per_target.items():
      columns[f"{measure}.{t.id}"] = values[t.id]
  return columns


def _target_summary(t: TargetNorm, columns: dict[str, list[Any]],
                    ordered: Sequence[timeline.StepTime],
                    holders: dict[str, list[str]]) -> dict[str, Any]:
  """A target's block of the summary: final shares, times to adoption."""
  time_to = {measure: {_level_key(level): timeline.time_to(
      columns[f"{measure}.{t.id}"], ordered, level) for level in LEVELS}
             for measure in _TIMED}
  lag = {}
  for level in LEVELS:
    key = _level_key(level)
    b, a = time_to["belief"][key], time_to["behaviour"][key]
    lag[key] = (a["elapsed_minutes"] - b["elapsed_minutes"]
                if a and b else None)
  behaviour_values = np.array(columns[f"behaviour.{t.id}"], dtype=float)
  return {
      "text": t.text, "type": t.type,
      "complies": list(t.complies), "violates": list(t.violates),
      "final": {m: _last(columns[f"{m}.{t.id}"]) for m in _FINAL},
      "peak_belief": _peak(columns[f"belief.{t.id}"]),
      "mean_behaviour": _finite(behaviour_values.mean())
                        if len(behaviour_values) else None,
      "time_to": time_to,
      "behaviour_lag_minutes": lag,
      "conflicts": int(sum(columns[f"conflicts.{t.id}"])),
      "conversations": int(sum(columns[f"conversations.{t.id}"])),
      "violations": int(sum(columns[f"violations.{t.id}"])),
      "holders": holders,
  }


def _summary(run: Run, matcher: NormMatcher, columns: dict[str, list[Any]],
             ordered: Sequence[timeline.StepTime], m: _Measured,
             rates: dict[str, Any]) -> dict[str, Any]:
  steps = columns["step"]
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
      "actions": len(run.of_kind(ACTION)),
      "failures": len(run.of_kind(FAILURE)),
      "targets": {t.id: _target_summary(t, columns, ordered,
                                        m.beliefs["holders"][t.id])
                  for t in matcher.targets},
      "emergent_norms": emergent.emergent_norms(run, matcher),
      "diffusion": diffusion.edges(run, matcher),
      "usage": usage.usage_summary(run.usage),
      "matcher": matcher.describe(),
      "correction": corrected.summary_block(rates, m.beliefs, m.behaviours),
  }
  if all(math.isnan(v) for v in columns["llm_calls"]):
    for c in ("llm_calls", "prompt_tokens", "completion_tokens"):
      summary["totals"][c] = None
  if run.run.get("models"):
    # Only with models by role: a one-model run keeps the summary it had.
    summary["by_model"] = by_model.model_rows(run, matcher)
  if run.of_kind(INTERVENTION):
    # Only with interventions: a run without keeps the summary it had.
    summary["interventions"] = interventions.windows(
        run, pd.DataFrame(columns), [t.id for t in matcher.targets])
  if run.scenario.get("network"):
    # Only with social ties: a run without keeps the summary it had.
    summary["network"] = {"diffusion_tree": diffusion.tree(run, matcher),
                          "by_distance": ties.by_distance(run, matcher)}
  return summary


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
      if column in TIME_COLUMNS:
        continue
      if column in COUNT_COLUMNS or column.startswith(COUNT_PREFIXES):
        row[column] = group[column].sum(min_count=1)
      else:
        row[column] = group[column].iloc[-1]
    rows.append(row)
  return pd.DataFrame(rows)


def json_safe(value: Any) -> Any:
  """NaN -> null, numpy scalars -> Python, recursively."""
  if isinstance(value, dict):
    return {str(k): json_safe(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [json_safe(v) for v in value]
  if isinstance(value, (np.integer,)):
    return int(value)
  if isinstance(value, (float, np.floating)):
    return None if math.isnan(value) or math.isinf(value) else float(value)
  return value

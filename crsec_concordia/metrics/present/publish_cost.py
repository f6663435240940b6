"""The published page's cost: each run's row and the runs before them.

A run is published again and again (a new referee error, a new matcher)
and rerun now and then (a cheaper commit, a fixed bug). A rerun's cost is
only read well beside the run it replaces, so when `crsec report --publish`
writes over an earlier results.json, the rows of that file that the new
runs replace (the same scenario, arm, seed, condition and endpoint, but
another run) are kept under `earlier_runs`, the newest one per run, and
the cost table shows them below the new ones. Republishing the same run
keeps nothing twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia.metrics.measure import run_metrics
from crsec_concordia.metrics.present.cells import md_escape, number
from crsec_concordia.rundir.reading import per_agent_hour

HEADER = ("| arm | seed | run | steps | wall time (s) | calls | of them cached"
          " | tokens | calls / agent-hour | tokens / agent-hour | model |")
KEY_FIELDS = ("scenario", "arm", "seed", "condition", "endpoint")
# What tells one run from another when a row has no commit and start time
# (rows published before they were kept).
_SAME_RUN_FIELDS = ("steps_completed", "wall_seconds", "calls", "tokens")


def cost(m: run_metrics.RunMetrics) -> dict[str, Any]:
  """The run's row of results.json: steps, wall time, calls, per agent-hour,
  by operation, and the commit and start time that tell this run apart."""
  info, summary = m.run.run, m.summary
  usage = summary.get("usage") or {}
  totals = usage.get("totals") or {}
  # Answers replayed from the response cache count as calls, as in the
  # per-agent-hour figures (metrics/usage.py), and are shown apart: they
  # cost no wall time and no tokens.
  cached = totals.get("cached_calls", 0) or 0
  calls = totals.get("calls", summary["totals"].get("llm_calls"))
  calls = None if calls is None else calls + cached
  prompt = totals.get("prompt_tokens", summary["totals"].get("prompt_tokens"))
  completion = totals.get("completion_tokens",
                          summary["totals"].get("completion_tokens"))
  tokens = None if prompt is None or completion is None else prompt + completion
  steps = info.get("completed_steps")
  agent_hours = (len(m.run.agents) * steps * m.run.clock.minutes_per_step
                 / 60 if steps else None)
  per = (lambda v: None if v is None or not agent_hours
         else round(v / agent_hours, 2))
  # usage_summary's by_tag is the simulation's alone (the stated-belief
  # questions are summed apart).
  by_tag = usage.get("by_tag") or {}
  by_operation: dict[str, float | None] = dict.fromkeys(sorted(by_tag))
  if agent_hours:
    by_operation.update(
        (tag, round(r["calls"], 2)) for tag, r in per_agent_hour(
            by_tag, len(m.run.agents), agent_hours / len(m.run.agents)
        ).items() if tag != "total")
  return {"scenario": summary["run"]["scenario"], "arm": m.run.arm,
          "seed": m.run.seed, "status": info.get("status"),
          "steps_completed": steps, "steps_total": info.get("max_steps"),
          "wall_seconds": info.get("wall_seconds"), "agents": len(m.run.agents),
          "agent_hours": agent_hours, "calls": calls, "cached_calls": cached,
          "tokens": tokens,
          "calls_per_agent_hour": per(calls),
          "tokens_per_agent_hour": per(tokens),
          "calls_per_agent_hour_by_operation": by_operation,
          "commit": info.get("commit"), "started": info.get("started"),
          "model": (info.get("model") or {}).get("model")
          or (info.get("model") or {}).get("endpoint")}


def run_key(row: Mapping[str, Any]) -> tuple:
  """Which run of an experiment a row is (not which attempt at it)."""
  return tuple("" if row.get(f) is None else str(row[f]) for f in KEY_FIELDS)


def same_run(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
  """Whether two rows are of one run (published twice)."""
  if run_key(a) != run_key(b):
    return False
  if a.get("started") and b.get("started"):
    return (a["started"], a.get("commit")) == (b["started"], b.get("commit"))
  return all(a.get(f) == b.get(f) for f in _SAME_RUN_FIELDS)


def earlier_runs(previous: Mapping[str, Any] | None,
                 rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
  """The rows of an earlier results.json that `rows` replace: per run, the
  newest other run of it (its last shown row, else the row it kept as
  earlier), in the order of `rows`."""
  if not previous:
    return []
  shown = _by_key(previous.get("runs"))
  kept = _by_key(previous.get("earlier_runs"))
  out = []
  for row in rows:
    # Its run shown before, unless that is this run published again; then
    # the run it kept as earlier.
    for old in (shown.get(run_key(row)), kept.get(run_key(row))):
      if old is not None and not same_run(old, row):
        out.append(dict(old))
        break
  return out


def _by_key(rows: Any) -> dict[tuple, dict[str, Any]]:
  return {run_key(r): r for r in rows or () if isinstance(r, dict)}


def _run_label(row: Mapping[str, Any]) -> str:
  commit = str(row.get("commit") or "")[:7]
  day = str(row.get("started") or "")[:10]
  return md_escape(" ".join(x for x in (commit, day) if x) or "–")


def _row(r: Mapping[str, Any], arm: str) -> str:
  return (f"| {md_escape(arm)} | {r.get('seed')} | {_run_label(r)} | "
          f"{r.get('steps_completed')}/{r.get('steps_total')} | "
          f"{number(r.get('wall_seconds'))} | {number(r.get('calls'))} | "
          f"{number(r.get('cached_calls'))} | {number(r.get('tokens'))} | "
          f"{number(r.get('calls_per_agent_hour'), 1)} | "
          f"{number(r.get('tokens_per_agent_hour'), 0)} | "
          f"{md_escape(r.get('model'))} |")


def cost_markdown(rows: Sequence[Mapping[str, Any]],
                  earlier: Sequence[Mapping[str, Any]] = ()) -> list[str]:
  """The cost section of one group: its runs, then the runs they replace."""
  lines = ["", "### Cost", "", HEADER, "|" + "---|" * 11]
  lines += [_row(r, str(r.get("arm"))) for r in rows]
  lines += [_row(r, f"{r.get('arm')} (earlier run)") for r in earlier]
  lines += ["", "Wall time is as measured on the machine that ran each run, "
            "with whatever else it ran at the time (runs that shared one "
            "model server took longer than alone); calls and tokens per "
            "agent-hour are the figures to compare."]
  if earlier:
    lines += ["", "An earlier run is the run of the same arm and seed that "
              "this page showed before these replaced it (its commit and "
              "start date where they were recorded); "
              "`results.json` keeps it under `earlier_runs`."]
  if any(r.get("cached_calls") for r in rows):
    lines += ["", "Cached calls were answered from the response cache of an "
              "earlier run with the same prompts: they took no wall time "
              "and count no tokens."]
  return lines

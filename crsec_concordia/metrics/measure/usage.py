"""LLM calls and tokens per CRSEC module, from usage.json's by_tag.

Tags name the operation that called the model
(`model.tagged("ImmediateEvaluation")`); each operation, the paper's eight
and the others, is declared once with its module in
crsec_concordia/operations/names.py:
  creation     CreateNorm
  spreading    DetectConflict, DecideToTalk, IdentifyNorm, Reflect, Talk
  evaluation   ImmediateEvaluation, LongTermSynthesis
  compliance   NormativePlan, DayPlan, DecomposePlan, act (actions)
  game_master  GM.* (the game master's)
  metrics      MetricsJudge (the report's optional LLM judge)
  other        ReadEvents (reading a game master's free text), and any
               tag no operation declares, so that nothing is lost
The calls a run makes apart from its simulation (APART_TAGS: the
stated-belief questions) are no part of its cost: they are summed apart.
"""

from __future__ import annotations

from typing import Any

from crsec_concordia.operations.names import APART_TAGS, module_of_tag
# usage.json's counts, as the run's writer keeps them.
from crsec_concordia.rundir.writing import USAGE_FIELDS as FIELDS


def module_of(tag: str) -> str:
  """The CRSEC module (or game_master, metrics, other) a tag counts for."""
  return module_of_tag(tag)


def usage_summary(usage: dict[str, Any] | None) -> dict[str, Any] | None:
  """{"by_tag", "by_module", "totals"} or None when the run has no usage;
  and `apart`, the totals of the calls made apart from the simulation
  (left out of the rest), when it made any."""
  if not usage:
    return None
  by_tag = {tag: {f: int(counts.get(f, 0) or 0) for f in FIELDS}
            for tag, counts in (usage.get("by_tag") or {}).items()}
  apart = {f: sum(c[f] for t, c in by_tag.items() if t in APART_TAGS)
           for f in FIELDS}
  by_tag = {t: c for t, c in by_tag.items() if t not in APART_TAGS}
  by_module: dict[str, dict[str, int]] = {}
  for tag, counts in by_tag.items():
    row = by_module.setdefault(module_of(tag), {f: 0 for f in FIELDS})
    for f in FIELDS:
      row[f] += counts[f]
  totals = usage.get("totals") or {
      f: sum(c[f] for c in by_tag.values()) for f in FIELDS}
  summary = {"by_tag": by_tag, "by_module": dict(sorted(by_module.items())),
             "totals": {f: int(totals.get(f, 0) or 0) for f in FIELDS}}
  if any(apart.values()):
    summary["apart"] = apart
  return summary

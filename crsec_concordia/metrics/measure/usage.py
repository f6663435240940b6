"""LLM calls and tokens per CRSEC module, from usage.json's by_tag.

Tags name the operation or component that called the model
(`model.tagged("ImmediateEvaluation")`; the game master's are "GM.*", the
agents' own acting "act", their conversation turns "Talk"); the paper's
modules group them:
  creation     CreateNorm
  spreading    DetectConflict, DecideToTalk, Talk, IdentifyNorm, Reflect
  evaluation   ImmediateEvaluation, LongTermSynthesis, NormEvaluator
  compliance   NormativePlan, DecomposePlan, act (actions)
  game_master  GM.*
  metrics      MetricsJudge (the report's optional LLM judge)
Unknown tags land in "other" so that nothing is lost.
"""

from __future__ import annotations

from typing import Any

# usage.json's counts, as the run's writer keeps them.
from crsec_concordia.rundir.writing import USAGE_FIELDS as FIELDS

# (lower-case substring of a tag, module); the first match wins.
MODULE_OF_TAG: tuple[tuple[str, str], ...] = (
    ("metricsjudge", "metrics"),
    ("gm.", "game_master"),
    ("create", "creation"),
    ("normmemory", "creation"),
    ("conflict", "spreading"),
    ("talk", "spreading"),
    ("identif", "spreading"),
    ("reflect", "spreading"),
    ("synthes", "evaluation"),
    ("evaluat", "evaluation"),
    ("plan", "compliance"),
    ("act", "compliance"),
    ("game", "game_master"),
    ("cafe", "game_master"),
    ("resolution", "game_master"),
    ("narrat", "game_master"),
)


def module_of(tag: str) -> str:
  low = tag.lower()
  for needle, module in MODULE_OF_TAG:
    if needle in low:
      return module
  return "other"


def usage_summary(usage: dict[str, Any] | None) -> dict[str, Any] | None:
  """{"by_tag", "by_module", "totals"} or None when the run has no usage."""
  if not usage:
    return None
  by_tag = {tag: {f: int(counts.get(f, 0) or 0) for f in FIELDS}
            for tag, counts in (usage.get("by_tag") or {}).items()}
  by_module: dict[str, dict[str, int]] = {}
  for tag, counts in by_tag.items():
    row = by_module.setdefault(module_of(tag), {f: 0 for f in FIELDS})
    for f in FIELDS:
      row[f] += counts[f]
  totals = usage.get("totals") or {
      f: sum(c[f] for c in by_tag.values()) for f in FIELDS}
  return {"by_tag": by_tag, "by_module": dict(sorted(by_module.items())),
          "totals": {f: int(totals.get(f, 0) or 0) for f in FIELDS}}

"""The report's lines on what the similarity gates skipped.

A gate that reads a cosine decides, without the model, that something is
not judged (crsec_concordia/gate_tally.py); the run counts each in
gates.json, and the matcher counts the pairs it kept from its judge. The
report says each count that is not zero in a line of its own, naming the
gate, so a reader sees how much the embedder decided alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crsec_concordia import gate_tally

# Per gate: what was skipped (one, several), and why.
_SAID = {
    gate_tally.RELEVANCE_FLOOR: (
        "deed was", "deeds were",
        "not judged against any held norm: below the embedder's relevance "
        "floor (ConflictDetector)"),
    gate_tally.DUPLICATE_PRECHECK: (
        "candidate norm was", "candidate norms were",
        "rejected as a duplicate without asking the model: at or above the "
        "embedder's duplicate threshold (ImmediateEvaluation)"),
    gate_tally.SPARED_FAR_ACTION: (
        "action was", "actions were",
        "not put to the referee: no behaviour near enough (the gate that "
        "spares far actions)"),
    gate_tally.TAG_FLOOR: (
        "referee tag was", "referee tags were",
        "dropped: below the embedder's tag floor (the referee's tag gate)"),
    gate_tally.LOOK_FLOOR: (
        "untagged action was", "untagged actions were",
        "given no second look: no behaviour above the second look's floor"),
    gate_tally.LOOK_NEAREST_RULE: (
        "second-look answer was", "second-look answers were",
        "refused: not the behaviour nearest the action (the nearest rule)"),
    gate_tally.OCCASION_FLOOR: (
        "answer to an occasion was", "answers to an occasion were",
        "refused: below the occasion check's floor"),
    gate_tally.JUDGE_FLOOR_SKIPS: (
        "norm and target pair was", "norm and target pairs were",
        "not put to the matcher's judge: below the judge floor"),
}


def gate_lines(gates: Mapping[str, Any] | None,
               matcher: Mapping[str, Any]) -> list[str]:
  """One line per gate that skipped something (gates.json's totals and
  the matcher's judge), or one line saying none did or none was counted."""
  if gates is None:
    return ["This run did not count what its similarity gates skipped (no "
            "gates.json: it was made before they were counted)."]
  totals = dict(gates.get("totals") or {})
  if matcher.get("judge_skipped"):
    totals[gate_tally.JUDGE_FLOOR_SKIPS] = int(matcher["judge_skipped"])
  lines = []
  for gate in gate_tally.GATE_ORDER:
    n = int(totals.get(gate) or 0)
    if n and gate in _SAID:
      one, many, why = _SAID[gate]
      lines.append(f"{n} {one if n == 1 else many} {why}.")
  return lines or ["No similarity gate skipped anything in this run."]

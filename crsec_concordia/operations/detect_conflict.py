"""DetectConflict: does an observed behaviour break one of my qualified norms?

The sender side of spreading. Wording matters for small models: a plain
"Rules / What happened / is this person breaking a rule" form judged well in
our trials, where a long instruction made the 1.5B model answer yes to all.
The model first names the rule most related to the behaviour, then judges it.
"""

from __future__ import annotations

from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations.base import (BOOLEAN, FailureSink, integer,
                                              numbered, obj, structured_call)

OP = "DetectConflict"


def schema(n_rules: int) -> dict:
  return obj({"related_rule": integer(1, n_rules), "breaks_rule": BOOLEAN})


def prompt(actor: str, behaviour: str, norms: list[PersonalNorm]) -> str:
  return (
      f"Rules:\n{numbered([n.content for n in norms])}\n\n"
      f"What happened: {behaviour}\n\n"
      "related_rule: the number of the rule most related to what happened.\n"
      f"breaks_rule: is {actor} breaking that rule by doing this? true or "
      "false. Ordinary behaviour that no rule forbids is false.")


def detect_conflict(model, *, actor: str, behaviour: str,
                    norms: list[PersonalNorm],
                    on_failure: FailureSink | None
                    ) -> tuple[bool, PersonalNorm | None] | None:
  """(conflict?, the norm it breaks), or None if the model failed."""
  if not norms:
    return False, None
  answer = structured_call(model, OP, prompt(actor, behaviour, norms),
                           schema(len(norms)), on_failure=on_failure,
                           max_tokens=32, temperature=0.0)
  if answer is None:
    return None
  norm = norms[answer["related_rule"] - 1]
  return (True, norm) if answer["breaks_rule"] else (False, None)

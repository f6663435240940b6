"""DetectConflict: does an observed behaviour break one of my qualified norms?

The sender side of spreading. The paper asks the model to find, among all
the agent's norms, one the behaviour breaks. A 1.5B model cannot do both at
once: shown five numbered rules it named rule 1 whatever happened (a loud
poetry reading paired with "No smoking indoors"), and its true/false then
said "false" to "Carlos lights a cigarette at his table" against "No
smoking indoors". So the work is split. The caller picks the rule the
behaviour is most about (ConflictDetector ranks the norms by embedding
similarity, i.e. retrieval) and the model judges that one rule, first in a
short sentence and then as breaks / follows / unrelated. On eight café
cases the split judged 6 right (all 4 breaches, 2 of 4 non-breaches) where
the one-call form judged 4 (no breach at all).
"""

from __future__ import annotations

from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations.base import (FailureSink, obj,
                                              structured_call, text)

OP = "DetectConflict"
BREAKS, FOLLOWS, UNRELATED = "breaks", "follows", "unrelated"
SCHEMA = obj({"reason": text(200),
              "verdict": {"type": "string",
                          "enum": [BREAKS, FOLLOWS, UNRELATED]}})


def prompt(actor: str, behaviour: str, place: str, norm: PersonalNorm) -> str:
  return (
      f"Rule: {norm.content}\n"
      f"What happened ({place}): {behaviour}\n\n"
      f"reason: one short sentence comparing what {actor} did with the rule.\n"
      f"verdict: {BREAKS} if it goes against the rule, {FOLLOWS} if it keeps "
      f"the rule, {UNRELATED} if the rule is not about this.")


def detect_conflict(model, *, actor: str, behaviour: str, place: str,
                    norm: PersonalNorm, on_failure: FailureSink | None
                    ) -> tuple[bool, str] | None:
  """(breaks the norm?, the model's reason), or None if the model failed."""
  answer = structured_call(model, OP, prompt(actor, behaviour, place, norm),
                           SCHEMA, on_failure=on_failure, max_tokens=96,
                           temperature=0.0)
  if answer is None:
    return None
  return answer["verdict"] == BREAKS, " ".join(answer["reason"].split())

"""DetectConflict: does an observed behaviour break one of my qualified norms?

The sender side of spreading. The paper asks the model to find, among all
the agent's norms, one the behaviour breaks. A 1.5B model cannot do both at
once: shown five numbered rules it named rule 1 whatever happened (a loud
poetry reading paired with "No smoking indoors"), and its true/false then
said "false" to "Carlos lights a cigarette at his table" against "No
smoking indoors". So the work is split. The caller picks the rule the
behaviour is most about (ConflictDetector ranks the norms by embedding
similarity, i.e. retrieval) and the model judges that one rule, first by
quoting the words of the behaviour the rule is about (or "none") and then as breaks /
follows / unrelated; a breach with no words quoted is no breach. On eight
café cases the split judged 6 right where the one-call form judged 4 (no
breach at all). Asked for a one-sentence reason instead of the quote, the
model restated the behaviour and said "breaks" for 9 of 22 harmless actions
in live runs ("Carlos writes at his corner table" against "Be quiet in
public places"); with the quote, 6 of 22, and 24 of 24 breaches found (23
with the reason).
"""

from __future__ import annotations

from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations.base import (FailureSink, has_evidence, obj,
                                              structured_call, text)

OP = "DetectConflict"
BREAKS, FOLLOWS, UNRELATED = "breaks", "follows", "unrelated"
SCHEMA = obj({"evidence": text(200),
              "verdict": {"type": "string",
                          "enum": [BREAKS, FOLLOWS, UNRELATED]}})


def prompt(actor: str, behaviour: str, place: str, norm: PersonalNorm) -> str:
  return (
      f"Rule: {norm.content}\n"
      f"What {actor} did ({place}): \"{behaviour}\"\n\n"
      f"evidence: quote the words of what {actor} did that the rule is "
      f"about, or \"none\" if the rule is about something {actor} did not "
      "do.\n"
      f"verdict: {BREAKS} if those words go against the rule, {FOLLOWS} if "
      f"they keep it, {UNRELATED} if evidence is none.")


def detect_conflict(model, *, actor: str, behaviour: str, place: str,
                    norm: PersonalNorm, on_failure: FailureSink | None
                    ) -> tuple[bool, str] | None:
  """(breaks the norm?, the words quoted), or None if the model failed."""
  answer = structured_call(model, OP, prompt(actor, behaviour, place, norm),
                           SCHEMA, on_failure=on_failure, max_tokens=96,
                           temperature=0.0)
  if answer is None:
    return None
  evidence = " ".join(answer["evidence"].split())
  return answer["verdict"] == BREAKS and has_evidence(evidence), evidence

"""The referee's second look at an answer to an occasion (the bill).

The general adjudication picks, among all the scenario's behaviours, the one
an action shows. On Qwen2.5-Coder-1.5B it never once picked a tipping
behaviour, not even for "Abigail Chen pays the bill ... and gives a small
tip to the server" (0 of 8 tipping answers; its other choices were 14 of 14
right). Asked about only the occasion's behaviours ("Which of these does
Tom Gomez do? tipped / refused_tip / none"), it got every one of 12 tipping
answers right, but it also named a tipping behaviour for answers that
ignore the bill ("Tom Gomez turns up the music on his laptop"), and it
says "true" to any "does this deal with the situation?". So the model
proposes and the embedder verifies: a proposed behaviour counts only if the
action is about it, i.e. the action's embedding similarity to the
behaviour's description reaches MIN_SIMILARITY. On 18 answers to the bill
(12 paying, 6 not) that gate kept all 12 paying ones but one ("hands the
server a twenty and says 'Keep the change'", similarity 0.09) and dropped
all 6 others (at most 0.15; "picks up the bill and leaves", 0.28, passes
and is arguable). The check is recorded whole, accepted or not.

Tried and dropped (2026-11-27): the proposal verified as the second look's
is (second_look.py), after a venue the project had not seen (an office
kitchen) got "pours himself the last cup ... and walks off without
starting a fresh pot" accepted as making a fresh pot, with the id as its
evidence. Its quote checked as words of the action, the question asked
again with the choices in reverse order, and the doer check: on the
labelled answers (bench/judgement_probe.py --all --only occasion) the
harvest went from 8 to 4 of 13 right, the café's lunch bill from 9 to 4
of 10, the mini café's bill from 12 to 9 of 14. Each check refused mostly
right answers: this prompt's evidence is often the id or the behaviour's
description with the actor's name ("refused_tip", "Francisco Lopez pays
for food or drink without adding a tip or declines to tip"), the
doer of a gift is "the neighbours", and Isabella's tip in the jar got
another answer in reverse order. The two wrong answers left ("packs all
the extra tomatoes ... and takes them home" and "waters her lettuce and
pulls a few weeds" as sharing) passed all three.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from crsec_concordia.models.base import EndpointError, StructuredOutputError

OP = "GM.adjudicate (occasion)"  # A failure record's `op`.
MIN_SIMILARITY = 0.25
NONE = "none"

Similarity = Callable[[str, str], float]


def check_schema(behaviour_ids: Sequence[str]) -> dict[str, Any]:
  """Evidence first (it keeps the choice to words of the action), then one id."""
  return {
      "type": "object",
      "additionalProperties": False,
      "required": ["evidence", "behaviour"],
      "properties": {
          "evidence": {"type": "string", "maxLength": 300},
          "behaviour": {"type": "string",
                        "enum": list(behaviour_ids) + [NONE]},
      },
  }


def check_prompt(*, place: str, situation: str, actor: str, action: str,
                 behaviours: Sequence[Mapping[str, str]]) -> str:
  listing = "\n".join(f"- {b['id']}: {b['description']}" for b in behaviours)
  ids = ", ".join(b["id"] for b in behaviours)
  return (
      f"You are the referee at {place}.\n"
      f"Situation: {situation}\n"
      f"{actor}: \"{action}\"\n\n"
      f"Which of these does {actor} do?\n{listing}\n"
      f"- {NONE}: none of these, or the action does not deal with the "
      "situation\n\n"
      f"evidence: copy the words of {actor}'s action that show it, or "
      "\"none\".\n"
      f"behaviour: {ids} or {NONE}.")


def check_occasion(model, *, place: str, situation: str, actor: str,
                   action: str, behaviours: Sequence[Mapping[str, str]],
                   similarity: Similarity, max_tokens: int = 160
                   ) -> tuple[dict[str, Any], dict[str, Any] | None]:
  """(the check's record, a failure record if the call failed).

  The record: `behaviour` (the model's proposal, or "none"), `evidence`,
  `similarity` of the action to that behaviour's description, `accepted`.
  """
  ids = [b["id"] for b in behaviours]
  try:
    answer = model.sample_json(
        check_prompt(place=place, situation=situation, actor=actor,
                     action=action, behaviours=behaviours),
        check_schema(ids), max_tokens=max_tokens, temperature=0.0)
  except (StructuredOutputError, EndpointError) as e:
    return ({"behaviour": NONE, "evidence": "", "similarity": 0.0,
             "accepted": False},
            {"op": OP, "error": str(e), "raw": getattr(e, "raw", "")})
  proposed = answer["behaviour"]
  score = 0.0
  if proposed in ids:
    description = next(b["description"] for b in behaviours
                       if b["id"] == proposed)
    score = round(float(similarity(action, description)), 3)
  return ({"behaviour": proposed, "evidence": str(answer["evidence"]).strip(),
           "similarity": score,
           "accepted": proposed in ids and score >= MIN_SIMILARITY}, None)


def decide(behaviours: Sequence[str], check: Mapping[str, Any],
           occasion_behaviours: Sequence[str]) -> list[str]:
  """The event's behaviours once the check is in.

  Among the occasion's behaviours an accepted check, which chooses one,
  decides: the general referee's others go. Both kept, "pays exactly what
  the bill says" was recorded as tipped (the general referee) and
  refused_tip (the check) at once, 2 of 4 bills in a demo, and the metrics
  read such an action as both. A check not accepted changes nothing.
  """
  if not check["accepted"]:
    return list(behaviours)
  chosen = check["behaviour"]
  kept = [b for b in behaviours
          if b == chosen or b not in occasion_behaviours]
  return kept if chosen in kept else [*kept, chosen]

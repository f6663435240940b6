"""The occasion check: a focused look at an answer to an occasion (the bill).

Among all the scenario's behaviours the general call may miss the ones an
occasion is about (it never once named a tip, even for "pays the bill and
gives a small tip to the server"); asked about only the occasion's
behaviours, the model names them readily, but also for answers that ignore
the occasion. So the model proposes and the embedder verifies: a proposed
behaviour counts only if the action's similarity to its description
reaches MIN_OCCASION_SIMILARITY. The check is recorded whole, accepted or not, and
an accepted one decides among the occasion's behaviours (`decide`). Its
figures, and the stricter verification measured against it:
docs/trials/referee.md ("The occasion check").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.game_masters.referee._shared import (Similarity,
                                                          failure_record)
from crsec_concordia.game_masters.referee.general_call import NONE
from crsec_concordia.models.base import EndpointError, StructuredOutputError

OP = "GM.adjudicate (occasion)"  # A failure record's `op`.
# MiniLM's; a referee reads its embedder's (`occasion`).
MIN_OCCASION_SIMILARITY = MINILM_THRESHOLDS.occasion


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
                   similarity: Similarity, max_tokens: int = 160,
                   gate: bool = True, floor: float | None = None
                   ) -> tuple[dict[str, Any], dict[str, Any] | None]:
  """(the check's record, a failure record if the call failed).

  The record: `behaviour` (the model's proposal, or "none"), `evidence`,
  `similarity` of the action to that behaviour's description, `accepted`
  (without `gate`, any proposal of the occasion's behaviours is; `floor`:
  the embedder's gate, MIN_OCCASION_SIMILARITY when None).
  """
  floor = MIN_OCCASION_SIMILARITY if floor is None else floor
  ids = [b["id"] for b in behaviours]
  try:
    answer = model.sample_json(
        check_prompt(place=place, situation=situation, actor=actor,
                     action=action, behaviours=behaviours),
        check_schema(ids), max_tokens=max_tokens, temperature=0.0)
  except (StructuredOutputError, EndpointError) as e:
    return ({"behaviour": NONE, "evidence": "", "similarity": 0.0,
             "accepted": False},
            failure_record(OP, e))
  proposed = answer["behaviour"]
  score = 0.0
  if proposed in ids:
    description = next(b["description"] for b in behaviours
                       if b["id"] == proposed)
    score = round(float(similarity(action, description)), 3)
  return ({"behaviour": proposed, "evidence": str(answer["evidence"]).strip(),
           "similarity": score,
           "accepted": proposed in ids and (not gate
                                            or score >= floor)},
          None)


def decide(behaviours: Sequence[str], check: Mapping[str, Any],
           occasion_behaviours: Sequence[str]) -> list[str]:
  """The event's behaviours once the check is in.

  Among the occasion's behaviours an accepted check, which chooses one,
  decides: the general referee's others go. Both kept, "pays exactly what
  the bill says" was recorded as tipped (the general referee) and
  refused_tip (the check) at once, and the metrics read such an action as
  both. A check not accepted changes nothing.
  """
  if not check["accepted"]:
    return list(behaviours)
  chosen = check["behaviour"]
  kept = [b for b in behaviours
          if b == chosen or b not in occasion_behaviours]
  return kept if chosen in kept else [*kept, chosen]

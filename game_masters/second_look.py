"""The referee's second look at an action no tag of its general call counts for.

The general call (referee_question.py) asks for the behaviour an action
shows among all the scenario's, with "none" the default ("Most actions show
none"). On Qwen2.5-Coder-1.5B that default is what it gives for plain
deeds too: "hangs the trowel back on its hook inside the tool shed" (the
garden's returned_tools), "picks a bowl of cherry tomatoes from her own
plot", "sings at the top of her voice": garden recall 0.48, café 0.79 on
the labelled probes, with precision 0.9 to 1.0.

So the model proposes and the embedder verifies, as in the occasion's
check (occasion_check.py): where no tag of the general call counts (it
named none, its claim had no quote, or its tag was dropped by the gate or
the doer check) and the action is near some behaviour for the sentence
embedder (its nearest at MIN_SIMILARITY or more, the occasion check's
floor), the referee is asked once more about the three nearest behaviours
only, listed before the action as in the general call, with no "most
actions show none". The proposal counts only if it is the behaviour the
embedder finds nearest, its quote is words of the action and the doer
check (doer_check.py) names the actor.

Measured on the three venues' labelled probes (bench/judgement_probe.py
--all, session 18, /work/runs/s18), precision / recall before -> after:
café 0.90 / 0.79 -> 0.91 / 0.88, mini café 0.90 / 0.82 -> 0.90 / 0.82,
garden 1.00 / 0.48 -> 1.00 / 0.78 (its tags: 7 on the garden, 2 on the
café, none wrong). Without the nearest-behaviour rule the model's
proposals cost precision: café 0.81, mini café 0.80, garden 0.72 ("ties
her bean plants to their canes" as picking from her own plot, "crosses out
a line of his poem" as smoking indoors). Asked with the action first and
"which of these does he do?", evidence first or ids first, with a
talk-only choice, the model answered none or talk-only for all 57 actions
asked, the right ones included. What it still misses: an action the
embedder puts nearer another behaviour ("walks over to Gus's plot and
fills her bag with his tomatoes": picking from her own plot, 0.318 against
0.303), and a deed the doer check gives to nobody ("hands a bag of
courgettes over the fence to the family next door").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia.game_masters import doer_check, tag_gate
from crsec_concordia.game_masters.occasion_check import Similarity
from crsec_concordia.game_masters.referee_question import (_none_token,
                                                           quotes_action)
from crsec_concordia.models.base import EndpointError, StructuredOutputError

TAG = "GM.look"  # The calls' usage tag and a failure record's `op`.
MIN_SIMILARITY = 0.25  # The occasion check's floor (occasion_check.py).
CANDIDATES = 3  # The nearest behaviours listed.


def look_schema(ids: Sequence[str]) -> dict[str, Any]:
  """The id first, then the quote (checked in code), as in the general call."""
  return {
      "type": "object",
      "additionalProperties": False,
      "required": ["behaviour", "evidence"],
      "properties": {
          "behaviour": {"type": "string", "enum": [*ids, _none_token(ids)]},
          "evidence": {"type": "string", "maxLength": 300},
      },
  }


def look_prompt(*, place: str, behaviours: Sequence[Mapping[str, str]],
                actor: str, action: str) -> str:
  """The candidates first (the general call's order), the action last."""
  none = _none_token([b["id"] for b in behaviours])
  listing = "\n".join(f"- {b['id']}: {b['description']}" for b in behaviours)
  return (f"You are the referee at {place}.\n"
          f"Behaviours:\n{listing}\n- {none}: none of these\n\n"
          f"behaviour: the id the action below shows, or {none}.\n"
          "evidence: quote the words of the action that show it.\n\n"
          f"{actor}: \"{action}\"")


def candidates(action: str, descriptions: Mapping[str, str],
               similarity: Similarity, words: frozenset[str]
               ) -> list[tuple[str, float]]:
  """The behaviours to ask about, nearest first (tag_gate.near_scores), or
  none if even the nearest is below MIN_SIMILARITY."""
  # Nearest first; a tie keeps the scenario's order (sorted is stable).
  near = sorted(tag_gate.near_scores(action, descriptions, similarity,
                                     words).items(), key=lambda kv: -kv[1])
  if not near or near[0][1] < MIN_SIMILARITY:
    return []
  return [(i, s) for i, s in near[:CANDIDATES]
          if s >= tag_gate.MIN_TAG_SIMILARITY]


def second_look(model, doer_model, *, place: str, actor: str, action: str,
                descriptions: Mapping[str, str], similarity: Similarity,
                words: frozenset[str], max_tokens: int = 160
                ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
  """(the look's record, a failure record), or (None, None) when no
  behaviour is near enough to ask about.

  The record: `candidates` ({id: score}), the model's `behaviour` and
  `evidence`, the doer check's answer (`doer`) when asked, and `accepted`
  with, when not, `why`.
  """
  near = candidates(action, descriptions, similarity, words)
  if not near:
    return None, None
  listed = [{"id": i, "description": descriptions[i]} for i, _ in near]
  record: dict[str, Any] = {"candidates": dict(near), "accepted": False}
  try:
    answer = model.sample_json(
        look_prompt(place=place, behaviours=listed, actor=actor,
                    action=action),
        look_schema([i for i, _ in near]), max_tokens=max_tokens,
        temperature=0.0)
  except (StructuredOutputError, EndpointError) as e:
    record["why"] = "the call failed"
    return record, {"op": TAG, "error": str(e), "raw": getattr(e, "raw", "")}
  proposed, evidence = answer["behaviour"], str(answer["evidence"]).strip()
  record.update(behaviour=proposed, evidence=evidence)
  if proposed not in record["candidates"]:
    record["why"] = "no behaviour proposed"
  elif proposed != near[0][0]:
    record["why"] = "not the behaviour nearest the action"
  elif not quotes_action(evidence, actor, action):
    record["why"] = "the quote is not words of the action"
  elif doer_model is None:
    record["accepted"] = True
  else:
    doers, failure = doer_check.check_doers(doer_model, actor, action,
                                            [proposed], descriptions)
    record["doer"] = doers.get(proposed, "")
    record["accepted"] = doer_check.names_actor(record["doer"], actor)
    if failure is not None:
      record["why"] = "the doer check failed"
      return record, failure
    if not record["accepted"]:
      record["why"] = "the doer check named someone else"
  return record, None

"""The second look at an action no tag of the general call counts for.

The general call defaults to "none" ("Most actions show none"), and on a
small model that default takes plain deeds too ("hangs the trowel back on
its hook inside the tool shed"). So the model proposes and the embedder
verifies, as in the occasion check: where no tag counts and the action is
near some behaviour (the embedder's look floor; MIN_LOOK_SIMILARITY for
MiniLM), the referee is asked once more about the three nearest behaviours
only, listed before the action, with no "most actions show none". The proposal counts
only if it is the behaviour the embedder finds nearest (the nearest rule),
its quote is words of the action, the same question with the choices in
reverse order gives the same answer (a choice that follows the list's
order is no reading of the action), and the doer check names the actor.
Each of these checks and the variants measured against it:
docs/trials/referee.md ("The second look and its nearest rule").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crsec_concordia.game_masters.referee import doer_check, tag_gate
from crsec_concordia.game_masters.referee._shared import (Similarity,
                                                          failure_record)
from crsec_concordia.game_masters.referee.general_call import (none_token,
                                                               quotes_action)
from crsec_concordia.embedding.records import SimilarityThresholds
from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.models.base import EndpointError, StructuredOutputError
from crsec_concordia.scenarios import TargetNorm

TAG = "GM.look"  # The calls' usage tag and a failure record's `op`.
CANDIDATES = 3  # The nearest behaviours listed.
# MiniLM's floor (the occasion check's); a referee reads its embedder's.
MIN_LOOK_SIMILARITY = MINILM_THRESHOLDS.look
# MiniLM's record: the floors of a look given no embedder's own.
_MEASURED = MINILM_THRESHOLDS


# Why a proposal the nearest rule refuses does not count (its record's `why`).
NOT_NEAREST = "not the behaviour nearest the action"


def look_schema(ids: Sequence[str]) -> dict[str, Any]:
  """The id first, then the quote (checked in code), as in the general call."""
  return {
      "type": "object",
      "additionalProperties": False,
      "required": ["behaviour", "evidence"],
      "properties": {
          "behaviour": {"type": "string", "enum": [*ids, none_token(ids)]},
          "evidence": {"type": "string", "maxLength": 300},
      },
  }


def look_prompt(*, place: str, behaviours: Sequence[Mapping[str, str]],
                actor: str, action: str, reverse: bool = False) -> str:
  """The candidates first (the general call's order), the action last;
  `reverse`: every choice in reverse order, "none" first (so that a single
  candidate is asked in another order too)."""
  none = none_token([b["id"] for b in behaviours])
  lines = [f"- {b['id']}: {b['description']}" for b in behaviours]
  lines.append(f"- {none}: none of these")
  listing = "\n".join(reversed(lines) if reverse else lines)
  return (f"You are the referee at {place}.\n"
          f"Behaviours:\n{listing}\n\n"
          f"behaviour: the id the action below shows, or {none}.\n"
          "evidence: quote the words of the action that show it.\n\n"
          f"{actor}: \"{action}\"")


def other_sides(target_norms: Iterable[TargetNorm]
                ) -> dict[str, frozenset[str]]:
  """Each behaviour's other side: the behaviours a target norm sets
  against it (its `complies` against its `violates`), the two sides of one
  deed the embedder puts close together (smoking out on the terrace and
  smoking inside; a tip and none)."""
  sides: dict[str, set[str]] = {}
  for norm in target_norms:
    complies, violates = list(norm.complies), list(norm.violates)
    for one, others in ((complies, violates), (violates, complies)):
      for i in one:
        sides.setdefault(i, set()).update(others)
  return {i: frozenset(o) for i, o in sides.items()}


def candidates(action: str, descriptions: Mapping[str, str],
               similarity: Similarity, words: frozenset[str],
               floors: SimilarityThresholds = _MEASURED
               ) -> list[tuple[str, float]]:
  """The behaviours to ask about, nearest first (tag_gate.near_scores), or
  none if even the nearest is below the embedder's `look` floor; each at
  least its tag floor."""
  # Nearest first; a tie keeps the scenario's order (sorted is stable).
  near = sorted(tag_gate.near_scores(action, descriptions, similarity,
                                     words).items(), key=lambda kv: -kv[1])
  if not near or near[0][1] < floors.look:
    return []
  return [(i, s) for i, s in near[:CANDIDATES] if s >= floors.tag]


def ask(model, *, place: str, listed: Sequence[Mapping[str, str]],
        actor: str, action: str, reverse: bool, max_tokens: int = 160
        ) -> dict[str, Any]:
  """The look's question about the `listed` candidates (raises a failed
  call's error)."""
  return model.sample_json(
      look_prompt(place=place, behaviours=listed, actor=actor, action=action,
                  reverse=reverse),
      look_schema([b["id"] for b in listed]), max_tokens=max_tokens,
      temperature=0.0)


def second_look(model, doer_model, *, place: str, actor: str, action: str,
                descriptions: Mapping[str, str], similarity: Similarity,
                words: frozenset[str], max_tokens: int = 160,
                nearest_rule: bool = True, reverse: bool = True,
                sides: Mapping[str, frozenset[str]] | None = None,
                floors: SimilarityThresholds = _MEASURED, tie: float = 0.0
                ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
  """(the look's record, a failure record), or (None, None) when no
  behaviour is near enough to ask about. `nearest_rule` and `reverse`: the
  two checks of a proposal that a policy may leave out
  (crsec_concordia/calibration/policy.py); `sides` (other_sides): the
  nearest rule lets the other side of the nearest behaviour through;
  `floors`: the embedder's record of floors; `tie`: a proposal whose score
  is within it of the nearest's is no farther (the referee's settings give
  the embedder's `near_tie` or, under a strict nearest rule, none:
  calibration/run_policy.py).

  The record: `candidates` ({id: score}), the model's `behaviour` and
  `evidence`, its answer in `reversed` order, the doer check's answer
  (`doer`) when asked, and `accepted` with, when not, `why`.
  """
  near = candidates(action, descriptions, similarity, words, floors)
  if not near:
    return None, None
  listed = [{"id": i, "description": descriptions[i]} for i, _ in near]
  record: dict[str, Any] = {"candidates": dict(near), "accepted": False}
  question = dict(place=place, listed=listed, actor=actor, action=action,
                  max_tokens=max_tokens)
  try:
    answer = ask(model, reverse=False, **question)
  except (StructuredOutputError, EndpointError) as e:
    return _failed(record, "the call failed", e)
  proposed, evidence = answer["behaviour"], str(answer["evidence"]).strip()
  record.update(behaviour=proposed, evidence=evidence)
  nearest = near[0][0] if nearest_rule else None
  if nearest is not None and proposed in (sides or {}).get(nearest, ()):
    nearest = None  # The other side of the nearest's deed.
  why = _refused(proposed, evidence, nearest, record["candidates"], actor,
                 action, tie)
  if why is not None:
    record["why"] = why
    return record, None
  if reverse:
    try:
      record["reversed"] = ask(model, reverse=True, **question)["behaviour"]
    except (StructuredOutputError, EndpointError) as e:
      return _failed(record, "the call in reverse order failed", e)
    if record["reversed"] != proposed:
      record["why"] = "another answer with the candidates in reverse order"
      return record, None
  return _ask_doer(record, doer_model, actor, action, descriptions)


def _refused(proposed: str, evidence: str, nearest: str | None,
             near: Mapping[str, float], actor: str, action: str,
             tie: float) -> str | None:
  """Why the first answer's proposal cannot count, or None if it may
  (`nearest` None: any candidate may; one within `tie` of the nearest's
  score is as near, on the embedder's measured scale)."""
  if proposed not in near:
    return "no behaviour proposed"
  if nearest is not None and not near_tie(near, nearest, proposed, tie):
    return NOT_NEAREST
  if not quotes_action(evidence, actor, action):
    return "the quote is not words of the action"
  return None


def near_tie(near: Mapping[str, float], nearest: str, proposed: str,
             tie: float) -> bool:
  """Whether `proposed` is the nearest behaviour or as near, within the
  embedder's measured tie (the nearest rule refuses no near tie)."""
  return proposed == nearest or near[nearest] - near[proposed] < tie


def _ask_doer(record: dict[str, Any], doer_model, actor: str, action: str,
              descriptions: Mapping[str, str]
              ) -> tuple[dict[str, Any], dict[str, Any] | None]:
  """The last check of a proposal answered alike in both orders: the doer
  check (doer_check.py) must name the actor, when it is asked at all."""
  if doer_model is None:
    record["accepted"] = True
    return record, None
  proposed = record["behaviour"]
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


def _failed(record: dict[str, Any], why: str, error: Exception
            ) -> tuple[dict[str, Any], dict[str, Any]]:
  record["why"] = why
  return record, failure_record(TAG, error)

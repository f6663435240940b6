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

The same answer in either order. The nearest behaviour is listed first, and
the 1.5B model picks the first of a short list readily, so the nearest rule
and the model's choice were not two checks but one. On a venue no code or
prompt was written for (bench/heldout/library_reading_room.yaml, session
19) the look tagged 8 actions: 4 right and 4 invented ("reads the morning
newspaper at the long table" as eating at the desk, "puts his phone on
silent" as a call at the desk); in the baseline café run of 84 slots it
tagged 16, half of them doubtful ("checks his phone and starts answering
work calls" as loud). So a proposal that passes the embedder and the
quote is asked for once more with the candidates in reverse order, and
counts only if the answer is the same: a choice that follows the list's
order is no reading of the action. Measured (bench/judgement_probe.py --all
--heldout --only referee, f58f2f1, cases 4 at a time while a run shared
the server), precision / recall with the look as it was -> with this
check: library 0.74 (0.71 in a repeat) / 0.83 -> 0.80 / 0.83, café 0.91 /
0.88 -> 0.92 / 0.92, mini café 0.90 / 0.82 unchanged, garden 1.00 (0.95)
/ 0.78 -> 0.94 / 0.74 ("loads every one of his extra tomatoes into crates
to take home" lost its kept-surplus tag). Still let through on the
library: "puts his phone on silent" as a call at the desk and "takes a book
from the shelf and sits down with it" as returning books, answered so in
either order.

Tried and dropped (session 20, the same probes replayed from a response
cache, so only the new prompts were asked): with the reverse-order check in
place, the nearest rule loosened to "within 0.02 of the nearest" gained one
right tag (mini café "pays exactly the menu price", recall 0.82 -> 0.86)
and put two wrong ones on the garden ("pulls weeds ... and waters her
plot" as picking from others, "sows a row of lettuce seeds" as picking
from her own plot: P 1.00 -> 0.89); dropped altogether, garden P 1.00
-> 0.82 and library 0.80 -> 0.74 ("goes to the lobby to buy a snack" as a
call at the desk, "ties her bean plants to their canes" as picking from her
own plot, in either order). The nearest rule is a check of its own, not a
stand-in for the order check. The doer question asked with the
description's head only (up to a colon or parenthesis: "who shares some of
their extra vegetables or fruit?") changed no answer: "hands a bag of
courgettes over the fence" is still done by "nobody".

Tried and dropped (2026-11-27, the garden's 44 labelled cases replayed
from a response cache, so only the new prompts were asked; as recorded
there, P 1.00 R 0.74, 6 misses, 4 of them a right proposal or a right
general tag refused): a proposal that is not the nearest let through
(1) when the doer check names the actor for it and for no nearer
behaviour: P 0.94 R 0.74 (Marta filling her bag from Gus's plot: who
picks from another gardener's plot? someone else; the onions from Dev's
own bed: Dev leaves the tools out too; "ties her bean plants to their
canes" let through as picking from her plot); (2) when the model picks
it over the nearest in a question about the two alone, asked in both
orders: P 0.86 R 0.78 (one more right tag, the bag of Gus's tomatoes,
and three wrong ones: planting garlic, sowing lettuce and tying beans as
picking from one's own plot, in either order); (3) when it is the other
side, for a target norm, of the nearest (picking from one's own plot
against another's, sharing against keeping: the two sides of one deed,
which the embedder does not tell apart): P 0.94 R 0.74 (Gus's tomatoes
refused by the doer check as above; "pulls weeds ... and waters her plot"
let through as picking from others). On this model the proposal between
two sides of one deed is no better than the embedder's.
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
                actor: str, action: str, reverse: bool = False) -> str:
  """The candidates first (the general call's order), the action last;
  `reverse`: every choice in reverse order, "none" first (so that a single
  candidate is asked in another order too)."""
  none = _none_token([b["id"] for b in behaviours])
  lines = [f"- {b['id']}: {b['description']}" for b in behaviours]
  lines.append(f"- {none}: none of these")
  listing = "\n".join(reversed(lines) if reverse else lines)
  return (f"You are the referee at {place}.\n"
          f"Behaviours:\n{listing}\n\n"
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

  def ask(reverse: bool) -> dict[str, Any]:
    return model.sample_json(
        look_prompt(place=place, behaviours=listed, actor=actor,
                    action=action, reverse=reverse),
        look_schema([b["id"] for b in listed]), max_tokens=max_tokens,
        temperature=0.0)

  def failed(why: str, e: Exception) -> tuple[dict[str, Any], dict[str, Any]]:
    record["why"] = why
    return record, {"op": TAG, "error": str(e), "raw": getattr(e, "raw", "")}

  try:
    answer = ask(reverse=False)
  except (StructuredOutputError, EndpointError) as e:
    return failed("the call failed", e)
  proposed, evidence = answer["behaviour"], str(answer["evidence"]).strip()
  record.update(behaviour=proposed, evidence=evidence)
  if proposed not in record["candidates"]:
    record["why"] = "no behaviour proposed"
    return record, None
  if proposed != near[0][0]:
    record["why"] = "not the behaviour nearest the action"
    return record, None
  if not quotes_action(evidence, actor, action):
    record["why"] = "the quote is not words of the action"
    return record, None
  try:
    record["reversed"] = ask(reverse=True)["behaviour"]
  except (StructuredOutputError, EndpointError) as e:
    return failed("the call in reverse order failed", e)
  if record["reversed"] != proposed:
    record["why"] = "another answer with the candidates in reverse order"
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

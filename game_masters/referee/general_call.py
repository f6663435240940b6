"""The general call: the referee's one question about an action.

One structured call narrates the action, says where it happens and names
the behaviour ids it shows (at most two, or none), then quotes the action's
words as evidence, and code checks the quote. Everything fixed comes before
the action so a server's prompt cache reuses it; the contrast choice
`talk_only` takes in the actions that only speak of a behaviour, the false
tags a 1.5B model gives most. Each field and its order is what held up on
the labelled probes against the other structures measured: see
docs/trials/referee.md ("The general call").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia import repetition
from crsec_concordia.operations.base import has_evidence
# The place field's words where a scenario declares no places.
from crsec_concordia.scenarios.place_checks import PLACES

TAG = "GM.adjudicate"  # The calls' usage tag and a failure record's `op`.
NONE = "none"
# The contrast choice: an action that only mentions, asks or thinks of a
# behaviour, or sees someone else do it (see adjudication_prompt).
TALK_ONLY = "talk_only"


def none_token(behaviour_ids: Sequence[str]) -> str:
  """The "none" choice, under another name if a behaviour is called so."""
  return NONE if NONE not in behaviour_ids else "no_behaviour"


def _talk_token(behaviour_ids: Sequence[str]) -> str:
  return TALK_ONLY if TALK_ONLY not in behaviour_ids else "only_talk_of_it"


def adjudication_schema(behaviour_ids: Sequence[str],
                        places: Sequence[str] = PLACES) -> dict[str, Any]:
  """The answer's shape: the main behaviour and a second one, or none;
  the place one of the scenario's place ids.

  Two single choices rather than a list: asked for a list, the small model
  names several ids for any action that mentions the place or a behaviour's
  word; an action showing more than two behaviours at once is rare.
  """
  choices = [*behaviour_ids, _talk_token(behaviour_ids),
             none_token(behaviour_ids)]
  return {
      "type": "object",
      "additionalProperties": False,
      # In this order: the narration first keeps it faithful to the action;
      # the place before the behaviours decides smoking inside or out; the
      # quote after the ids, checked in code (docs/trials/referee.md).
      "required": ["narration", "place", "behaviour", "also", "evidence"],
      # The grammar follows the order of `properties`, not of `required`.
      "properties": {
          "narration": {"type": "string", "maxLength": 300},
          "place": {"type": "string", "enum": list(places)},
          "behaviour": {"type": "string", "enum": choices},
          "also": {"type": "string", "enum": choices},
          "evidence": {"type": "string", "maxLength": 300},
      },
  }


def behaviours_of(answer: Mapping[str, Any],
                  behaviour_ids: Sequence[str]) -> list[str]:
  """The behaviour ids an answer names, in order, without "none" or the
  contrast choice (neither is a behaviour)."""
  named = (answer.get("behaviour"), answer.get("also"))
  return [b for b in dict.fromkeys(named) if b in behaviour_ids]


def quotes_action(evidence: str, actor: str, action: str) -> bool:
  """Whether evidence is a quote of the action's own words (the
  referee's evidence rule)."""
  evidence = evidence.strip()
  return has_evidence(evidence) and repetition.quotes(evidence, action,
                                                      names=[actor])


def supported(answer: Mapping[str, Any], behaviour_ids: Sequence[str],
              actor: str, action: str) -> bool:
  """No behaviour named, or one quoted in the action's own words (the
  referee's evidence rule; bench/referee_structures.py applies it too)."""
  return not behaviours_of(answer, behaviour_ids) or quotes_action(
      str(answer["evidence"]), actor, action)


def _place_lines(places: Sequence[Mapping[str, str]] | None,
                 unsaid: str) -> tuple[str, str]:
  """(the list of places, the place field's question): the scenario's
  declared places by id, or indoors and outdoors."""
  if places is None:
    return "", ("place: indoors if the action happens inside a building or "
                f"a room, outdoors if in the open air; {unsaid}.\n")
  listing = "\n".join(f"- {p['id']}: {p['description']}" for p in places)
  return (f"Places:\n{listing}\n",
          f"place: the id of the place where the action happens; {unsaid}.\n")


def referee_header(place: str, place_list: str,
                   behaviours: Sequence[Mapping[str, str]], talk: str,
                   none: str) -> str:
  """What every adjudication prompt opens with, one action or a place's
  slot: the setting, the places, the behaviours and the two choices that
  are none of them. Nothing of a venue here: where people are by default
  is the setting's (`place` is the scenario's setting line), not a rule of
  this prompt."""
  listing = "\n".join(f"- {b['id']}: {b['description']}" for b in behaviours)
  return (
      f"You are the referee at {place}.\n"
      f"{place_list}"
      f"Behaviours:\n{listing}\n"
      f"- {talk}: the actor only mentions, asks or thinks about one of these, "
      "or sees someone else do it\n"
      f"- {none}: none of these\n\n")


def adjudication_prompt(*, place: str, behaviours: Sequence[Mapping[str, str]],
                        actor: str, action: str, situation: str = "",
                        default_place: str | None = None,
                        places: Sequence[Mapping[str, str]] | None = None,
                        here: str | None = None) -> str:
  """A short, concrete prompt: what a 1.5B model can follow.

  Everything fixed comes first: the setting, the behaviour list and what
  each answer field asks, the same for every action of a run, so a
  server's prompt cache reuses all of it; the action (and the situation of
  an occasion that prompted it: "pays and leaves" is a refused tip only to
  a referee who knows a bill was brought) comes last, where the answer
  starts. A scenario that declares its places (`places`: id and
  description each) has them listed, and the place the actor is at
  (`here`) told before the action: where an action does not say, it
  happens there.
  """
  ids = [b["id"] for b in behaviours]
  none, talk = none_token(ids), _talk_token(ids)
  unsaid = ("the place where the actor is now (given below), where the action "
            "does not say" if here else
            f"{default_place}, where the action does not say" if default_place
            else "an action that does not say where happens where people "
            "usually are in the setting above")
  place_list, place_field = _place_lines(places, unsaid)
  return (
      referee_header(place, place_list, behaviours, talk, none)
      + "For the action below:\n"
      "narration: the same action in one short sentence, present tense, with "
      "the same meaning.\n"
      f"{place_field}"
      f"behaviour: the id the action plainly shows, or {none}. Most actions "
      f"show {none}.\n"
      f"also: a second id the action plainly shows too, or {none}.\n"
      "evidence: quote the words of the action that show the ids you chose, "
      f"or \"none\" if you chose {none}.\n\n"
      + (f"{actor} is at {here} now.\n" if here else "")
      + (f"Situation: {situation}\n" if situation else "")
      + f"{actor}: \"{action}\"")


def retry_prompt(prompt: str, evidence: str, actor: str,
                 behaviour_ids: Sequence[str]) -> str:
  """The question asked once more, saying why: a behaviour was named with
  evidence that is not words of the action (the model wrote an id as the
  quote of a man chain-smoking at his table)."""
  return (f"{prompt}\nYour evidence \"{evidence.strip()}\" "
          f"is not words of {actor}'s action. Answer again: the evidence "
          f"copies words of the action, or is \"none\" if you choose "
          f"{none_token(behaviour_ids)}.")

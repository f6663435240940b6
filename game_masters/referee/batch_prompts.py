"""The prompts and answer shapes of a place's slot judged together.

The actions of one place in one slot share the place, its behaviours and
the questions asked of each; only the actor, where they are, the situation
an occasion gave them and their words differ. So a batch states the shared
part once, first (the general call's own listing and field questions,
which a server's prompt cache reuses), then each action under an id of its
own ("a1", "a2", ...), and the answer is one object keyed by those ids,
each with the general call's fields and a `doer`: the name of who does the
behaviour chosen, the doer check's question folded into the answer. The
keys are required properties, in the prompt's order, so a grammar makes
the model answer every action once. Nothing here names a venue: the
setting, places and behaviours are the scenario's, given at run time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia.game_masters.referee import general_call
from crsec_concordia.game_masters.referee.general_call import none_token

DOER_FIELD = "doer"


def key_of(index: int) -> str:
  """The id of a batch's `index`th action (from 0)."""
  return f"a{index + 1}"


def _item_schema(properties: Mapping[str, Any]) -> dict[str, Any]:
  return {"type": "object", "additionalProperties": False,
          "required": list(properties), "properties": dict(properties)}


def batch_schema(keys: Sequence[str], behaviour_ids: Sequence[str],
                 places: Sequence[str], doer: bool) -> dict[str, Any]:
  """One object keyed by the actions' ids, each the general call's answer
  (general_call.adjudication_schema, in its order) and, with the doer
  check on, the doer's name last (after the quote it reads)."""
  one = dict(general_call.adjudication_schema(behaviour_ids, places)[
      "properties"])
  if doer:
    one[DOER_FIELD] = {"type": "string", "minLength": 1, "maxLength": 60}
  return _item_schema({k: _item_schema(one) for k in keys})


def _place_lines(places: Sequence[Mapping[str, str]] | None,
                 default_place: str | None) -> tuple[str, str]:
  """(the list of places, the place field's question), as the general
  call asks it of an actor whose place is told with its action."""
  if places is None:
    unsaid = (f"{default_place}, where the action does not say"
              if default_place else "an action that does not say where "
              "happens where people usually are in the setting above")
    return "", ("place: indoors if the action happens inside a building or "
                f"a room, outdoors if in the open air; {unsaid}.\n")
  listing = "\n".join(f"- {p['id']}: {p['description']}" for p in places)
  return (f"Places:\n{listing}\n",
          "place: the id of the place where the action happens; the place "
          "where its actor is now (given with the action), where the action "
          "does not say.\n")


def batch_prompt(*, place: str, behaviours: Sequence[Mapping[str, str]],
                 items: Sequence[Mapping[str, str]],
                 places: Sequence[Mapping[str, str]] | None,
                 default_place: str | None, doer: bool) -> str:
  """The shared part once, then each action: `items` are mappings with
  `key`, `actor`, `action` and optionally `here` and `situation`."""
  ids = [b["id"] for b in behaviours]
  none = none_token(ids)
  # The general call's contrast choice, as its schema names it.
  talk = general_call.adjudication_schema(ids)["properties"]["behaviour"][
      "enum"][-2]
  place_list, place_field = _place_lines(places, default_place)
  doer_field = (f"{DOER_FIELD}: the name of the person who does the behaviour "
                "you chose, as the action writes it, or \"nobody\" if no "
                f"one in the action does it; \"nobody\" if you chose {none}.\n"
                if doer else "")
  actions = "\n".join(_item_lines(item) for item in items)
  return (
      general_call.referee_header(place, place_list, behaviours, talk, none)
      + "Each action below has an id. Answer for every id, each action on its "
      "own:\n"
      "narration: the same action in one short sentence, present tense, with "
      "the same meaning.\n"
      f"{place_field}"
      f"behaviour: the id the action plainly shows, or {none}. Most actions "
      f"show {none}.\n"
      f"also: a second id the action plainly shows too, or {none}.\n"
      "evidence: quote the words of that same action that show the ids you "
      f"chose, or \"none\" if you chose {none}.\n"
      f"{doer_field}\n"
      f"Actions:\n{actions}")


def _item_lines(item: Mapping[str, str]) -> str:
  here = item.get("here")
  situation = item.get("situation")
  return (f"[{item['key']}] "
          + (f"{item['actor']} is at {here} now. " if here else "")
          + (f"Situation: {situation} " if situation else "")
          + f"{item['actor']}: \"{item['action']}\"")


def retry_note(wrong: Mapping[str, tuple[str, str]],
               behaviour_ids: Sequence[str]) -> str:
  """Why the actions `wrong` ({key: (actor, evidence)}) are asked once more:
  each quote was not words of its own action."""
  lines = "\n".join(f"Your evidence for {k}, \"{e.strip()}\", is not words "
                    f"of {actor}'s action." for k, (actor, e) in wrong.items())
  return (f"\n{lines} Answer again: each evidence copies words of its own "
          f"action, or is \"none\" if you choose "
          f"{none_token(behaviour_ids)}.")


def batch_look_schema(choices: Mapping[str, Sequence[str]], none: str,
                doer: bool) -> dict[str, Any]:
  """One object keyed by the actions' ids: each the second look's answer
  (second_look.look_schema) among its own candidates, and its doer."""
  def one(ids: Sequence[str]) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "behaviour": {"type": "string", "enum": [*ids, none]},
        "evidence": {"type": "string", "maxLength": 300}}
    if doer:
      fields[DOER_FIELD] = {"type": "string", "minLength": 1, "maxLength": 60}
    return _item_schema(fields)
  return _item_schema({k: one(ids) for k, ids in choices.items()})


def batch_look_prompt(*, place: str, items: Sequence[Mapping[str, Any]],
                none: str, reverse: bool, doer: bool) -> str:
  """The second look at several actions, each with its own nearest
  behaviours listed before it (`items`: `key`, `actor`, `action`,
  `listed`: [{id, description}]); `reverse`: each list in reverse order,
  "none" first."""
  blocks = []
  for item in items:
    lines = [f"- {b['id']}: {b['description']}" for b in item["listed"]]
    lines.append(f"- {none}: none of these")
    listing = "\n".join(reversed(lines) if reverse else lines)
    blocks.append(f"[{item['key']}] Behaviours:\n{listing}\n"
                  f"{item['actor']}: \"{item['action']}\"")
  doer_field = (f"{DOER_FIELD}: the name of the person who does it, as the "
                "action writes it, or \"nobody\".\n" if doer else "")
  return (f"You are the referee at {place}.\n"
          "Each action below has an id and its own behaviours. For every "
          "id:\n"
          f"behaviour: the id of its behaviours the action shows, or {none}.\n"
          "evidence: quote the words of that same action that show it.\n"
          f"{doer_field}\n" + "\n\n".join(blocks))

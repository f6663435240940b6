"""The referee's question: its prompt and answer schema (not a component).

Kept apart from the Referee (referee.py), which asks it
for every new action of a slot: what the referee is asked, in which order
and why, is the part tried and measured on the small model (the notes
below), and changes on its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia import repetition
from crsec_concordia.operations.base import has_evidence

PLACES = ("indoors", "outdoors")
NONE = "none"
# The contrast choice: an action that only mentions, asks or thinks of a
# behaviour, or sees someone else do it (see adjudication_prompt).
TALK_ONLY = "talk_only"


def _none_token(behaviour_ids: Sequence[str]) -> str:
  return NONE if NONE not in behaviour_ids else "no_behaviour"


def _talk_token(behaviour_ids: Sequence[str]) -> str:
  return TALK_ONLY if TALK_ONLY not in behaviour_ids else "only_talk_of_it"


def adjudication_schema(behaviour_ids: Sequence[str]) -> dict[str, Any]:
  """The answer's shape: the main behaviour and a second one, or none.

  Two single choices rather than a list: asked for a list, the 1.5B model
  lists several ids for any action that mentions the terrace or smoke
  (13 of 21 realistic actions right); asked for one id or none, and one
  more or none, it got 19 of 21. An action showing more than two of the
  scenario's behaviours at once is rare.
  """
  choices = [*behaviour_ids, _talk_token(behaviour_ids),
             _none_token(behaviour_ids)]
  return {
      "type": "object",
      "additionalProperties": False,
      # In this order: the narration first keeps it faithful to the action;
      # the place before the behaviours decides smoking inside or out; the
      # quote after the ids, checked in code (see adjudication_prompt).
      "required": ["narration", "place", "behaviour", "also", "evidence"],
      # The grammar follows the order of `properties`, not of `required`.
      "properties": {
          "narration": {"type": "string", "maxLength": 300},
          "place": {"type": "string", "enum": list(PLACES)},
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


def adjudication_prompt(*, place: str, behaviours: Sequence[Mapping[str, str]],
                        actor: str, action: str, situation: str = "",
                        default_place: str | None = None) -> str:
  """A short, concrete prompt: what a 1.5B model can follow.

  Everything fixed comes first: the setting, the behaviour list and what
  each answer field asks, the same for every action of a run, so a
  server's prompt cache reuses all of it; the action (and the situation of
  an occasion that prompted it: "pays and leaves" is a refused tip only to
  a referee who knows a bill was brought) comes last, where the answer
  starts. With the questions after the action, the cache could reuse only
  the list (GM.adjudicate reused 47% of its prompt tokens in a 12-slot
  café).
  """
  ids = [b["id"] for b in behaviours]
  none, talk = _none_token(ids), _talk_token(ids)
  unsaid = (f"{default_place}, where the action does not say" if default_place
            else "an action that does not say where happens where people "
            "usually are in the setting above")
  listing = "\n".join(f"- {b['id']}: {b['description']}" for b in behaviours)
  # Nothing of a venue here: where people are by default is the setting's
  # (`place` is the scenario's setting line: a café's room, a garden's
  # open air), not a rule of this prompt.
  return (
      f"You are the referee at {place}.\n"
      f"Behaviours:\n{listing}\n"
      f"- {talk}: the actor only mentions, asks or thinks about one of these, "
      "or sees someone else do it\n"
      f"- {none}: none of these\n\n"
      "For the action below:\n"
      "narration: the same action in one short sentence, present tense, with "
      "the same meaning.\n"
      "place: indoors if the action happens inside a building or a room, "
      f"outdoors if in the open air; {unsaid}.\n"
      f"behaviour: the id the action plainly shows, or {none}. Most actions "
      f"show {none}.\n"
      f"also: a second id the action plainly shows too, or {none}.\n"
      "evidence: quote the words of the action that show the ids you chose, "
      f"or \"none\" if you chose {none}.\n\n"
      + (f"Situation: {situation}\n" if situation else "")
      + f"{actor}: \"{action}\"")
# The contrast choice (talk_only, between the behaviours and none): most
# false tags were actions that speak of a behaviour ("tells Carlos he cannot
# stand cigarette smoke" -> smoking_indoors). Given a choice that names
# that case ("only mentions, asks or thinks about one of these"), on each
# venue's labelled cases, P / R before -> after: café 0.74 / 0.83 -> 0.74 /
# 0.83, mini café 0.71 / 0.77 -> 0.75 / 0.82, garden 0.71 / 0.65 -> 0.78 /
# 0.61 (242c517). Worded "only speaks, asks or thinks about", it gave café
# 0.80 / 0.83, mini café 0.75 / 0.82, garden 0.83 / 0.65, but "speaks" is a
# word of the café's behaviours, which no template may add
# (tests/test_prompt_leak.py). Either way the target, P >= 0.9 and R >= 0.8
# on every venue, is out of this model's reach with one call.
# Tried on the mini café and dropped, with
# P / R: a checklist with yes / talk / no for every behaviour in one answer
# (0.31 / 0.77: "yes" for quiet on nearly every action, "talk" never); a
# yes/no question per behaviour ("Did X do this behaviour?": yes to 229 of
# 264 pairs, 22 of them right); a `how` field after the ids (done by the
# actor / by someone else / only talked of: 0.80 / 0.73, the tips lost); a
# short `deed` before the ids (0.54 / 0.59: the deed came out right, "tells",
# "asks", "reads", and the id chosen after it ignored it). A vote over three
# of these answers did not help either: the small model's errors are the
# same in each.
# The questions before the action (bcf00a9), on each venue's labelled cases
# (bench/judgement_probe.py --all), tags precision / recall / places right:
# café 0.74 / 0.83 / 11 of 15, mini café 0.71 / 0.77 / 18 of 21, garden
# 0.71 / 0.65 / 30 of 30; with the questions after it, café 0.69 / 0.75 /
# 8 of 15, mini café 0.65 / 0.68 / 13 of 21, garden 0.71 / 0.65 / 25 of 30.
# Tried on Qwen2.5-Coder-1.5B (Q4_K_M) with the mini café's behaviours, on 11
# clean actions and 10 taken from a live run (echoes of the premise, smoke
# only mentioned, outdoor chores): 19 of 21 behaviour sets right, with a
# place rule that named the café ("everyone is inside unless an action says
# they go outside"; without any default the model said outdoors for all).
# The rule now defers to the setting, for any venue; bench/judgement_probe.py
# counts the places it gives on each scenario's labelled cases. Deferring to
# the setting alone, the model said indoors for most actions in the open-air
# garden (place 5 of 16 right); told the scenario's `default_place`, 12 of 16
# (the café stays at 7 of 10: "steps out onto the terrace" is still indoors).
# The quote comes after the ids and is checked in code (it must be words of
# the action, repetition.quotes; if not, the answer is asked for once more,
# saying why). Asked for the quote first, the model wrote "none" and then
# named a behaviour anyway, often the right one: garden 8 of 18 probe cases
# right, café 9 of 11. With the prompt asking for a quote "of the ids you
# chose" but the grammar still putting the quote first (the grammar follows
# `properties`, not `required`), garden 14 of 18 and café 10 of 11, but the
# model then "quoted" the id it was about to choose ("smoking_indoors" for
# a man chain-smoking at his table: 3 smokings of a full-café run lost).
# With the ids truly first: garden 13 of 18, café 10 of 11, and those
# smokings counted (the quote is then often the whole action, so the check
# mostly catches a quote of something else).
# Tried and dropped: a `where` field before the place ("quote the words of
# the action that say where it happens, or 'not said'") with the default
# applied in code when the quote was not the action's words: the model
# answered "not said" for nearly every action, even "steps out onto the
# terrace", and the extra field cost behaviours (café 7 of 11, was 9). Other
# wordings that fail there: a list of ids (see adjudication_schema);
# narration without "with the same meaning" (a refused tip retold as a tip)
# or asked last (invented details).
# Tried and dropped (2026-11-27): the tags that passed the gate and the doer
# check kept only if the same call, every choice listed in reverse order
# ("none" first), names them again, as the second look's proposals are
# (second_look.py). The same answers replayed from a response cache,
# P / R before -> after: café 0.95 / 0.88 -> 1.00 / 0.75, mini café 0.90 /
# 0.82 -> 0.94 / 0.73, garden 1.00 / 0.74 -> 1.00 / 0.70, held-out library
# 0.78 / 0.88 -> 0.78 / 0.75, held-out office kitchen 0.61 / 0.73 -> 0.65 /
# 0.58: right tags lost everywhere, and most of the kitchen's wrong ones
# ("wipes down the kitchen table" as washing up, "fills a glass with water"
# as making fresh coffee) named again in either order.
# Tried and dropped (2026-11-27): codes for ids ("B1: smokes or lights a
# cigarette inside the café"), mapped back in code, since 7 of the mini
# café's 12 wrong tags were `quiet` for an action with the word in it ("a
# quiet moment", "the quiet environment", "her quiet, careful demeanor").
# On its 66 labelled cases, P / R 0.66 / 0.79 -> 0.71 / 0.69: all 7 gone,
# but a refused tip read as a tip twice ("not a cent more", "will not
# leave a tip": the id's own word for the side was gone), a smoke at the
# corner table as outside, phone use as loud once more. A second contrast
# choice beside talk_only ("scene_only: the words that sound like one of
# these describe the place, its atmosphere or the actor's mood, not
# something the actor does"): 0.65 / 0.83, the model never chose it and
# tagged `quiet` for a quiet moment as before (8 wrong).

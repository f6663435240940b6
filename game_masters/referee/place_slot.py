"""A slot's new actions grouped by place, each place judged together.

The Adjudication component (game_masters/adjudication.py) with the
referee's `batched` setting puts a slot's new actions here before it
resolves each: they are grouped by the place their actor is at (one group
where the scenario declares no places), each group in actor-name order, and
each group judged by the referee in as few calls as its budget allows
(batch.py), the groups at once. Each action's result is then read back by
its actor, so the records do not depend on which group returns first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from crsec_concordia import observations
from crsec_concordia.game_masters.action_text import clean_action
from crsec_concordia.game_masters.referee.batch import PlaceAction

# {actor: (the action judged, (its event fields, failure record or None))}.
Judged = dict[str, tuple[str, tuple[dict[str, Any], "dict[str, Any] | None"]]]


def by_place(items: Mapping[str, PlaceAction], place_of: Callable[[str], str]
           ) -> dict[str, list[PlaceAction]]:
  """{place: its items in actor-name order}, places in name order."""
  found: dict[str, list[PlaceAction]] = {}
  for actor in sorted(items):
    found.setdefault(place_of(actor), []).append(items[actor])
  return dict(sorted(found.items()))


def judge_slot(referee, items: Mapping[str, PlaceAction],
               place_of: Callable[[str], str], run_tasks) -> Judged:
  """Each new action's result, judged a place at a time (`run_tasks`: the
  component's kept threads, {key: task} -> {key: result})."""
  places = by_place(items, place_of)
  results = run_tasks({
      place: (lambda group=group: referee.adjudicate_place(group))
      for place, group in places.items()})
  return {item.actor: (item.action, result)
          for place, group in places.items()
          for item, result in zip(group, results[place])}


def new_action(actor: str, raw_action: str, stamp: observations.Stamp,
               going_on) -> str | None:
  """The action the Adjudication component adjudicates anew, cleaned as
  its resolve_action cleans it (None: a continued action it carries
  forward with no call, going_on.py)."""
  continued = observations.continued_action(raw_action)
  if continued is not None:
    if going_on.carry_forward(actor, clean_action(continued, actor),
                              stamp) is not None:
      return None
    raw_action = continued
  action = clean_action(raw_action, actor)
  return (f"{actor} {observations.NO_DEED}"
          if observations.says_nothing(actor, action) else action)


def new_actions(actions: Mapping[str, str], stamp: observations.Stamp,
                going_on, spec) -> dict[str, PlaceAction]:
  """{actor: its new action} of a slot's raw actions, with the situation
  of the occasion that prompted it and the behaviours its focused check
  decides (`spec`: the game master's FixedActionSpec)."""
  items = {}
  for actor, raw in actions.items():
    action = new_action(actor, raw, stamp, going_on)
    if action is None:
      continue
    occasion = spec.occasion(actor)
    checks = (occasion is not None and bool(occasion.behaviours)
              and not observations.is_no_action(action))
    items[actor] = PlaceAction(
        actor, action, occasion.text_for(actor) if occasion else "",
        tuple(occasion.behaviours) if checks else ())
  return items

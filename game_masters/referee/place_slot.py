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

from crsec_concordia.game_masters.referee.batch import Item

# {actor: (the action judged, (its event fields, failure record or None))}.
Judged = dict[str, tuple[str, tuple[dict[str, Any], "dict[str, Any] | None"]]]


def groups(items: Mapping[str, Item], place_of: Callable[[str], str]
           ) -> dict[str, list[Item]]:
  """{place: its items in actor-name order}, places in name order."""
  found: dict[str, list[Item]] = {}
  for actor in sorted(items):
    found.setdefault(place_of(actor), []).append(items[actor])
  return dict(sorted(found.items()))


def judge_slot(referee, items: Mapping[str, Item],
               place_of: Callable[[str], str], run_tasks) -> Judged:
  """Each new action's result, judged a place at a time (`run_tasks`: the
  component's kept threads, {key: task} -> {key: result})."""
  by_place = groups(items, place_of)
  results = run_tasks({
      place: (lambda group=group: referee.adjudicate_place(group))
      for place, group in by_place.items()})
  return {item.actor: (item.action, result)
          for place, group in by_place.items()
          for item, result in zip(group, results[place])}

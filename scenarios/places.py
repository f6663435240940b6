"""The places of a scenario file, and what each agent perceives of a slot.

A place has an id, a description (shown to the agents and the referee),
whether it is indoors, the places whose deeds are seen or heard from it,
and an optional capacity (docs/design.md, "Places"). A file that declares
no places has the two of `legacy_places()`, indoors and outdoors, each in
view of the other: everyone perceives everyone, as before places existed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

import pydantic

from crsec_concordia.scenarios.base import ScenarioModel
from crsec_concordia.scenarios.checks import (PLACES, Ident, Line, MaxEvents,
                                              Positive)


class Place(ScenarioModel):
  """A place of the scenario: agents in it perceive its deeds and those of
  the places it `sees` or `hears`, and talk only with those in it; at most
  `capacity` agents are in it at once."""
  id: Ident
  description: Line
  indoors: bool
  sees: list[Ident] = pydantic.Field(default_factory=list)
  hears: list[Ident] = pydantic.Field(default_factory=list)
  capacity: Positive | None = None

  @property
  def in_view(self) -> list[str]:
    """The places whose deeds are perceived from here, this one first."""
    return list(dict.fromkeys([self.id, *self.sees, *self.hears]))


# The most places one prompt lists: a town's hundred places in every prompt
# would make each prompt grow with the town.
MAX_LISTED_PLACES = 12


def nearest_places(order: Sequence[str],
                   in_view: Mapping[str, Collection[str]], here: str,
                   also: Iterable[str] = (),
                   limit: int = MAX_LISTED_PLACES) -> list[str]:
  """The places a prompt lists for someone at `here`, in the scenario's
  order: all of them when they are at most `limit` (a venue); else, in a
  town, the first `limit` of `here`, `also` (the places an action names,
  the default place), those seen or heard from `here` and those that see
  or hear into it: the places near, not the town's first few."""
  if len(order) <= limit:
    return list(order)
  known = set(order)
  into = [p for p in order if here in in_view.get(p, ())]
  ranked = [here, *also, *sorted(in_view.get(here, ())), *into]
  chosen = set(list(dict.fromkeys(p for p in ranked if p in known))[:limit])
  return [p for p in order if p in chosen]


def legacy_places() -> list[Place]:
  """The places of a scenario that declares none: its indoors and its
  outdoors, each seeing and hearing the other."""
  inside, outside = PLACES
  return [Place(id=inside, description=inside, indoors=True, sees=[outside],
                hears=[outside]),
          Place(id=outside, description=outside, indoors=False,
                sees=[inside], hears=[inside])]


class Perception(ScenarioModel):
  """What an agent perceives of a slot: at most `max_events` deeds, those
  nearest its norms first (game_masters/perception.py)."""
  max_events: MaxEvents = 12


def listed_places(places: Sequence[Place], home: str, start: str
                  ) -> list[dict[str, str]]:
  """The places an agent at home in `home` is told of (id and
  description): those near it (`nearest_places`), in the file's order."""
  near = set(nearest_places([p.id for p in places],
                            {p.id: p.in_view for p in places}, home, [start]))
  return [{"id": p.id, "description": p.description}
          for p in places if p.id in near]

"""The places of a scenario file, and what each agent perceives of a slot.

A place has an id, a description (shown to the agents and the referee),
whether it is indoors, the places whose deeds are seen or heard from it,
and an optional capacity (docs/design.md, "Places"). A file that declares
no places has the two of `legacy_places()`, indoors and outdoors, each in
view of the other: everyone perceives everyone, as before places existed.
"""

from __future__ import annotations

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

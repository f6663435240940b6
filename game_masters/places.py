"""The scenario's places as the game master uses them (not a component).

Which places' deeds are perceived from a place (the place itself, and those
it `sees` or `hears`), how many agents a place holds, how a place is told
to an agent, and which places an action's words name. A scenario that
declares no places has two, indoors and outdoors, each in view of the
other (scenarios/loader.py): everyone then perceives everyone, and
everyone may talk with everyone, as before places were declared.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from crsec_concordia.scenarios.places import Place, nearest_places


@dataclasses.dataclass(frozen=True)
class PlaceInfo:
  """One place: its id, its description, and what is perceived from it."""
  id: str
  description: str
  indoors: bool
  in_view: frozenset[str]
  capacity: int | None = None


class PlaceMap:
  """The scenario's places; immutable, so shared by every thread."""

  def __init__(self, places: Iterable[Place], *, declared: bool):
    """Creates the map.

    Args:
      places: the scenario's places (`id`, `description`, `indoors`,
        `sees`, `hears`, `capacity`).
      declared: whether the scenario names its places (False: the legacy
        indoors and outdoors, which change no prompt and hold any talk).
    """
    self._places: dict[str, PlaceInfo] = {}
    for p in places:
      self._places[p.id] = PlaceInfo(
          id=p.id, description=p.description or p.id, indoors=p.indoors,
          in_view=frozenset(p.in_view), capacity=p.capacity)
    if not self._places:
      raise ValueError("a venue needs at least one place")
    self.declared = declared
    self._named = {pid: _name_pattern(pid) for pid in self._places}

  @classmethod
  def of(cls, scenario) -> "PlaceMap":
    """The places of a `Scenario` (legacy or declared)."""
    return cls(scenario.places, declared=scenario.declares_places)

  @property
  def ids(self) -> list[str]:
    return list(self._places)

  def __contains__(self, place_id: object) -> bool:
    return place_id in self._places

  def info(self, place_id: str) -> PlaceInfo:
    return self._places[place_id]

  def capacity(self, place_id: str) -> int | None:
    return self._places[place_id].capacity

  def perceived_from(self, place_id: str) -> frozenset[str]:
    """The places whose deeds an agent at `place_id` perceives."""
    info = self._places.get(place_id)
    return info.in_view if info is not None else frozenset([place_id])

  def prompt_places(self) -> list[dict[str, str]] | None:
    """The places as prompts list them (id, description), or None for a
    scenario that declares none (its prompts stay as they were)."""
    if not self.declared:
      return None
    return [{"id": p.id, "description": p.description}
            for p in self._places.values()]

  def near(self, place_id: str, also: Iterable[str] = ()) -> list[str]:
    """The place ids a prompt lists for someone at `place_id` (all of them
    in a scenario of a few places; scenarios/places.py)."""
    return nearest_places(list(self._places),
                          {p: i.in_view for p, i in self._places.items()},
                          place_id, also)

  def told(self, name: str, place_id: str) -> str:
    """Where `name` is, as its question for the slot tells it ("" for a
    scenario that declares no places)."""
    if not self.declared or place_id not in self._places:
      return ""
    return f"{name} is at {place_id} ({self._places[place_id].description})."

  def named_in(self, text: str, besides: str | None = None) -> list[str]:
    """The places (other than `besides`) whose id the text names, as an id
    or in words ("games_room" or "games room"), in the scenario's order."""
    return [pid for pid, pattern in self._named.items()
            if pid != besides and pattern.search(text)]


def _name_pattern(place_id: str) -> re.Pattern[str]:
  words = r"[\s_-]+".join(re.escape(w) for w in place_id.split("_") if w)
  return re.compile(rf"(?<![\w-]){words}(?![\w-])", re.I)

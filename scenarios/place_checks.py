"""What a scenario's places must be, across fields (checks.py runs it).

A place id is named in several parts of the file (`default_place`, each
agent's `home`, each place's `sees` and `hears`), and a misspelt one would
leave an agent nowhere or a window onto nothing; a place's `capacity`
bounds how many agents may start in it. Like the other checks across
fields, this works on raw data, whatever shape the rest of the file has,
so one pass reports every problem.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from typing import Any

from crsec_concordia.scenarios.problems import Problem, show

# The places of a scenario that declares none (loader.legacy_places).
PLACES: tuple[str, ...] = ("indoors", "outdoors")
_IDENT = re.compile(r"[a-z][a-z0-9_]*")
_GUIDE = "docs/design.md, 'Places'"


def _items(data: Mapping[str, Any], key: str
           ) -> Iterator[tuple[int, Mapping[str, Any]]]:
  items = data.get(key)
  if isinstance(items, list):
    for i, item in enumerate(items):
      if isinstance(item, Mapping):
        yield i, item


def _ident(value: Any) -> str | None:
  """The id `value` names, or None if it is none (a field error then)."""
  if isinstance(value, str) and _IDENT.fullmatch(value.strip()):
    return value.strip()
  return None


def _unknown(value: str, loc: tuple, known: list[str]) -> Problem:
  near = difflib.get_close_matches(value, known, n=1)
  guess = f" (did you mean {near[0]}?)" if near else ""
  return Problem(loc, f"{show(value)} is not a place of this scenario{guess}",
                 f"use one of: {', '.join(known)}")


def _declared_ids(data: Mapping[str, Any],
                  problems: list[Problem]) -> list[str]:
  """The declared places' ids, in order; an id used twice is a problem."""
  ids: list[str] = []
  for i, place in _items(data, "places"):
    pid = _ident(place.get("id"))
    if pid is None:
      continue
    if pid in ids:
      problems.append(Problem(
          ("places", i, "id"), f"{show(pid)} is already used by "
          f"places[{ids.index(pid)}]", "give every place a different id"))
    ids.append(pid)
  return list(dict.fromkeys(ids))


def _view_problems(data: Mapping[str, Any], known: list[str]
                   ) -> list[Problem]:
  """Each place's `sees` and `hears` name other places of the scenario."""
  problems = []
  for i, place in _items(data, "places"):
    own = _ident(place.get("id"))
    for key in ("sees", "hears"):
      named = place.get(key)
      for j, value in enumerate(named if isinstance(named, list) else []):
        pid = _ident(value)
        if pid is None:
          continue  # A field error.
        if pid == own:
          problems.append(Problem(
              ("places", i, key, j), f"{show(pid)} is the place itself",
              "remove it: agents always perceive what happens where they are"))
        elif pid not in known:
          problems.append(_unknown(pid, ("places", i, key, j), known))
  return problems


def _capacity_problems(data: Mapping[str, Any], known: list[str],
                       start: str | None) -> list[Problem]:
  """No place holds more agents at the start than its capacity."""
  homes: dict[str, int] = {}
  for _, agent in _items(data, "agents"):
    home = _ident(agent.get("home")) or start
    if home is not None:
      homes[home] = homes.get(home, 0) + 1
  problems = []
  for i, place in _items(data, "places"):
    pid, capacity = _ident(place.get("id")), place.get("capacity")
    if (pid in known and isinstance(capacity, int)
        and not isinstance(capacity, bool) and 0 < capacity < homes.get(pid, 0)):
      problems.append(Problem(
          ("places", i, "capacity"),
          f"{capacity} is fewer than the {homes[pid]} agents who start there",
          "raise it, or give some of those agents another home"))
  return problems


def place_problems(data: Mapping[str, Any]) -> list[Problem]:
  """Every place id named in the file is a place of the scenario (declared,
  or indoors and outdoors when none is), and homes fit the capacities. An
  id that is not an id at all is a field error, not reported again here."""
  problems: list[Problem] = []
  declared = isinstance(data.get("places"), list) and bool(data["places"])
  known = _declared_ids(data, problems) if declared else list(PLACES)
  if declared and not known:
    return problems  # Every id is a field error of its own.
  fix_legacy = ("; or declare the scenario's places under `places:` "
                f"({_GUIDE})") if not declared else ""
  start = _ident(data.get("default_place"))
  if declared and data.get("default_place") is None:
    problems.append(Problem(
        ("default_place",), "is missing, and the file declares places",
        f"add `default_place: {known[0]}` (where agents start and where an "
        f"action is when nothing says otherwise; one of: {', '.join(known)})"))
    start = known[0]
  elif start is not None and start not in known:
    found = _unknown(start, ("default_place",), known)
    problems.append(Problem(found.loc, found.what, found.fix + fix_legacy))
    start = None
  for i, agent in _items(data, "agents"):
    home = _ident(agent.get("home"))
    if home is not None and home not in known:
      found = _unknown(home, ("agents", i, "home"), known)
      problems.append(Problem(found.loc, found.what, found.fix + fix_legacy))
  if declared:
    problems += _view_problems(data, known)
    problems += _capacity_problems(data, known, start or known[0])
  return problems

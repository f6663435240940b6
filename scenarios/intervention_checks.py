"""What a scenario's `interventions:` block must be against the rest of the
file (checks.py runs it on raw data; interventions.py has the block's
model): each names agents, places and groups the file has, the fields its
kind needs, and a time inside the episode.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from crsec_concordia.scenarios.network_checks import probability
from crsec_concordia.scenarios.place_checks import PLACES
from crsec_concordia.scenarios.problems import Problem, show

INTERVENTIONS_BLOCK = "interventions"
INTERVENTION_KINDS = ("announce", "arrive", "leave", "teach", "close", "open")
# What each kind needs, and the fix when it is missing.
NEEDS = {
    "announce": (("text", "give the text everyone there perceives"),),
    "teach": (("norm", "give the norm: {content: ..., type: descriptive or "
                       "injunctive, utility: 1-100}"),),
    "close": (("places", "name the places it closes"),),
    "open": (("places", "name the places it opens"),),
}
WHO = ("arrive", "leave", "teach")  # Kinds that name agents or a group.


def _a(kind: str) -> str:
  return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def _listed(data: Mapping[str, Any], key: str, field: str) -> set[str]:
  items = data.get(key)
  return {str(i.get(field)) for i in items if isinstance(i, Mapping)
          } if isinstance(items, list) else set()


def _list(item: Mapping[str, Any], key: str) -> list[Any]:
  """The list under `key`; none when it is something else (text written
  for a list is a field error of its own, not one line per letter)."""
  value = item.get(key)
  return value if isinstance(value, list) else []


def intervention_problems(data: Mapping[str, Any],
                          slot_of: Callable[[Any, Any], int | None] | None
                          ) -> list[Problem]:
  """One problem per mistake, each with its fix. `slot_of(at, day)`: the
  slot of a time (None: outside the episode); None when the clock has a
  problem of its own (times are then not checked)."""
  key = INTERVENTIONS_BLOCK
  block = data.get(key)
  if not isinstance(block, list):
    return []
  agents = _listed(data, "agents", "name")
  # A file that declares no places has two, indoors and outdoors.
  places = (_listed(data, "places", "id") if data.get("places") is not None
            else set(PLACES))
  groups = {str(a.get("group")) for a in data.get("agents") or ()
            if isinstance(a, Mapping) and a.get("group")}
  population = data.get("population")
  if isinstance(population, Mapping) and isinstance(
      population.get("groups"), Mapping):
    groups |= set(population["groups"])
  problems: list[Problem] = []
  for i, item in enumerate(block):
    if not isinstance(item, Mapping):
      continue
    kind = item.get("kind")
    for field, fix in NEEDS.get(kind, ()):
      if not item.get(field):
        problems.append(Problem((key, i), f"{_a(kind)} needs `{field}`", fix))
    for j, name in enumerate(_list(item, "agents")):
      if isinstance(name, str) and name not in agents:
        problems.append(Problem(
            (key, i, "agents", j), f"no agent {show(name)}",
            "name an agent of `agents:` (an arriving one is written there "
            "too, and takes no part before its slot)"))
    for j, place in enumerate(_list(item, "places")):
      if isinstance(place, str) and place not in places:
        problems.append(Problem(
            (key, i, "places", j), f"no place {show(place)}",
            "name a place of `places:`" + (
                f" ({', '.join(sorted(places))})" if places else
                " (it lists none: add them there first)")
            if data.get("places") is not None else
            f"name {' or '.join(PLACES)}, the places of a file that declares "
            "none, or declare them under `places:`"))
    group = item.get("group")
    if isinstance(group, str) and group not in groups:
      problems.append(Problem(
          (key, i, "group"), f"no group {show(group)}",
          "name a group of the population block or of an agent's `group`"))
    if kind in WHO and not item.get("agents") and not item.get("group") and (
        kind != "leave" or item.get("share") is None):
      problems.append(Problem((key, i), f"{_a(kind)} names nobody",
                              "give `agents`, a `group` (or, to leave, a "
                              "`share` of everyone)"))
    share = item.get("share")
    if share is not None and probability(share) is not None and (
        kind != "leave" or not probability(share)):
      problems.append(Problem(
          (key, i, "share"), f"{show(share)} is not a share of leavers",
          "give a share above 0 and at most 1 (e.g. 0.25), on a leave only"))
    if kind == "close" and data.get("default_place") in _list(item, "places"):
      problems.append(Problem(
          (key, i, "places"), "closes the default place, where those "
          "turned out of a closed place go", "close another place, or set "
          "default_place to one that stays open"))
    if slot_of is not None and "at" in item:
      try:
        slot = slot_of(item.get("at"), item.get("day", 1))
      except (TypeError, ValueError):  # PydanticCustomError among them.
        continue  # A field error of its own.
      if slot is None:
        problems.append(Problem(
            (key, i, "at"), f"{show(item.get('at'))} is outside the episode",
            "give a slot from 1 to the run's last, or a clock time of a "
            "day the run plays"))
  return problems

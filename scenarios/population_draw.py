"""Drawing a scenario's population: its block checked, then its agents.

`expand` reads the raw data of a scenario file, validates its `population:`
block (one problem per line, each at its place in the block), checks it
against the rest of the file (behaviour ids, place ids, group ids, enough
names and room for everyone) and returns the data with the drawn agents
after the hand-written ones and the block taken out, so the Scenario, its
dump (scenario.json) and everything that reads it sees ordinary agents,
each with its `group` and, in a committed group, `committed`.

One `random.Random(seed)` draws everything in a fixed order (names,
templates, ages, entrepreneurs, groups, habits, homes): the same file gives
the same agents, byte for byte. How many agents each share gets is not
drawn but apportioned by largest remainder (ties to the earlier item), so
shares hold exactly; only who gets what is drawn.
"""

from __future__ import annotations

import dataclasses
import difflib
import random
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import pydantic

from crsec_concordia.scenarios.explain import explain
from crsec_concordia.scenarios.names import FIRST_NAMES, LAST_NAMES
from crsec_concordia.scenarios.place_checks import PLACES
from crsec_concordia.scenarios.population import Group, Population
from crsec_concordia.scenarios.problems import Problem, show

KEY = "population"
_GUIDE = "docs/design.md, 'Populations'"


@dataclasses.dataclass
class Expansion:
  """The data to validate as a Scenario, and the block's problems."""
  data: Any
  problems: list[Problem]

  def without_knock_ons(self, found: list[Problem]) -> list[Problem]:
    """`found` (the checks across fields) less, when the block could not be
    drawn, the problems of the agents it would have drawn (a network of 0
    agents, an intervention's unknown agent): they only repeat its own."""
    if not self.problems:
      return found
    return [p for p in found if p.loc[:1] != ("network",) and not (
        p.loc[:1] == ("interventions",) and "agents" in p.loc)]


def apportion(n: int, weights: Sequence[Fraction]) -> list[int]:
  """`n` split in proportion to `weights` by largest remainder (ties to
  the earlier weight); the parts add up to `n`."""
  total = sum(weights)
  if n == 0 or total == 0:
    return [0] * len(weights)
  quotas = [n * w / total for w in weights]
  parts = [int(q) for q in quotas]
  order = sorted(range(len(weights)), key=lambda i: (-(quotas[i] - parts[i]), i))
  for i in order[:n - sum(parts)]:
    parts[i] += 1
  return parts


def expand(data: Any) -> Expansion:
  """The data with its population drawn (see the module doc)."""
  if not isinstance(data, Mapping) or data.get(KEY) is None:
    return Expansion(data, [])
  rest = {k: v for k, v in data.items() if k != KEY}
  if not isinstance(data[KEY], Mapping):
    return Expansion(rest, [Problem(
        (KEY,), f"expected a mapping but found {show(data[KEY])}",
        f"write the keys {', '.join(Population.model_fields)} ({_GUIDE})")])
  try:
    population = Population.model_validate(data[KEY])
  except pydantic.ValidationError as e:
    problems = []
    for err in e.errors():
      found = explain(err, Population)
      problems.append(Problem((KEY, *found.loc), found.what, found.fix))
    return Expansion(rest, problems)
  agents = rest.get("agents", [])
  if agents is None:
    agents = []
  if not isinstance(agents, list):
    return Expansion(rest, [])  # A field error.
  hand = agents
  if population.drawn:
    if len(agents) < population.count:
      return Expansion(rest, [Problem(
          (KEY, "drawn"), f"is true, but agents holds {len(agents)}, fewer "
          f"than the {population.count} drawn", "remove drawn: the block "
          "draws its agents itself")])
    hand = agents[:len(agents) - population.count]
  problems = _problems(population, {**rest, "agents": hand})
  if problems:
    return Expansion(rest, problems)
  drawn, problems = draw(population, {**rest, "agents": hand})
  if problems:
    return Expansion(rest, problems)
  record = Population.model_validate(
      {**population.model_dump(mode="json"), "drawn": True})
  return Expansion({**rest, "agents": [*hand, *drawn],
                    KEY: record.model_dump(mode="json")}, [])


# -- the block against the rest of the file -----------------------------------


def _places(data: Mapping[str, Any]) -> list[str]:
  declared = [p["id"] for p in _listed(data, "places")
              if isinstance(p.get("id"), str)]
  return declared or list(PLACES)


def _unknown(value: str, loc: tuple, known: list[str], what: str,
             where: str) -> Problem:
  near = difflib.get_close_matches(value, known, n=1)
  guess = f" (did you mean {near[0]}?)" if near else ""
  return Problem(loc, f"{show(value)} is not {what}{guess}",
                 f"use one of {where}: {', '.join(known) or '(none)'}")


def _problems(population: Population, data: Mapping[str, Any]) -> list[Problem]:
  problems: list[Problem] = []
  behaviours = [b.get("id") for b in _listed(data, "behaviours")]
  for bid in population.habits:
    if behaviours and bid not in behaviours:
      problems.append(_unknown(bid, (KEY, "habits", bid), behaviours,
                               "a behaviour id", "the behaviours"))
  places = _places(data)
  homes = [((KEY, "home"), population.home)] + [
      ((KEY, "groups", gid, "home"), g.home)
      for gid, g in population.groups.items()]
  for loc, home in homes:
    for pid in home or {}:
      if pid not in places:
        problems.append(_unknown(pid, (*loc, pid), places, "a place of this "
                                 "scenario", "its places"))
  for gid, group in population.groups.items():
    if group.committed and not group.initial_norms:
      problems.append(Problem(
          (KEY, "groups", gid, "committed"), "is true, but the group starts "
          "with no norms to hold", "add initial_norms: the norms its members "
          "hold and never give up (or set committed: false)"))
  open_ = [gid for gid, g in population.groups.items() if g.share is None]
  for gid in open_[1:]:
    problems.append(Problem(
        (KEY, "groups", gid), f"gives no share, as {open_[0]} does",
        "give it a share: only one group takes the share the others leave"))
  total = sum((g.share for g in population.groups.values()
               if g.share is not None), Fraction(0))
  if total > 1:
    problems.append(Problem(
        (KEY, "groups"), f"the shares add up to {float(total):g}, more than 1",
        "lower them so that they add up to at most 1 (the rest belongs to "
        "no group)"))
  return problems


# -- the draw -----------------------------------------------------------------


def _names(population: Population, taken: set[str], rng: random.Random
           ) -> list[str]:
  """Every first name with every last name, those taken left out, shuffled."""
  given = population.names
  first = given.first if given else FIRST_NAMES
  last = given.last if given else LAST_NAMES
  pool = list(dict.fromkeys(f"{f} {l}" for f in first for l in last))
  free, folded = [], set(taken)
  for name in pool:
    if name.casefold() not in folded:
      folded.add(name.casefold())
      free.append(name)
  rng.shuffle(free)
  return free


def _slots(n: int, weights: Sequence[Fraction], items: Sequence[Any],
           rng: random.Random) -> list[Any]:
  """`items` dealt to `n` agents in apportioned numbers, in a drawn order."""
  slots = [item for item, k in zip(items, apportion(n, weights))
           for _ in range(k)]
  rng.shuffle(slots)
  return slots


def _room(data: Mapping[str, Any], places: list[str]) -> dict[str, int | None]:
  """The agents each place can still take after the hand-written ones."""
  declared = {p.get("id"): p.get("capacity") for p in _listed(data, "places")
              if isinstance(p.get("id"), str)}
  start = data.get("default_place")
  start = start if isinstance(start, str) else places[0]
  room: dict[str, int | None] = {}
  for pid in places:
    capacity = declared.get(pid)
    room[pid] = (capacity if isinstance(capacity, int)
                 and not isinstance(capacity, bool) else None)
  for agent in _listed(data, "agents"):
    home = agent.get("home")
    home = home if isinstance(home, str) and home else start
    if room.get(home) is not None:
      room[home] = max(0, room[home] - 1)
  return room


def _listed(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
  """The mappings of the list under `key` (none if it is no list)."""
  items = data.get(key)
  return ([i for i in items if isinstance(i, Mapping)]
          if isinstance(items, list) else [])


def _spread(n: int, weights: dict[str, Fraction],
            room: dict[str, int | None]) -> tuple[dict[str, int], int]:
  """`n` agents over the weighted places, none past its room; the room
  taken is taken from `room`. Returns the counts and how many found none."""
  counts = dict.fromkeys(weights, 0)
  left = n
  while left:
    open_ = [p for p in weights if room[p] is None or room[p] > 0]
    if not open_:
      break
    placed = 0
    for pid, k in zip(open_, apportion(left, [weights[p] for p in open_])):
      free = room[pid]
      k = k if free is None else min(k, free)
      counts[pid] += k
      placed += k
      if free is not None:
        room[pid] = free - k
    left -= placed
    if not placed:
      break
  return counts, left


def draw(population: Population, data: Mapping[str, Any]
         ) -> tuple[list[dict[str, Any]], list[Problem]]:
  """The agents of the block, as the file would write them."""
  rng = random.Random(population.seed)
  n = population.count
  hand = _listed(data, "agents")
  taken = {str(a.get("name", "")).strip().casefold() for a in hand}
  names = _names(population, taken, rng)
  if len(names) < n:
    return [], [Problem(
        (KEY, "count"), f"{n} agents need {n} names, but the names give "
        f"{len(names)} not already used", "add first or last names under "
        "names:, or lower count")]
  names = names[:n]
  templates = _slots(n, [t.weight for t in population.templates],
                     population.templates, rng)
  ages = [rng.randint(*t.ages) for t in templates]
  share = population.entrepreneurs
  entrepreneurs = set(rng.sample(range(n), apportion(n, [share, 1 - share])[0]))
  groups: list[tuple[str, Group] | None] = [*population.groups.items(), None]
  member = _slots(n, population.shares(), groups, rng)
  habits: list[list[str]] = [[] for _ in range(n)]
  for habit in population.habits.values():
    k = apportion(n, [habit.prevalence, 1 - habit.prevalence])[0]
    for i in sorted(rng.sample(range(n), k)):
      habits[i].append(habit.text)
  homes, problems = _homes(population, data, member, groups, rng)
  agents = []
  for i, name in enumerate(names):
    template, grouped = templates[i], member[i]
    fields = {"name": name, "first_name": name.split()[0], "age": ages[i],
              "occupation": template.occupation}
    persona = " ".join([template.persona.format(**fields),
                        *(h.format(**fields) for h in habits[i])])
    agent: dict[str, Any] = {
        "name": name,
        "role": "entrepreneur" if i in entrepreneurs else "ordinary",
        "persona": persona}
    if template.preferences:
      agent["preferences"] = dict(template.preferences)
    if template.goal:
      agent["goal"] = template.goal.format(**fields)
    if homes[i] is not None:
      agent["home"] = homes[i]
    if grouped is not None:
      gid, group = grouped
      agent["group"] = gid
      if group.committed:
        agent["committed"] = True
      if group.initial_norms:
        agent["initial_norms"] = [norm.model_dump(mode="json")
                                  for norm in group.initial_norms]
    agents.append(agent)
  return agents, problems


def _homes(population: Population, data: Mapping[str, Any],
           member: list[tuple[str, Group] | None],
           groups: list[tuple[str, Group] | None],
           rng: random.Random) -> tuple[list[str | None], list[Problem]]:
  """Each agent's home: its group's places, else the block's, else every
  declared place alike; in a file without places, the default place."""
  places = _places(data)
  declared = isinstance(data.get("places"), list) and bool(data["places"])
  room = _room(data, places)
  homes: list[str | None] = [None] * len(member)
  problems = []
  for grouped in groups:
    chosen = [i for i, m in enumerate(member) if m is grouped]
    own = grouped[1].home if grouped is not None else None
    weights = own or population.home
    if not chosen or (weights is None and not declared):
      continue
    weights = weights or {p: Fraction(1) for p in places}
    counts, left = _spread(len(chosen), dict(weights), room)
    if left:
      loc = ((KEY, "groups", grouped[0], "home") if own
             else (KEY, "home") if population.home else (KEY, "count"))
      whose = f"of group {grouped[0]} " if grouped is not None else ""
      problems.append(Problem(
          loc, f"{left} of the {len(chosen)} agents {whose}find no room in "
          f"{', '.join(weights)}", "raise those places' capacity, add places "
          "to home, or lower count or the group's share"))
      continue
    slots = [pid for pid, k in counts.items() for _ in range(k)]
    rng.shuffle(slots)
    for i, pid in zip(chosen, slots):
      homes[i] = pid
  return homes, problems

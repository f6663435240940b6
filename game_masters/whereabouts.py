"""Whereabouts: where each agent is, and the moves of a slot.

An agent starts at its home; afterwards it is where the referee placed its
latest action (game_masters/adjudication.py). Going somewhere is an action
like any other: when the place of an agent's action differs from where it
was, it moved, unless the place is full (`capacity`): then it stays, and
the action record says so. Moves are settled once per slot, after every
action of the slot is adjudicated, in name order and until nothing more
can move, so who gets the last seat never depends on which adjudication
finished first.

The talks of a slot are held beside its adjudication: they take the
places the agents were in when they asked to talk (the slot's start),
whether the adjudication has settled the slot's moves yet or not.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from concordia.typing import entity_component

from crsec_concordia.game_masters.places import PlaceMap

WHEREABOUTS_KEY = "whereabouts"
CAPACITY = "capacity"  # An action record's `move_refused`: the place was full.
CLOSED = "closed"  # ... the place was closed (game_masters/interventions.py).


class Whereabouts(entity_component.ContextComponent):
  """Each agent's current place, under a lock (and in the checkpoint)."""

  def __init__(self, *, places: PlaceMap, homes: Mapping[str, str]):
    """Creates the component.

    Args:
      places: the scenario's places.
      homes: where each agent starts (`Scenario.home_of`).
    """
    super().__init__()
    self._places = places
    self._lock = threading.Lock()
    self._now: dict[str, str] = dict(homes)
    # The places before the last settled slot, and that slot.
    self._before: dict[str, str] = dict(homes)
    self._settled = 0

  # The places closed now (game_masters/interventions.py): nobody moves in.
  closed: frozenset[str] = frozenset()

  def turn_out(self, places: Sequence[str],
               refuge: Callable[[str, frozenset[str]], str | None]
               ) -> dict[str, str]:
    """Moves everyone in `places` to `refuge(name, closed)` (staying where
    it is when that is None); returns where each went, in name order."""
    closed = frozenset(self.closed) | frozenset(places)
    moved = {}
    with self._lock:
      for name in sorted(self._now):
        if self._now[name] in places:
          to = refuge(name, closed)
          if to is not None:
            self._now[name] = moved[name] = to
    return moved

  @property
  def places(self) -> PlaceMap:
    return self._places

  def place_of(self, name: str) -> str:
    """Where `name` is now (before the current slot's moves are settled)."""
    with self._lock:
      return self._now[name]

  def now(self) -> dict[str, str]:
    with self._lock:
      return dict(self._now)

  def at_start_of(self, step: int) -> dict[str, str]:
    """Where everyone was when slot `step` began."""
    with self._lock:
      return dict(self._before if self._settled == step else self._now)

  def may_talk(self, a: str, b: str, step: int) -> bool:
    """Whether `a` and `b` can talk in slot `step`: in the same place when
    it began, or anywhere in a scenario that declares no places."""
    if not self._places.declared:
      return True
    where = self.at_start_of(step)
    return where.get(a) is not None and where.get(a) == where.get(b)

  def together(self, requests: Sequence[Mapping[str, Any]], step: int
               ) -> tuple[list[Mapping[str, Any]],
                          list[tuple[Mapping[str, Any], dict[str, str]]]]:
    """(the talk requests of slot `step` whose two agents may talk, each
    with its `place` where the scenario declares places; the others with
    where each of the two was)."""
    where = self.at_start_of(step)
    kept, apart = [], []
    for r in requests:
      pair = (r["initiator"], r["partner"])
      if self.may_talk(*pair, step):
        # Where the talk happens, in a scenario that declares places.
        kept.append({**r, "place": where.get(r["initiator"], "")}
                    if self._places.declared else r)
      else:
        apart.append((r, {n: where.get(n, "") for n in pair}))
    return kept, apart

  def settle(self, step: int, wanted: Mapping[str, str]
             ) -> dict[str, dict[str, Any]]:
    """Moves everyone to the place of its action in slot `step`, where
    there is room; returns, for each agent whose place the slot changed or
    refused, `moved_from` or `move_refused` (with `refused_place`): none
    in a scenario that declares no places, whose records stay as they were.

    A move into a full place waits for those leaving it: moves are tried
    in name order, again while any succeeds, and those left are refused
    (an agent then stays where it was).
    """
    with self._lock:
      before = dict(self._now)
      now = dict(before)
      pending = sorted(n for n, p in wanted.items()
                       if p in self._places and before.get(n, p) != p)
      shut = sorted(n for n in pending if wanted[n] in self.closed)
      pending = [n for n in pending if n not in shut]
      for name, place in wanted.items():
        now.setdefault(name, place)  # An agent not known yet arrives.
      count = Counter(now.values())
      moved = True
      while moved and pending:
        moved = False
        for name in list(pending):
          target = wanted[name]
          capacity = self._places.capacity(target)
          if capacity is None or count[target] < capacity:
            count[now[name]] -= 1
            count[target] += 1
            now[name] = target
            pending.remove(name)
            moved = True
      changes: dict[str, dict[str, Any]] = {}
      for name in sorted(wanted):
        if name in shut:
          changes[name] = {"move_refused": CLOSED,
                           "refused_place": wanted[name]}
        elif name in pending:
          changes[name] = {"move_refused": CAPACITY,
                           "refused_place": wanted[name]}
        elif name in before and now[name] != before[name]:
          changes[name] = {"moved_from": before[name]}
      self._before, self._now, self._settled = before, now, step
    return changes if self._places.declared else {}

  def get_state(self) -> entity_component.ComponentState:
    with self._lock:
      return {"now": dict(self._now), "before": dict(self._before),
              "settled": self._settled}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._lock:
      self._now = {str(k): str(v) for k, v in dict(state["now"]).items()}
      self._before = {str(k): str(v) for k, v in
                      dict(state.get("before", self._now)).items()}
      self._settled = int(state.get("settled", 0))

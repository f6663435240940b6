"""InterventionActing: who acts in a slot, once the slot's interventions
have happened.

A scenario's `interventions:` (scenarios/interventions.py) change the
society while it runs. Each happens as its slot opens, before anyone
observes or acts in it, so this component does them where the engine asks
who acts next: the answer then already counts who has arrived and who has
left. It replaces EveryoneActs only in a scenario with interventions, so a
run without any plays and records exactly as before.

  - announce: the text is queued, word for word, for every agent present
    in the places named (everyone present when none), so it opens the
    agent's observation of that slot and reaches its act prompt as any
    event does.
  - arrive / leave: the agents arriving were built with the others but
    took no part: they do not act, perceive nothing (ExactObservations
    queues nothing for them) and nobody can talk with them; from their
    slot they do. An agent that leaves is so from its slot on.
  - teach: each agent named receives the norm through its port
    (`receive_norm`), held from that slot, committed or not; the port
    records it (`taught`) and tells the planner.
  - close / open: nobody is in a closed place. Those in it when it closes
    go to their home, else the default place, else the first place still
    open (they would otherwise stay where they are when none is open);
    a move into a closed place is refused (whereabouts.py, `closed`).

Who is absent and which places are closed at a slot are a function of the
scenario, the seed and the slot alone (replayed from the first slot), and
the component keeps in its state only how many slots it has opened: a run
resumed from a checkpoint opens the next slot as the uninterrupted run did.
What the interventions did to the agents (a taught norm, an announcement
observed) is in the agents' own state. Each intervention is one record
(`intervention`), written with the game master's records of its slot,
first.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from concordia.typing import entity as entity_lib
from concordia.typing import entity_component

from crsec_concordia import observations
from crsec_concordia.components.port import port_of
from crsec_concordia.game_masters import clock as clock_lib
from crsec_concordia.game_masters import conversations as conversations_lib
from crsec_concordia.game_masters import exact_observations as queue_lib
from crsec_concordia.game_masters import whereabouts as whereabouts_lib
from crsec_concordia.game_masters.acting import EveryoneActs
from crsec_concordia.rundir.format import INTERVENTION
from crsec_concordia.scenarios import Scenario
from crsec_concordia.scenarios.interventions import (Intervention, arriving,
                                                     concerned)


def replay(scenario: Scenario, seed: int, step: int
           ) -> tuple[frozenset[str], frozenset[str], dict[int, list[str]]]:
  """(the agents taking no part, the places closed, whom each arrive, leave
  and teach concerned, by its index in the block) once slot `step`'s
  interventions have happened, replayed from the first slot."""
  groups = {a.name: a.group for a in scenario.agents}
  absent = arriving(scenario.interventions, groups, seed)
  closed: set[str] = set()
  who: dict[int, list[str]] = {}
  for slot in range(1, step + 1):
    for i, iv in _due(scenario, slot):
      if iv.kind in ("arrive", "leave", "teach"):
        present = [n for n in scenario.agent_names if n not in absent]
        who[i] = concerned(iv, groups, present, seed, i)
      if iv.kind == "arrive":
        absent -= set(who[i])
      elif iv.kind == "leave":
        absent |= set(who[i])
      elif iv.kind == "close":
        closed |= set(iv.places)
      elif iv.kind == "open":
        closed -= set(iv.places)
  return frozenset(absent), frozenset(closed), who


def absent_and_closed(scenario: Scenario, seed: int, step: int
                      ) -> tuple[frozenset[str], frozenset[str]]:
  """(the agents taking no part, the places closed) after slot `step`'s
  interventions."""
  absent, closed, _ = replay(scenario, seed, step)
  return absent, closed


def _due(scenario: Scenario, slot: int) -> list[tuple[int, Intervention]]:
  """The interventions of `slot`, in the block's order."""
  return [(i, iv) for i, iv in enumerate(scenario.interventions)
          if scenario.intervention_slot(iv) == slot]


class InterventionActing(EveryoneActs):
  """Every agent present acts; the slot's interventions happen first."""

  def __init__(self, *, scenario: Scenario, seed: int,
               entities: Sequence[Any], player_names: Sequence[str]):
    """Creates the component.

    Args:
      scenario: the run's scenario (its `interventions`).
      seed: the run seed (which agents a `leave` share draws).
      entities: the agents (a `teach` reaches them through their ports).
      player_names: every agent, present or not yet.
    """
    super().__init__(player_names=player_names)
    self._scenario = scenario
    self._seed = seed
    self._entities = {e.name: e for e in entities}
    self._lock = threading.Lock()
    self._opened = 0
    self._records: list[dict[str, Any]] = []

  def _part(self, key: str, type_: type) -> Any:
    found = self.get_entity().get_all_context_components().get(key)  # type: ignore[attr-defined]
    return found if isinstance(found, type_) else None

  def drain_records(self) -> list[dict[str, Any]]:
    """The intervention records since the last drain."""
    with self._lock:
      records, self._records = self._records, []
    return records

  def present(self) -> list[str]:
    """Who takes part in the slot opened last, in name order."""
    with self._lock:
      step = self._opened
    absent, _ = absent_and_closed(self._scenario, self._seed, step)
    return [n for n in self.names if n not in absent]

  def open_slot(self, step: int) -> None:
    """Does the interventions of every slot up to `step` not yet opened,
    and tells the queue, the talks and the whereabouts who is absent and
    what is closed."""
    with self._lock:
      first, self._opened = self._opened + 1, max(self._opened, step)
    for slot in range(first, step + 1):
      absent, closed, who = replay(self._scenario, self._seed, slot)
      self._share(absent, closed)
      stamp = self._scenario.stamp_for(slot)
      for index, iv in _due(self._scenario, slot):
        record = self._happen(index, iv, stamp, who.get(index, []))
        with self._lock:
          self._records.append({"kind": INTERVENTION,
                                **clock_lib.stamp_fields(stamp), **record})
    if first > step:  # A resumed run: only the state to hand on.
      self._share(*absent_and_closed(self._scenario, self._seed, step))

  def _share(self, absent: frozenset[str], closed: frozenset[str]) -> None:
    queue = self._part(queue_lib.EXACT_OBSERVATIONS_KEY,
                       queue_lib.ExactObservations)
    if queue is not None:
      queue.set_absent(absent)
    talks = self._part(conversations_lib.CONVERSATIONS_KEY,
                       conversations_lib.NormConversations)
    if talks is not None:
      talks.absent = absent
    where = self._part(whereabouts_lib.WHEREABOUTS_KEY,
                       whereabouts_lib.Whereabouts)
    if where is not None:
      where.closed = closed

  def _happen(self, index: int, iv: Intervention, stamp,
              who: Sequence[str]) -> dict[str, Any]:
    """Does one intervention (`who`: the agents it concerns); its
    record's own fields."""
    record: dict[str, Any] = {"intervention": iv.kind, "index": index}
    where = self._part(whereabouts_lib.WHEREABOUTS_KEY,
                       whereabouts_lib.Whereabouts)
    if iv.kind == "announce":
      now = where.now() if where is not None else {}
      reached = [n for n in self._present_after(stamp.step)
                 if not iv.places or now.get(n) in iv.places]
      queue = self._part(queue_lib.EXACT_OBSERVATIONS_KEY,
                         queue_lib.ExactObservations)
      for name in reached:
        # Queued, it opens the agent's observation of this slot and so its
        # act prompt (a notice held in memory alone does not reach it);
        # told through the port, it is the agent's news, so that a
        # plan-driven agent acts on it rather than going on.
        if queue is not None:
          queue.add(name, observations.header(stamp) + (iv.text or ""))
        if name in self._entities:
          port_of(self._entities[name]).receive_notice(iv.text or "",
                                                       stamp=stamp)
      return {**record, "text": iv.text, "places": list(iv.places),
              "agents": reached}
    if iv.kind in ("arrive", "leave", "teach"):
      if iv.kind == "teach" and iv.norm is not None:
        for name in (n for n in who if n in self._entities):
          port_of(self._entities[name]).receive_norm(
              iv.norm.content, iv.norm.type, iv.norm.utility,
              committed=iv.committed, stamp=stamp)
        record.update(norm={"content": iv.norm.content, "type": iv.norm.type,
                            "utility": iv.norm.utility},
                      committed=iv.committed)
      return {**record, "agents": list(who)}
    present = set(self._present_after(stamp.step))
    moved = (where.turn_out(iv.places, lambda name, closed: (
        self._refuge(name, closed) if name in present else None))
             if iv.kind == "close" and where is not None else {})
    return {**record, "places": list(iv.places),
            **({"moved": moved} if moved else {})}

  def _present_after(self, step: int) -> list[str]:
    absent, _ = absent_and_closed(self._scenario, self._seed, step)
    return [n for n in self.names if n not in absent]

  def _refuge(self, name: str, closed: frozenset[str]) -> str | None:
    """Where `name`, present, goes when its place closes (None: it stays,
    with nowhere open; an absent agent stays too)."""
    options = [self._scenario.home_of(name), self._scenario.start_place,
               *self._scenario.place_ids]
    return next((p for p in options if p not in closed), None)

  def pre_act(self, action_spec: entity_lib.ActionSpec) -> str:
    if action_spec.output_type != entity_lib.OutputType.NEXT_ACTING:
      return ""
    clock = self.get_entity().get_component(clock_lib.CLOCK_KEY,
                                            type_=clock_lib.SlotClock)
    self.open_slot(clock.current_stamp().step)
    answer = ",".join(self.present())
    self._logging_channel({"Key": "acting", "Summary": answer,
                           "Value": answer})
    return answer

  def get_state(self) -> entity_component.ComponentState:
    with self._lock:
      return {"opened": self._opened}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._lock:
      self._opened = int(state.get("opened", 0))


def records_of(component: Any) -> list[Mapping[str, Any]]:
  """A next-acting component's records: an InterventionActing's, else none."""
  drain = getattr(component, "drain_records", None)
  return drain() if callable(drain) else []

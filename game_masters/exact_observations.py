"""ExactObservations: deliver queued events verbatim, one observation each.

Concordia's stock MakeObservation lets the LLM write or reformat what an
agent observes. The CRSEC components parse observations to know who did what,
where and when (`crsec_concordia.observations`), so the café delivers the
exact text the game master formatted, never a model's rewording, and only
events (an empty queue yields an empty observation, which the engine skips:
no clock ticks).

The engine makes one observation per agent per step; when more than one
event waits for an agent, all but the last are handed to the agent's
`observe` directly, in order, so every event is its own observation.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence

from concordia.components.game_master import event_resolution as resolution_lib
from concordia.components.game_master import make_observation as make_observation_lib
from concordia.environment.engines import sequential
from concordia.typing import entity as entity_lib
from concordia.typing import entity_component

from crsec_concordia.game_masters import clock as clock_lib

EXACT_OBSERVATIONS_KEY = (
    make_observation_lib.DEFAULT_MAKE_OBSERVATION_COMPONENT_KEY)
EVERYONE = "all"


def _name_from_call(call_to_action: str, template: str) -> str:
  prefix, suffix = template.split("{name}")
  if not (call_to_action.startswith(prefix)
          and call_to_action.endswith(suffix)):
    raise ValueError(f"unexpected observation request {call_to_action!r}: "
                     f"the engine and the game master disagree on "
                     f"{template!r}")
  return call_to_action.removeprefix(prefix).removesuffix(suffix)


class ExactObservations(entity_component.ContextComponent,
                        entity_component.ComponentWithLogging):
  """A per-agent queue of exact observation texts."""

  def __init__(
      self,
      *,
      player_names: Sequence[str],
      entities: Sequence[entity_lib.Entity] = (),
      call_to_make_observation: str = (
          sequential.DEFAULT_CALL_TO_MAKE_OBSERVATION),
      clock_key: str = clock_lib.CLOCK_KEY,
  ):
    """Creates the queue.

    Args:
      player_names: who is present (an event for "all" goes to all of them).
      entities: the agents (a live list), to deliver extra events directly.
      call_to_make_observation: the engine's request template, with {name}.
      clock_key: the key of the game master's CafeClock (the premise is
        recognised as the event observed before the first step).
    """
    super().__init__()
    self._names = tuple(player_names)
    self._entities = entities
    self._template = call_to_make_observation
    self._clock_key = clock_key
    self._lock = threading.Lock()
    self._queue: dict[str, list[str]] = {name: [] for name in self._names}
    self._premise_seen = False

  def add(self, who: str, text: str) -> None:
    """Queues `text` for one agent, or for everyone with who="all"."""
    with self._lock:
      targets = self._names if who == EVERYONE else (who,)
      for name in targets:
        self._queue.setdefault(name, []).append(text)

  def pending(self, name: str) -> list[str]:
    with self._lock:
      return list(self._queue.get(name, []))

  def _agent(self, name: str) -> entity_lib.Entity | None:
    return next((e for e in self._entities if e.name == name), None)

  def pre_observe(self, observation: str) -> str:
    # The engine shows the premise to the game master as "[event] premise"
    # before the first step; the agents get it as their first observation.
    tag = resolution_lib.EVENT_TAG
    if observation.startswith(tag):
      clock = self.get_entity().get_component(self._clock_key,
                                              type_=clock_lib.CafeClock)
      with self._lock:
        first = not self._premise_seen and clock.completed_steps == 0
        self._premise_seen = self._premise_seen or first
      premise = observation[len(tag):].strip()
      if first and premise:
        self.add(EVERYONE, premise)
    return ""

  def pre_act(self, action_spec: entity_lib.ActionSpec) -> str:
    if action_spec.output_type != entity_lib.OutputType.MAKE_OBSERVATION:
      return ""
    name = _name_from_call(action_spec.call_to_action, self._template)
    with self._lock:
      events, self._queue[name] = self._queue.get(name, []), []
    if len(events) > 1:
      entity = self._agent(name)
      if entity is None:
        # No handle on the agent: the events still arrive, joined.
        events = ["\n\n".join(events)]
      else:
        for text in events[:-1]:
          entity.observe(text)
    result = events[-1] if events else ""
    self._logging_channel({"Key": "observation", "Summary": f"{name}",
                           "Value": result, "Delivered": list(events)})
    return result

  def get_state(self) -> entity_component.ComponentState:
    with self._lock:
      return {"queue": copy.deepcopy(self._queue),
              "premise_seen": self._premise_seen}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._lock:
      self._queue = {k: list(v) for k, v in dict(state["queue"]).items()}
      self._premise_seen = bool(state.get("premise_seen", True))

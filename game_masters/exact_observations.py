"""ExactObservations: deliver queued events verbatim, one observation a slot.

Concordia's stock MakeObservation lets the LLM write or reformat what an
agent observes. The CRSEC components parse observations to know who did what,
where and when (`crsec_concordia.observations`), so the game master delivers
the exact text it formatted, never a model's rewording, and only events (an
empty queue yields an empty observation, which the engine skips).

Everything queued for an agent since its last observation (the slot's
actions it perceives, in name order: perception.py; and the conversation
it took part in) arrives as ONE
observation, opened by the current slot's clock line, events separated by
newlines: the engine makes observations for
all agents under one lock, so handing extra events to an agent's `observe`
from here would run that agent's norm processing inside the lock and
serialise the society.
"""

from __future__ import annotations

import copy
import functools
import threading
from collections.abc import Mapping, Sequence

from concordia.components.game_master import event_resolution as resolution_lib
from concordia.components.game_master import make_observation as make_observation_lib
from concordia.typing import entity as entity_lib
from concordia.typing import entity_component

from crsec_concordia import observations
from crsec_concordia.game_masters import clock as clock_lib
from crsec_concordia.game_masters.action_spec import name_from_request

EXACT_OBSERVATIONS_KEY = (
    make_observation_lib.DEFAULT_MAKE_OBSERVATION_COMPONENT_KEY)
EVERYONE = "all"


@functools.lru_cache(maxsize=4096)
def _is_talk(text: str) -> bool:
  """Whether a queued text is a talk's transcript (remembered: `add` asks
  it of every queued text for every agent, and a slot's actions are queued
  one by one for all, so a fifty-agent slot parsed the same fifty texts
  some sixty thousand times at the end of its resolution)."""
  return isinstance(observations.parse(text),
                    observations.ConversationObservation)


class ExactObservations(entity_component.ContextComponent,
                        entity_component.ComponentWithLogging):
  """A per-agent queue of exact observation texts."""

  def __init__(
      self,
      *,
      player_names: Sequence[str],
      call_to_make_observation: str = (
          make_observation_lib.DEFAULT_CALL_TO_MAKE_OBSERVATION),
      clock_key: str = clock_lib.CLOCK_KEY,
  ):
    """Creates the queue.

    Args:
      player_names: who is present (an event for "all" goes to all of them).
      call_to_make_observation: the engine's request template, with {name}.
      clock_key: the key of the game master's SlotClock (the premise is
        recognised as the event observed before the first slot).
    """
    super().__init__()
    self._names = tuple(player_names)
    self._template = call_to_make_observation
    self._clock_key = clock_key
    self._lock = threading.Lock()
    self._queue: dict[str, list[str]] = {name: [] for name in self._names}
    self._premise_seen = False
    # Agents taking no part (not arrived yet, or gone): nothing is queued
    # for them (game_masters/interventions.py says who, each slot).
    self._absent: frozenset[str] = frozenset()

  def set_absent(self, names: frozenset[str]) -> None:
    with self._lock:
      self._absent = frozenset(names)

  def absent(self) -> frozenset[str]:
    """The agents taking no part in the slot now open."""
    with self._lock:
      return self._absent

  def add(self, who: str, text: str) -> None:
    """Queues `text` for one agent, or for everyone with who="all".

    A talk's transcript goes after the slot's actions, whichever was
    queued first: the adjudication and the talks are resolved side by side
    and queue what they produce when done, so arrival order was whichever
    finished first (the talks, when the model answers at once), in the
    observation and in the checkpointed queue alike.
    """
    talk = _is_talk(text)
    with self._lock:
      targets = self._names if who == EVERYONE else (who,)
      for name in (n for n in targets if n not in self._absent):
        queue = self._queue.setdefault(name, [])
        if talk:
          queue.append(text)
        else:  # Before the first talk queued, after everything else.
          at = next((i for i, t in enumerate(queue) if _is_talk(t)),
                    len(queue))
          queue.insert(at, text)

  def add_each(self, texts: Mapping[str, Sequence[str]]) -> None:
    """Queues each agent's own texts, as `add(name, text)` would one by one
    (what each perceives of a slot: game_masters/perception.py)."""
    with self._lock:
      for name, given in texts.items():
        if name in self._absent:
          continue
        events = [t for t in given if not _is_talk(t)]
        talks = [t for t in given if _is_talk(t)]
        queue = self._queue.setdefault(name, [])
        at = next((i for i, t in enumerate(queue) if _is_talk(t)), len(queue))
        queue[at:at] = events
        queue.extend(talks)

  def pending(self, name: str) -> list[str]:
    with self._lock:
      return list(self._queue.get(name, []))

  def pre_observe(self, observation: str) -> str:
    # The engine shows the premise to the game master as "[event] premise"
    # before the first slot; the agents get it as their first observation.
    tag = resolution_lib.EVENT_TAG
    if observation.startswith(tag):
      clock = self.get_entity().get_component(self._clock_key,
                                              type_=clock_lib.SlotClock)
      with self._lock:
        first = not self._premise_seen and clock.completed_steps == 0
        self._premise_seen = self._premise_seen or first
      premise = observation[len(tag):].strip()
      if first and premise:
        self.add(EVERYONE, premise)
    return ""

  def take(self, name: str) -> str:
    """Everything queued for `name`, as one observation; empties the queue.

    The observation opens with the clock line of the current slot (see
    crsec_concordia/observations.py). Thread-safe and cheap: the slot
    engine calls it for every agent at once instead of asking the game
    master's `act` (which runs one request at a time, through all of its
    components).
    """
    clock = self.get_entity().get_component(self._clock_key,
                                            type_=clock_lib.SlotClock)
    with self._lock:
      events, self._queue[name] = self._queue.get(name, []), []
    if not events:
      return ""
    now = observations.format_clock(clock.current_stamp())
    return "\n".join([now, *events])

  def pre_act(self, action_spec: entity_lib.ActionSpec) -> str:
    if action_spec.output_type != entity_lib.OutputType.MAKE_OBSERVATION:
      return ""
    name = name_from_request(action_spec.call_to_action, self._template)
    result = self.take(name)
    self._logging_channel({"Key": "observation", "Summary": f"{name}",
                           "Value": result})
    return result

  def get_state(self) -> entity_component.ComponentState:
    with self._lock:
      return {"queue": copy.deepcopy(self._queue),
              "premise_seen": self._premise_seen}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._lock:
      self._queue = {k: list(v) for k, v in dict(state["queue"]).items()}
      self._premise_seen = bool(state.get("premise_seen", True))

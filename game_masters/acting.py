"""TurnOrder: who acts at each step, decided without a model.

The stock game master asks the LLM who acts next; a small model picks the
same agent again and again and no two runs agree. Here the order is a
seeded shuffle per round: every agent acts once per round, the order varies
between rounds, and it is a function of the run seed and the step alone, so
a resumed run continues exactly where the interrupted one stopped.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Sequence

from concordia.components.game_master import next_acting as next_acting_lib
from concordia.typing import entity as entity_lib
from concordia.typing import entity_component

from crsec_concordia.game_masters import clock as clock_lib
from crsec_concordia.models.base import stable_seed

TURN_ORDER_KEY = next_acting_lib.DEFAULT_NEXT_ACTING_COMPONENT_KEY


def actor_for_step(names: Sequence[str], seed: int, step: int) -> str:
  """The agent acting at `step` (1-based): round r is a shuffle seeded by r."""
  ordered = sorted(names)
  index = step - 1
  round_, position = divmod(index, len(ordered))
  random.Random(stable_seed("turn-order", seed, round_)).shuffle(ordered)
  return ordered[position]


class TurnOrder(entity_component.ContextComponent,
                entity_component.ComponentWithLogging):
  """Answers the engine's "Who is next to act?" from the seed and the step."""

  def __init__(self, *, player_names: Sequence[str], seed: int,
               clock_key: str = clock_lib.CLOCK_KEY):
    """Creates the component.

    Args:
      player_names: the agents; all act once per round.
      seed: the run seed.
      clock_key: the key of the game master's CafeClock.
    """
    super().__init__()
    if not player_names:
      raise ValueError("a café needs at least one agent")
    self._names = tuple(player_names)
    self._seed = seed
    self._clock_key = clock_key
    self._lock = threading.Lock()
    self._current: str | None = None

  def _clock(self) -> clock_lib.CafeClock:
    return self.get_entity().get_component(self._clock_key,
                                           type_=clock_lib.CafeClock)

  def actor_at(self, step: int) -> str:
    """The agent acting at `step` (1-based), past or future."""
    return actor_for_step(self._names, self._seed, step)

  @property
  def current_actor(self) -> str | None:
    """The agent named for the step in progress (None before the first)."""
    with self._lock:
      return self._current

  def pre_act(self, action_spec: entity_lib.ActionSpec) -> str:
    if action_spec.output_type != entity_lib.OutputType.NEXT_ACTING:
      return ""
    stamp = self._clock().current_stamp()
    actor = self.actor_at(stamp.step)
    with self._lock:
      self._current = actor
    self._logging_channel({"Key": "turn order",
                           "Summary": f"step {stamp.step}: {actor}",
                           "Value": actor})
    return actor

  def get_state(self) -> entity_component.ComponentState:
    with self._lock:
      return {"current_actor": self._current}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._lock:
      self._current = state.get("current_actor")

"""SlotClock: the simulated clock, and the only judge of when an episode ends.

Concordia's engine asks the game master before every step whether the
simulation is finished. Without an answer under `__terminate__` the stock
game master asks the LLM, and a small model ends episodes at random. Here the
scenario decides: the episode ends when its steps are done, never on a
model's whim. The clock also gives every event its simulated time, so the
count of completed steps is its whole state (and all a checkpoint needs).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from concordia.components.game_master import terminate as terminate_lib
from concordia.typing import entity as entity_lib
from concordia.typing import entity_component

from crsec_concordia import observations

CLOCK_KEY = terminate_lib.DEFAULT_TERMINATE_COMPONENT_KEY  # "__terminate__"


def stamp_fields(stamp: observations.Stamp) -> dict[str, Any]:
  """The time fields every record of the run directory carries."""
  return {"step": stamp.step, "time": stamp.time, "day": stamp.day,
          "clock": stamp.clock}


class SlotClock(entity_component.ContextComponent,
                entity_component.ComponentWithLogging):
  """Counts completed steps and answers the engine's termination question.

  Steps (slots) are numbered from 1: during slot `n` the clock shows the
  scenario's time of slot `n`. The slot is complete when the game master
  has resolved it: the clock advances in its own `post_act` after a
  RESOLVE act, once every component's work on the slot is done (the
  components of one act run in parallel threads, so none of them may move
  the clock under another's feet).
  """

  def __init__(self, *, total_steps: int,
               stamp_for: Callable[[int], observations.Stamp]):
    """Creates the clock.

    Args:
      total_steps: the episode's length; after that many steps the game
        master answers "Yes" to "Is the game/simulation finished?".
      stamp_for: the scenario's simulated time of a step number (1-based).
    """
    super().__init__()
    if total_steps < 1:
      raise ValueError("total_steps must be at least 1")
    self._total = total_steps
    self._stamp_for = stamp_for
    self._lock = threading.Lock()
    self._completed = 0
    self._resolving = False

  @property
  def total_steps(self) -> int:
    return self._total

  @property
  def completed_steps(self) -> int:
    with self._lock:
      return self._completed

  @property
  def finished(self) -> bool:
    with self._lock:
      return self._completed >= self._total

  def stamp_at(self, step: int) -> observations.Stamp:
    """The simulated time of any step (1-based)."""
    return self._stamp_for(step)

  def current_stamp(self) -> observations.Stamp:
    """The simulated time of the step in progress."""
    with self._lock:
      step = self._completed + 1
    return self._stamp_for(step)

  def advance(self) -> int:
    """Completes the current step; returns the number of completed steps."""
    with self._lock:
      self._completed += 1
      return self._completed

  def pre_act(self, action_spec: entity_lib.ActionSpec) -> str:
    if action_spec.output_type == entity_lib.OutputType.RESOLVE:
      with self._lock:
        self._resolving = True
      return ""
    if action_spec.output_type != entity_lib.OutputType.TERMINATE:
      return ""
    with self._lock:
      completed = self._completed
    answer = "Yes" if completed >= self._total else "No"
    self._logging_channel({
        "Key": "clock", "Summary": f"{completed}/{self._total} steps done",
        "Value": answer})
    return answer

  def post_act(self, action_attempt: str) -> str:
    del action_attempt
    with self._lock:
      resolving, self._resolving = self._resolving, False
    if resolving:
      self.advance()
    return ""

  def get_state(self) -> entity_component.ComponentState:
    with self._lock:
      return {"completed_steps": self._completed, "total_steps": self._total}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._lock:
      self._completed = int(state["completed_steps"])

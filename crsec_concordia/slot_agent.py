"""SlotAgent: Concordia's entity agent, its hooks run in its own thread.

Concordia runs every hook (pre_observe, post_observe, pre_act, post_act,
update) of every component in a thread pool made for that call, nearly all
for hooks that return at once, and in a society that acts at once each
thread start is a GIL hand-over between the agents and their model calls.
So a hook runs its components in the agent's thread, in order, unless two
or more of them may wait on the model this time (an entrepreneur's first
observation: CreateNorm beside IdentifyNorm); then they run at once, on
this thread and the process's helper threads (threads.run_tasks), so
their calls still overlap without a pool started for them. The
components of one hook never depend on each other's order (each says so;
AgentJournal.note is idempotent), so either way gives the same contexts.
The measurements: docs/trials/acting-and-planning.md#a-society-that-acts-at-once.

Its measurements (what its components log) keep the last few data of each
channel: Concordia's keep every datum of the run, each act's whole prompt
among them, and only the last is read (`get_last_log`, which the engine
puts in the run's log each slot); kept, they made an agent's memory grow
with every slot.
"""

from __future__ import annotations

import functools
import types
from typing import Any

from concordia.agents import entity_agent_with_logging
from concordia.typing import entity_component
from concordia.utils import measurements as measurements_lib

from crsec_concordia import threads


def waits_on_model(component: Any, hook: str) -> bool:
  """Whether `component`'s `hook` may wait on a model call this time.

  CRSEC components say so (`waits_on_model(hook)`); Concordia's stock ones
  in these prefabs (constants, observations, memory) never do.
  """
  ask = getattr(component, "waits_on_model", None)
  return bool(ask(hook)) if callable(ask) else False


# The data kept per channel of an agent's measurements.
KEPT_DATA = 8


class RecentMeasurements(measurements_lib.Measurements):
  """Concordia's Measurements keeping the last KEPT_DATA data of a channel."""

  def publish_datum(self, channel: str, datum: Any,
                    capture_key: str | None = None) -> None:
    del capture_key
    with self._channels_lock:
      data = self._get_channel_or_create(channel)
      data.append(datum)
      if len(data) > KEPT_DATA:
        del data[:-KEPT_DATA]


class SlotAgent(entity_agent_with_logging.EntityAgentWithLogging):
  """Concordia's entity agent, its hooks run in its own thread when they can."""

  def __init__(self, *args, measurements=None, **kwargs):
    super().__init__(*args, measurements=(
        RecentMeasurements() if measurements is None else measurements),
                     **kwargs)

  def _parallel_call_(self, method_name: str, *args, executor=None
                      ) -> entity_component.ComponentContextMapping:
    del executor  # The process's helpers run them (threads.run_tasks).
    unique = list(dict.fromkeys(self._context_components.values()))
    if sum(waits_on_model(c, method_name) for c in unique) > 1:
      done = threads.run_tasks(
          {f"{i:04d}": functools.partial(getattr(c, method_name), *args)
           for i, c in enumerate(unique)})
      results = {id(c): done[f"{i:04d}"] for i, c in enumerate(unique)}
    else:  # In order, on this thread: what run_tasks does with one thread.
      results = {id(c): getattr(c, method_name)(*args) for c in unique}
    return types.MappingProxyType({
        name: results[id(c)] for name, c in self._context_components.items()})

"""What each agent is doing: its latest adjudicated action, carried forward.

An agent following its plan keeps its task with no call (components/
structured_act.py); the game master does not adjudicate it again either.
Kept apart from the Adjudication component (adjudication.py), which asks
the referee; this is the memory of what it answered, per agent, under a
lock (every agent's action is resolved in its own thread), and part of the
game master's checkpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from crsec_concordia import observations
from crsec_concordia.game_masters import clock as clock_lib
from crsec_concordia.rundir.format import ACTION

# The fields of an action record a continued action carries forward.
CARRIED = ("narration", "place", "behaviours", "evidence")


class GoingOn:
  """Each agent's latest adjudicated action, which a continued one carries."""

  def __init__(self):
    self._lock = threading.Lock()
    self._latest: dict[str, dict[str, Any]] = {}

  def carry_forward(self, actor: str, action: str, stamp: observations.Stamp
                    ) -> tuple[dict[str, Any], list[dict[str, Any]], str] | None:
    """A continued action's record and observation, with no call: the
    adjudication of the action it continues, carried forward (None if it
    is not the latest adjudicated here, e.g. the agent's memory of it is
    older than this game master's: then it is adjudicated anew).

    The metrics count a behaviour in every slot it goes on, so the
    behaviours are carried, marked `continued`; observers are told plainly
    that the activity goes on (the event's header says so).
    """
    with self._lock:
      last = self._latest.get(actor)
    if last is None or last["action"] != action:
      return None
    record = {"kind": ACTION, **clock_lib.stamp_fields(stamp),
              "actor": actor, "action": action,
              **{k: last[k] for k in CARRIED},
              "adjudicated": False, "continued": True,
              "continues_step": last["step"]}
    text = observations.format_action(stamp, actor, last["place"],
                                      last["observed"], continued=True)
    return record, [], text

  def remember(self, record: Mapping[str, Any], observed: str) -> None:
    """Keeps an agent's newly adjudicated action for its continuations.

    An answer to an occasion is not kept: the agent goes on afterwards
    with what it did before (components/structured_act.py).
    """
    if (record.get("occasion") or not record.get("adjudicated")
        or observations.is_no_action(record["action"])):
      return
    with self._lock:
      self._latest[record["actor"]] = {
          "action": record["action"], "observed": observed,
          "step": record["step"], **{k: record[k] for k in CARRIED}}

  def get_state(self) -> dict[str, dict[str, Any]]:
    """By agent name: the checkpoint is the same whichever agent's action
    was resolved first."""
    with self._lock:
      return {k: dict(v) for k, v in sorted(self._latest.items())}

  def set_state(self, state: Mapping[str, Any]) -> None:
    with self._lock:
      self._latest = {str(k): dict(v) for k, v in dict(state).items()}

"""Waiting an endpoint outage out: pause the slot, probe, play it again.

A slot played while the endpoint was down would be a slot of failure
records: every call the outage met failed after the client's retries and
no agent acted, though nothing was wrong with the agents or their answers.
So a slot in which a model's OutageWatch (models/outage.py) noted an
outage is thrown away before anything of it is written (`SlotAbandoned`),
the run says so on one line, and the endpoint is probed with a doubling
backoff. If it answers within the wait (`--outage-wait`, counted from the
slot's first outage, so a slot that keeps failing is not replayed forever)
the session rebuilds the simulation from the last checkpoint and plays the
slot again; with the same answers (the scripted model, the response cache)
its records are those of an uninterrupted run. If not, the run stops
`interrupted: endpoint unreachable` (endings.py) and `crsec resume` plays
the slot again.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from crsec_concordia.endings import EndpointUnreachable
from crsec_concordia.models.concordia_adapter import as_structured

_log = logging.getLogger(__name__)

DEFAULT_WAIT = 600.0  # --outage-wait: ten minutes.
FIRST_BACKOFF = 2.0  # Seconds before the first probe, doubled after each.
LONGEST_BACKOFF = 60.0


class SlotAbandoned(Exception):
  """The slot in flight met an outage; nothing of it was written."""


@dataclasses.dataclass(frozen=True)
class OutagePolicy:
  """How long a run waits for its endpoint, and how it probes."""
  wait: float = DEFAULT_WAIT
  first_backoff: float = FIRST_BACKOFF
  longest_backoff: float = LONGEST_BACKOFF


def policy_for(wait: float | OutagePolicy | None) -> OutagePolicy:
  """The policy of `--outage-wait` seconds (None: the default; a policy
  as it is, for tests that probe sooner)."""
  if isinstance(wait, OutagePolicy):
    return wait
  return OutagePolicy() if wait is None else OutagePolicy(wait=float(wait))


def watched(models: Iterable[Any]) -> list[Any]:
  """The run's models that watch their endpoint (the scripted model and a
  program's own model do not), each once."""
  found: dict[int, Any] = {}
  for model in models:
    structured = as_structured(model)
    if getattr(structured, "outage", None) is not None:
      found.setdefault(id(structured), structured)
  return list(found.values())


def first_outage(models: Iterable[Any]) -> str | None:
  """What the first outage noted by one of `models` was, or None."""
  for model in models:
    if (line := model.outage.first) is not None:
      return line
  return None


def _minutes(seconds: float) -> str:
  minutes, rest = divmod(int(round(seconds)), 60)
  return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def wait_out(models: list[Any], policy: OutagePolicy, since: float,
             slot: int, *, sleep: Callable[[float], Any] | None = None
             ) -> None:
  """Probes every model that saw the outage until each answers, then
  clears their watches; raises EndpointUnreachable once `policy.wait`
  seconds have passed since `since` (time.monotonic) without that."""
  down = [m for m in models if m.outage.down]
  what = (first_outage(down) or "the endpoint failed").rstrip(".")
  _log.warning("slot %d paused: %s; probing the endpoint for up to %s",
               slot, what, _minutes(policy.wait))
  pause = sleep or threading.Event().wait
  delay = policy.first_backoff
  while down:
    left = since + policy.wait - time.monotonic()
    if left <= 0:
      raise EndpointUnreachable(
          f"the endpoint did not come back within --outage-wait "
          f"{_minutes(policy.wait)} (slot {slot}: {what})")
    pause(min(delay, left))
    delay = min(delay * 2, policy.longest_backoff)
    failing = []
    for model in down:
      problem = model.probe()
      if problem is None:
        model.outage.clear()
      else:
        failing.append(model)
        what = problem.rstrip(".")
    down = failing
  _log.warning("the endpoint answers again after %s; slot %d is played "
               "again from its checkpoint",
               _minutes(time.monotonic() - since), slot)


class Guard:
  """A run's watch over its models' endpoints, slot after slot."""

  def __init__(self, models: Iterable[Any], policy: OutagePolicy):
    self.models = watched(models)
    self.policy = policy
    self._first_down: tuple[int, float] | None = None  # (slot, when)

  def seen(self) -> bool:
    """Whether the slot in flight met an outage."""
    return first_outage(self.models) is not None

  def check(self) -> None:
    """Raises SlotAbandoned if the slot in flight met an outage."""
    if self.seen():
      raise SlotAbandoned()

  def wait(self, slot: int) -> None:
    """Waits the outage of `slot` out (see `wait_out`); the wait counts
    from the first outage of that slot, however often it is replayed."""
    if self._first_down is None or self._first_down[0] != slot:
      self._first_down = (slot, time.monotonic())
    wait_out(self.models, self.policy, self._first_down[1], slot)

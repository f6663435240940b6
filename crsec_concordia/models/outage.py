"""OutageWatch: whether a model's endpoint went down since it was cleared.

A call that fails because the endpoint cannot be reached, answers 5xx or
keeps answering 429 after the client's retries is not the model's answer
failing: the run must wait the outage out and play the slot again
(runs/outage.py), never record the slot's calls as failures. The model
notes the first such failure here, and from then on fails its other calls
at once without sending them, so the slot in flight ends quickly; the
session asks the watch when the slot ends and clears it once the endpoint
answers again. An answer that fails its schema is no outage.
"""

from __future__ import annotations

import threading

from crsec_concordia.models.base import EndpointError


class EndpointDown(EndpointError):
  """A call not sent: the endpoint was found down during this slot (an
  EndpointError, so it takes the way every failed call takes until the
  slot ends, and the slot is thrown away)."""


class OutageWatch:
  """Thread-safe: the first outage line since the last `clear`, if any."""

  def __init__(self):
    self._lock = threading.Lock()
    self._first: str | None = None

  def saw(self, line: str) -> None:
    """Notes an outage; the first line is kept (it says what failed)."""
    with self._lock:
      if self._first is None:
        self._first = line

  @property
  def down(self) -> bool:
    with self._lock:
      return self._first is not None

  @property
  def first(self) -> str | None:
    with self._lock:
      return self._first

  def clear(self) -> None:
    with self._lock:
      self._first = None

  def refuse_if_down(self) -> None:
    """Raises EndpointDown while an outage is noted (a call not sent)."""
    first = self.first
    if first is not None:
      raise EndpointDown(f"not sent: the endpoint is down ({first})")

"""Every chat request a bench's process makes, timed at the client.

The scaling benches ask how much of a slot's wall time the endpoint was
busy: each request's interval (and its prompt tokens) is recorded by
wrapping the OpenAI client's `create`, and `busy_time` adds up the time
at least one request was open and the integral of requests in flight.
"""

from __future__ import annotations

import contextlib
import threading
import time

import openai.resources.chat.completions as openai_chat


class Calls:
  """Every chat request's interval and prompt tokens."""

  def __init__(self):
    self.calls: list[tuple[float, float, int]] = []
    self._lock = threading.Lock()

  @contextlib.contextmanager
  def installed(self):
    completions = openai_chat.Completions
    real = completions.create
    calls = self

    def create(self, *args, **kwargs):
      start = time.monotonic()
      tokens = 0
      try:
        response = real(self, *args, **kwargs)
        usage = getattr(response, "usage", None)
        tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        return response
      finally:
        with calls._lock:  # pylint: disable=protected-access
          calls.calls.append((start, time.monotonic(), tokens))

    completions.create = create
    try:
      yield self
    finally:
      completions.create = real

  def __call__(self) -> list[tuple[float, float]]:
    """The requests' intervals so far."""
    with self._lock:
      return [(a, b) for a, b, _ in self.calls]


def busy_time(intervals: list[tuple[float, float]], lo: float, hi: float
              ) -> tuple[float, float]:
  """(time with >= 1 interval open, integral of open intervals) in [lo, hi]."""
  points = []
  for a, b in intervals:
    a, b = max(a, lo), min(b, hi)
    if a < b:
      points += [(a, 1), (b, -1)]
  points.sort()
  busy = area = 0.0
  open_, last = 0, lo
  for t, step in points:
    if open_ > 0:
      busy += t - last
    area += open_ * (t - last)
    open_ += step
    last = t
  return busy, area

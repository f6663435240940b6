"""Every chat request a bench's process makes, timed at the client.

The scaling benches ask how much of a slot's wall time the endpoint was
busy: each request's interval (and its prompt tokens) is recorded by
wrapping the model's chat poster (crsec_concordia/models/chat_post.py),
and `busy_time` adds up the time at least one request was open and the
integral of requests in flight.
"""

from __future__ import annotations

import contextlib
import threading
import time

from crsec_concordia.models import chat_post


class Calls:
  """Every chat request's interval and prompt tokens."""

  def __init__(self):
    self.calls: list[tuple[float, float, int]] = []
    self._lock = threading.Lock()

  @contextlib.contextmanager
  def installed(self):
    poster = chat_post.ChatPoster
    real = poster.post
    calls = self

    def post(self, *args, **kwargs):
      start = time.monotonic()
      tokens = 0
      try:
        answer = real(self, *args, **kwargs)
        usage = answer.get("usage") or {}
        tokens = int(usage.get("prompt_tokens") or 0)
        return answer
      finally:
        with calls._lock:  # pylint: disable=protected-access
          calls.calls.append((start, time.monotonic(), tokens))

    poster.post = post
    try:
      yield self
    finally:
      poster.post = real

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

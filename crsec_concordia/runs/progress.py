"""The progress bar of a run, moving as the model's calls return.

A slot can take minutes on a small local model (the first one holds the
entrepreneurs' initial norms and every agent's day plan), and a bar that
moves only when a slot ends says nothing in between. `SlotBar` wraps the
run's tqdm bar: it listens to the model's usage meter (models/base.py,
`UsageMeter.listen`) and, at most every `MIN_INTERVAL` seconds, shows the
calls and tokens of the run so far and the operation that returned last; a
log line at INFO says the same every `LOG_INTERVAL` seconds. What the
session sets (a phase's name, a finished slot's summary) stays in front.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from tqdm import tqdm

_log = logging.getLogger(__name__)

# Seconds between two refreshes of the bar, and between two log lines.
MIN_INTERVAL = 0.5
LOG_INTERVAL = 30.0


class SlotBar:
  """A tqdm bar over slots whose postfix follows the model's calls.

  `totals` gives the run's usage totals so far (calls, prompt_tokens,
  completion_tokens, ...), the numbers a finished slot shows as well.
  """

  def __init__(self, bar: Any, meter: Any,
               totals: Callable[[], dict[str, int]]):
    self._bar = bar
    self._totals = totals
    self._lock = threading.Lock()
    self._label = ""
    self._shown = 0.0
    self._logged = time.monotonic()
    listen = getattr(meter, "listen", None)
    self._stop = listen(self._on_call) if listen is not None else None

  @property
  def n(self) -> int:
    return int(self._bar.n)

  def _on_call(self, tag: str) -> None:
    """The meter's listener, on the thread whose call just returned.

    The totals are read and shown under one lock, so the counts shown
    never go down whatever thread reaches here first.
    """
    now = time.monotonic()
    with self._lock:
      if now - self._shown < MIN_INTERVAL:
        return
      self._shown = now
      totals = self._totals()
      tokens = (totals.get("prompt_tokens", 0)
                + totals.get("completion_tokens", 0))
      counts = (f"slot {self.n + 1}: {totals.get('calls', 0)} calls, "
                f"{tokens} tokens, last {tag}")
      self._bar.set_postfix_str(
          f"{self._label} | {counts}" if self._label else counts,
          refresh=True)
      log = now - self._logged >= LOG_INTERVAL
      if log:
        self._logged = now
    if log:
      _log.info("%s", counts)

  def set_postfix_str(self, text: str, refresh: bool = True) -> None:
    """What the session says (a phase, a finished slot) leads the postfix."""
    with self._lock:
      self._label = text
      self._bar.set_postfix_str(text, refresh=refresh)

  def update(self, n: int = 1) -> None:
    with self._lock:
      self._bar.update(n)

  def close(self) -> None:
    if self._stop is not None:
      self._stop()
    self._bar.close()


def slot_bar(*, total: int, initial: int, desc: str, meter: Any,
             totals: Callable[[], dict[str, int]]) -> SlotBar:
  """The run's bar on stderr, following `meter`'s calls."""
  return SlotBar(tqdm(total=total, initial=initial, unit="slot", desc=desc,
                      dynamic_ncols=True, file=sys.stderr), meter, totals)

"""Live progress of a sweep on stderr: runs done, failed and running, model
calls and tokens so far (from each run's usage.json, which the runner
rewrites after every slot), and the time taken.

On a terminal the line is redrawn in place; in a log (CI, nohup) a line is
printed when a count changes, or every `quiet` seconds.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from crsec_concordia.rundir.format import USAGE_JSON


def usage_totals(run_dir: Path) -> tuple[int, int]:
  """(calls, tokens) of a run so far; (0, 0) before its first slot."""
  try:
    totals = json.loads((run_dir / USAGE_JSON).read_text(
        encoding="utf-8")).get("totals", {})
  except (OSError, ValueError, AttributeError):
    return 0, 0
  calls = int(totals.get("calls") or 0)
  tokens = int(totals.get("prompt_tokens") or 0) + int(
      totals.get("completion_tokens") or 0)
  return calls, tokens


def _clock(seconds: float) -> str:
  minutes, secs = divmod(int(seconds), 60)
  hours, minutes = divmod(minutes, 60)
  return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else (
      f"{minutes}m{secs:02d}s")


def _tokens(n: int) -> str:
  return f"{n / 1e6:.2f}M" if n >= 1e6 else (f"{n / 1e3:.1f}k" if n >= 1e3
                                             else str(n))


class Progress:
  """Counts and the progress line of one sweep session."""

  def __init__(self, total: int, reused: int = 0, stream: TextIO | None = None,
               quiet: float = 30.0, shown: bool = True):
    """`shown`: False (--no-progress) draws no progress line; the lines of
    `say` (a run finished or failed) are printed all the same."""
    self.total, self.done, self.failed = total, reused, 0
    self.shown = shown
    self.reused = reused
    self.running = 0
    self.stream = stream or sys.stderr
    self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
    self.quiet = quiet
    self.start = time.monotonic()
    self._usage: dict[Path, tuple[int, int]] = {}
    self._last_line = ""
    self._last_time = 0.0

  def line(self) -> str:
    calls = sum(c for c, _ in self._usage.values())
    tokens = sum(t for _, t in self._usage.values())
    pending = self.total - self.done - self.failed - self.running
    return (f"sweep: {self.done}/{self.total} done, {self.failed} failed, "
            f"{self.running} running, {pending} pending | {calls} calls, "
            f"{_tokens(tokens)} tokens | {_clock(time.monotonic() - self.start)}")

  def read(self, run_dirs: Iterable[Path]) -> None:
    for run_dir in run_dirs:
      self._usage[run_dir] = usage_totals(run_dir)

  def say(self, message: str) -> None:
    """A line of its own (a run finished or failed)."""
    if self.tty and self._last_line:
      self.stream.write("\r\033[K")
    print(message, file=self.stream, flush=True)
    self._last_line = ""

  def show(self, force: bool = False) -> None:
    if not self.shown:
      return
    text = self.line()
    now = time.monotonic()
    if self.tty:
      self.stream.write("\r\033[K" + text)
      self.stream.flush()
      self._last_line = text
    elif force or now - self._last_time >= self.quiet:
      # In a log, a line when a run ends (force) and now and then.
      print(text, file=self.stream, flush=True)
      self._last_time = now

  def close(self) -> None:
    if self.tty and self._last_line:
      self.stream.write("\n")
      self.stream.flush()

"""Budgets: a run stops at the end of the slot in which it reached a cap.

`--max-calls` counts the calls the endpoint answered (the response
cache's answers cost nothing and are not counted), `--max-tokens` their
prompt and completion tokens, from the run's start (a resumed run counts
on from what run.json committed). The check comes when a slot is
committed, so a run overshoots its cap by at most the slot in flight when
it crossed it, and stops `stopped: budget` (endings.py); `crsec resume
--max-calls N` with a higher cap continues it, and its records are those
of a run that never stopped. A compare or a sweep may also cap the total
of its runs: each run adds the others' committed usage (their run.json)
to its own, so runs in threads or on other Ray nodes see one total, and a
run not yet started when the total is reached is not started; each run in
flight may overshoot by its slot in flight.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crsec_concordia.endings import BudgetReached
from crsec_concordia.operations.names import split_usage
from crsec_concordia.rundir import writing as rundir


@dataclasses.dataclass(frozen=True)
class Caps:
  """At most this many calls and tokens; None: no cap."""
  max_calls: int | None = None
  max_tokens: int | None = None

  def __bool__(self) -> bool:
    return self.max_calls is not None or self.max_tokens is not None

  def over(self, calls: int, tokens: int, what: str) -> str | None:
    """Why `calls` and `tokens` reach these caps, or None."""
    if self.max_calls is not None and calls >= self.max_calls:
      return f"{what} made {calls} calls, its budget is {self.max_calls}"
    if self.max_tokens is not None and tokens >= self.max_tokens:
      return f"{what} used {tokens} tokens, its budget is {self.max_tokens}"
    return None

  def to_json(self) -> dict[str, int]:
    return {k: v for k, v in dataclasses.asdict(self).items()
            if v is not None}

  @classmethod
  def of_json(cls, data: Mapping[str, Any] | None) -> "Caps":
    data = data or {}
    return cls(data.get("max_calls"), data.get("max_tokens"))


def spent(totals: Mapping[str, int]) -> tuple[int, int]:
  """(calls, tokens) of a usage table's totals."""
  return (int(totals.get("calls", 0)),
          int(totals.get("prompt_tokens", 0))
          + int(totals.get("completion_tokens", 0)))


def spent_by(run_dir: Path) -> tuple[int, int]:
  """(calls, tokens) a run's simulation has committed (run.json), or (0,
  0); the calls made apart from it (the stated-belief questions) are not
  counted, so that asking them never changes the slots a budget allows."""
  try:
    info = json.loads((run_dir / rundir.RUN_JSON).read_text(encoding="utf-8"))
  except (OSError, ValueError):
    return 0, 0
  return spent(rundir.totals(split_usage(info.get("usage_by_tag") or {})[0]))


@dataclasses.dataclass(frozen=True)
class Budget:
  """A run's caps, and those of the compare or sweep it belongs to."""
  run: Caps = Caps()
  total: Caps = Caps()
  # Every run directory of the compare or sweep (this run's among them).
  runs: tuple[Path, ...] = ()

  def __bool__(self) -> bool:
    return bool(self.run) or bool(self.total)

  def total_spent(self, own: tuple[int, int] | None = None,
                  own_dir: Path | None = None) -> tuple[int, int]:
    """The compare's or sweep's (calls, tokens): every run's committed
    usage, this run's (`own_dir`) taken as `own`."""
    calls = tokens = 0
    for run_dir in self.runs:
      c, t = (own if own is not None and own_dir is not None
              and run_dir.resolve() == own_dir.resolve()
              else spent_by(run_dir))
      calls, tokens = calls + c, tokens + t
    return calls, tokens

  def reached(self, totals: Mapping[str, int], run_dir: Path) -> str | None:
    """Why the run at `run_dir`, with usage `totals`, must stop, or None."""
    own = spent(totals)
    why = self.run.over(*own, "the run")
    if why is None and self.total:
      why = self.total.over(*self.total_spent(own, run_dir), "the runs")
    return why

  def stop_if_reached(self, totals: Mapping[str, int], run_dir: Path) -> None:
    """Raises BudgetReached if the run at `run_dir` reached a cap."""
    if (why := self.reached(totals, run_dir)) is not None:
      raise BudgetReached(why)

  def exhausted(self) -> str | None:
    """Why no further run of the compare or sweep may start, or None."""
    if not self.total:
      return None
    return self.total.over(*self.total_spent(), "the runs")

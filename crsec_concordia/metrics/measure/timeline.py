"""Steps on the simulated clock, hour bins and time to adoption.

A step's time is the time its records carry (the game master stamps every
record). Steps without any record are placed by the scenario's own rule
(scenarios.Scenario.stamp_for): step 1 is day 1 at the clock's start, each
step adds minutes_per_step, and when a day's steps are used up the next step
starts the next day. Times are *elapsed active minutes*: minutes inside the
scenario clock's daily window only (09:00-13:00 on day 2 follows 13:00 on
day 1), so that "time to adoption" is comparable across days and day 2
follows day 1 on a time axis without the night.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from crsec_concordia.rundir.reading import Run
from crsec_concordia.scenarios.checks import minutes_of
from crsec_concordia.scenarios.loader import Clock


def day_length(clock: Clock) -> int:
  """Active minutes in a day: the clock's window."""
  return max(1, minutes_of(clock.end) - minutes_of(clock.start))


def elapsed(clock: Clock, day: int, hhmm: str) -> int:
  """Active minutes since day 1's start of a day's "HH:MM"."""
  return ((int(day) - 1) * day_length(clock) + minutes_of(hhmm)
          - minutes_of(clock.start))


def at(clock: Clock, minutes: float) -> tuple[int, str]:
  """(day, "HH:MM") of an elapsed active minute."""
  day, minute = divmod(int(round(minutes)), day_length(clock))
  minute += minutes_of(clock.start)
  return day + 1, f"{minute // 60:02d}:{minute % 60:02d}"


@dataclasses.dataclass(frozen=True)
class StepTime:
  step: int
  elapsed: int      # active simulated minutes since the clock's start
  day: int
  clock: str        # "HH:MM"

  @property
  def label(self) -> str:
    return f"Day {self.day} {self.clock}"

  @property
  def hour(self) -> str:
    """The simulated hour this step falls in, e.g. "Day 1 09:00"."""
    return f"Day {self.day} {self.clock[:2]}:00"


def run_steps(run: Run) -> list[int]:
  """Every step of the run, quiet ones included, in order."""
  seen = {int(r["step"]) for r in run.records}
  seen.update(run.snapshots)
  completed = int(run.run.get("completed_steps") or 0)
  if not seen and not completed:
    return []
  # Steps count from 1 (scenarios.Scenario.stamp_for); a run's first steps
  # may be quiet, but they were played.
  last = max(max(seen) if seen else 1, completed)
  return list(range(1, last + 1))


def step_times(run: Run, steps: Sequence[int]) -> dict[int, StepTime]:
  clock = run.clock
  length = day_length(clock)
  anchors: dict[int, int] = {}
  for record in run.records:
    step = int(record["step"])
    if step in anchors:
      continue
    try:
      anchors[step] = elapsed(clock, record["day"], record["clock"])
    except (KeyError, ValueError, TypeError):
      continue
  steps_per_day = max(1, math.ceil(length / max(1, clock.minutes_per_step)))
  out = {}
  for step in steps:
    if step in anchors:
      minutes = anchors[step]
    else:
      day, index = divmod(max(step, 1) - 1, steps_per_day)
      minutes = day * length + index * clock.minutes_per_step
    day, hhmm = at(clock, minutes)
    out[step] = StepTime(step=step, elapsed=int(minutes), day=day, clock=hhmm)
  return out


def time_to(values: Sequence[float], times: Sequence[StepTime],
            level: float) -> dict[str, Any] | None:
  """First step at which a share reaches `level`, or None if it never does."""
  for value, t in zip(values, times):
    if value is not None and not math.isnan(value) and value >= level - 1e-9:
      return {"step": t.step, "time": t.label, "elapsed_minutes": t.elapsed}
  return None

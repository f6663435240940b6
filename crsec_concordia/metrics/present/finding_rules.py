"""Each finding's rule on its seeds' numbers, at one look, vectorised.

findings.py reduces a group of runs to these numbers (one per normative
seed, per target) and calls the rule with one row; the simulation of the
rules (tests/test_sequential.py) calls it with thousands of synthetic
compares at once, so what is simulated is what decides. Every rule returns
(holds, does not hold) as boolean arrays over the leading axes; the seeds
are the last axis.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from crsec_concordia.metrics.present import sequential

EMERGE, INJUNCTIVE, HALF = 0.5, 0.9, 0.5
FALLEN, RISEN = 0.25, 0.75  # last hour's conflicts, as a share of the peak
Verdicts = tuple[np.ndarray, np.ndarray]


def share_floor(line: float, agents: int) -> float:
  """The spread a share of `agents` agents has at the line by sampling
  alone (binomial): three equal seeds would otherwise show none."""
  return math.sqrt(line * (1 - line) / max(agents, 1))


def clock_floor(minutes_per_step: float) -> float:
  """The spread of a difference of two times, each known to a slot."""
  return minutes_per_step / math.sqrt(6)


def fall_floor(line: float, peak: Any) -> Any:
  """The spread of last / peak at the line when the last hour's conflicts
  are a Poisson count (variance line * peak) and the peak is `peak`."""
  return np.sqrt(line / np.maximum(peak, 1.0))


def shares(values: Any, line: float, agents: int, level: float) -> Verdicts:
  """Shares at the end (..., parts, seeds): holds when every part's mean is
  shown at or above `line`, does not hold when one's is shown below."""
  above, below = sequential.mean_rule(values, line,
                                      share_floor(line, agents), level)
  return above.all(-1), below.any(-1)


def falls(ratios: Any, peaks: Any, level: float) -> Verdicts:
  """Last hour / peak hour per seed (..., seeds), peaks the seeds' peak
  counts: holds when the mean is shown <= FALLEN, does not hold when it is
  shown >= RISEN."""
  peak = np.asarray(peaks, dtype=float).mean(-1)
  _, fell = sequential.mean_rule(ratios, FALLEN, fall_floor(FALLEN, peak),
                                 level)
  rose, _ = sequential.mean_rule(ratios, RISEN, fall_floor(RISEN, peak),
                                 level)
  return fell, rose


def later(after_latest: Any, after_earliest: Any, floor: float,
          level: float) -> Verdicts:
  """Per descriptive target and seed (..., parts, seeds), its minutes to
  50% belief after the latest and after the earliest injunctive one's:
  holds when every part is shown later than the latest, does not hold when
  one is shown earlier than the earliest."""
  above, _ = sequential.mean_rule(after_latest, 0.0, floor, level)
  _, below = sequential.mean_rule(after_earliest, 0.0, floor, level)
  return above.all(-1), below.any(-1)


def lags(values: Any, floor: float, level: float) -> Verdicts:
  """Minutes to 50% behaviour minus to 50% belief (..., parts, seeds):
  holds when every part's mean is shown > 0, does not hold when one's is
  shown < 0."""
  above, below = sequential.mean_rule(values, 0.0, floor, level)
  return above.all(-1), below.any(-1)


def seen(flags: Any, level: float) -> Verdicts:
  """Seeds showing something (..., seeds): holds when the rate is shown
  >= HALF (exact binomial), does not hold when shown below."""
  flags = np.asarray(flags, dtype=bool)
  return sequential.rate_rule(flags.sum(-1), flags.shape[-1], HALF, level)

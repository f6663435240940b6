"""The findings' rules as group-sequential tests over seed pairs.

A compare that adds seed pairs until its findings are decided looks at its
numbers after every pair. A fixed-sample rule applied at each look says
"holds" more often than its level, since every look is another chance to
cross the line by luck. Here every finding is decided from one number per
seed (per target) by a one-sided test at the look's level, and the levels
of the looks are spent from a Lan-DeMets Pocock-type spending function
alpha(t) = ALPHA ln(1 + (e - 1) t) over the planned looks (t = seeds /
most seeds): the level of the look at n seeds is alpha(n / most) - alpha(
(n - 1) / most) (all of alpha(first / most) at the first look). By the union
bound over the looks, a finding that does not hold is said to hold at most
ALPHA of the time, whatever the looks' dependence (and the same for "does
not hold"); a plain compare is the one-look design, its level ALPHA.
Pocock-type spending gives the first look a good share of the level, so a
large effect is decided at once; an O'Brien-Fleming-type function spends
almost nothing before the last look and could not stop at three seeds.

A mean rule compares the mean of the seeds' numbers with a line by a
one-sided t bound (t with n - 1 degrees of freedom), its spread never taken
below a stated floor: the spread the number has at the line by sampling
alone (for a share of m agents, the binomial sqrt(L (1 - L) / m)), since
three equal seeds would otherwise show no spread at all. A rate rule (how
many seeds show something) uses the exact binomial tail. docs/metrics.md
states each finding's number, line and floor; tests/test_sequential.py
simulates them all.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from scipy import stats

ALPHA = 0.05  # for "holds" and, apart, for "does not hold"
FIRST = 3  # seeds at the first look: fewer tell nothing of another seed
MOST = 10  # the default most seeds of `crsec compare --until-decided`
FURTHEST = 200  # seeds beyond which a projection says "more than"


@dataclasses.dataclass(frozen=True)
class Design:
  """Looks after FIRST, FIRST + 1, ... MOST seeds, one pair added per look."""
  first: int = FIRST
  most: int = FIRST
  alpha: float = ALPHA

  @classmethod
  def fixed(cls, seeds: int) -> Design:
    """One look at `seeds` seeds (a plain compare): its level is alpha."""
    return cls(first=seeds, most=seeds)

  def spent(self, seeds: int) -> float:
    """Level spent by the look at `seeds` seeds, earlier looks included."""
    if seeds < self.first:
      return 0.0
    t = min(seeds, self.most) / self.most
    return self.alpha * math.log(1.0 + (math.e - 1.0) * t)

  def level(self, seeds: int) -> float:
    """The one-sided level of the look at `seeds` seeds (0: no look)."""
    if seeds < self.first or seeds > self.most:
      return 0.0
    earlier = self.spent(seeds - 1) if seeds > self.first else 0.0
    return self.spent(seeds) - earlier

  def beyond(self, seeds: int) -> Design:
    """The same design planned to `seeds` seeds (a projection's)."""
    if seeds <= self.most:
      return self
    first = seeds if self.first == self.most else self.first
    return dataclasses.replace(self, first=first, most=seeds)

  @classmethod
  def from_dict(cls, d: dict[str, Any]) -> Design:
    return cls(first=int(d["first"]), most=int(d["most"]),
               alpha=float(d["alpha"]))

  def as_dict(self) -> dict[str, Any]:
    return {"first": self.first, "most": self.most, "alpha": self.alpha,
            "spending": "Lan-DeMets Pocock type, split over the looks"}


def _bound(values: np.ndarray, floor: Any, level: float
           ) -> tuple[np.ndarray, np.ndarray]:
  """(mean, half width of the one-sided bound) along the last axis."""
  n = values.shape[-1]
  mean = values.mean(-1)
  spread = values.std(-1, ddof=1) if n > 1 else np.zeros_like(mean)
  spread = np.maximum(spread, floor)
  if level <= 0.0 or n < 2:
    return mean, np.full_like(mean, np.inf)
  return mean, stats.t.ppf(1.0 - level, n - 1) * spread / math.sqrt(n)


def mean_rule(values: Any, line: float, floor: Any, level: float
              ) -> tuple[np.ndarray, np.ndarray]:
  """(above, below): the seeds' mean shown at or above the line, and
  wholly below it, at one-sided `level` each. `values`: (..., seeds)."""
  mean, half = _bound(np.asarray(values, dtype=float), floor, level)
  return mean - half >= line, mean + half < line


def rate_rule(successes: Any, seeds: int, line: float, level: float
              ) -> tuple[np.ndarray, np.ndarray]:
  """(above, below): the rate of seeds showing something shown at or above
  `line`, and below it, by the exact binomial tails at `level`."""
  x = np.asarray(successes)
  if level <= 0.0:
    return np.zeros(x.shape, bool), np.zeros(x.shape, bool)
  return (stats.binom.sf(x - 1, seeds, line) <= level,
          stats.binom.cdf(x, seeds, line) <= level)


def mean_needed(values: Any, line: float, floor: float, design: Design
                ) -> int | None:
  """Seeds at which the observed mean and spread, if they stayed, would be
  decided (None: the mean sits on the line, or more than FURTHEST)."""
  v = np.asarray(values, dtype=float)
  n = len(v)
  if n < 1:
    return None
  gap = abs(float(v.mean()) - line)
  spread = max(float(v.std(ddof=1)) if n > 1 else 0.0, floor)
  if gap == 0.0:
    return None
  for seeds in range(max(n + 1, FIRST), FURTHEST + 1):
    level = design.beyond(seeds).level(seeds)
    if level > 0 and stats.t.ppf(1 - level, seeds - 1) * spread / math.sqrt(
        seeds) < gap:
      return seeds
  return None


def rate_needed(successes: int, seeds: int, line: float, design: Design
                ) -> int | None:
  """Seeds at which the observed rate, if it stayed, would be decided."""
  if seeds < 1:
    return None
  rate = successes / seeds
  if rate == line:
    return None
  for n in range(max(seeds + 1, FIRST), FURTHEST + 1):
    level = design.beyond(n).level(n)
    above, below = rate_rule(round(rate * n), n, line, level)
    if (above if rate > line else below):
      return n
  return None


@dataclasses.dataclass(frozen=True)
class Part:
  """One sub-test of a finding (a target, a measure): its verdict and the
  seeds its numbers say it would need."""
  above: bool
  below: bool
  leans_below: bool
  needed: int | None


def combine(parts: list[Part]) -> tuple[bool, bool, int | None]:
  """(holds, does not hold, seeds needed) of a finding that holds when every
  part is shown above its line and does not when one is shown below."""
  if not parts:
    return False, False, None
  if all(p.above for p in parts) or any(p.below for p in parts):
    return all(p.above for p in parts), any(p.below for p in parts), None
  open_ = [p for p in parts if not p.above]
  against = [p.needed for p in open_ if p.leans_below]
  if against:  # One part decided below would settle the finding.
    known = [n for n in against if n is not None]
    return False, False, min(known) if known else None
  needs = [p.needed for p in open_ if p.needed is not None]
  return False, False, max(needs) if len(needs) == len(open_) else None

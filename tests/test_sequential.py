"""The findings' sequential rules (metrics/present/finding_rules.py,
sequential.py), simulated on synthetic per-seed numbers, no model.

Each rule is applied at every look of `crsec compare --until-decided`
(3, 4, ... 10 seeds) to thousands of synthetic compares at once. With no
true effect (the truth on the line, or no effect at all) a rule may say
"holds" in at most 5% of them (plus two standard errors of the simulated
share); with a large effect the median compare stops within the first
three seed pairs, except the count rule, which no exact test can decide on
three coin-like seeds (it stops where its binomial tail first allows).
docs/metrics.md gives the families simulated and the rates.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from crsec_concordia.metrics.present import finding_rules as rules
from crsec_concordia.metrics.classifiers.correction import Rates
from crsec_concordia.metrics.measure.stated_shares import StatedRun
from crsec_concordia.metrics.present import sequential, stated_report
from crsec_concordia.metrics.present.sequential import Design

DESIGN = Design(first=3, most=10)
SIMS = 4000
STEP = 10.0  # minutes per slot
END = 240.0  # minutes a run lasts


def looks(rule: Callable[[int, float], tuple[np.ndarray, np.ndarray]],
          design: Design = DESIGN) -> tuple[float, float, float]:
  """(share deciding holds, share deciding does not hold, median seeds at
  the stop; most + 1 for a compare never decided)."""
  held = failed = None
  stop = None
  for n in range(design.first, design.most + 1):
    h, f = (np.asarray(x, dtype=bool) for x in rule(n, design.level(n)))
    if held is None:
      held, failed = np.zeros(h.shape, bool), np.zeros(h.shape, bool)
      stop = np.full(h.shape, design.most + 1)
    live = ~(held | failed)
    stop[live & (h | f)] = n
    held |= live & h
    failed |= live & ~h & f
  return float(held.mean()), float(failed.mean()), float(np.median(stop))


def at_most_five_percent(share: float) -> bool:
  return share <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / SIMS)


def seed_shares(rng, means, agents: int, rho: float) -> np.ndarray:
  """Final shares of `agents` agents per seed (SIMS, parts, most seeds):
  each seed's own chance drawn from a Beta with intra-run correlation
  `rho` (agents of a run sway each other), then its agents from it."""
  means = np.asarray(means, dtype=float)[None, :, None]
  shape = (SIMS, means.shape[1], DESIGN.most)
  if rho > 0:
    k = 1 / rho - 1
    chance = rng.beta(means * k, (1 - means) * k, size=shape)
  else:
    chance = np.broadcast_to(means, shape)
  return rng.binomial(agents, chance) / agents


def slot_times(rng, mean: float, spread: float, shape) -> np.ndarray:
  """Minutes to 50%, known to a slot, never reached: a slot after the end."""
  t = np.round(rng.normal(mean, spread, size=shape) / STEP) * STEP
  return np.where(t > END, END + STEP, np.clip(t, 0.0, None))


def test_the_looks_spend_alpha_and_a_plain_compare_is_one_look():
  levels = [DESIGN.level(n) for n in range(3, 11)]
  assert sum(levels) == pytest.approx(sequential.ALPHA)
  assert levels[0] == max(levels)  # Pocock-type: the first look gets most
  assert DESIGN.level(2) == DESIGN.level(11) == 0.0
  assert Design.fixed(5).level(5) == pytest.approx(sequential.ALPHA)
  # Planned further, a design keeps its first look and spends less at each.
  assert DESIGN.beyond(20).first == 3
  assert DESIGN.beyond(20).level(20) < DESIGN.level(10)


@pytest.mark.parametrize("line", [rules.EMERGE, rules.INJUNCTIVE])
@pytest.mark.parametrize("agents,rho", [(5, 0.0), (10, 0.0), (25, 0.0),
                                        (5, 0.1), (10, 0.1), (25, 0.1),
                                        (5, 0.3), (10, 0.3)])
def test_share_rule_keeps_its_error_with_no_true_effect(line, agents, rho):
  rng = np.random.default_rng(1)
  # One part on the line, two well above it: the worst case of "every
  # target holds".
  draws = seed_shares(rng, [line, 0.99, 0.99], agents, rho)
  held, failed, _ = looks(lambda n, level: rules.shares(
      draws[..., :n], line, agents, level))
  assert at_most_five_percent(held)
  assert failed <= held + 0.05  # It is no more eager to say the opposite.


@pytest.mark.parametrize("agents,share", [(10, 0.99), (25, 0.95)])
def test_share_rule_stops_at_once_on_a_large_effect(agents, share):
  # Large against the floor: three seeds of ten agents decide "held by at
  # least half" from about 93% (0.5 + t * sqrt(0.25 / 10) / sqrt(3)).
  rng = np.random.default_rng(2)
  up = seed_shares(rng, [share] * 3, agents, 0.1)
  held, _, median = looks(lambda n, level: rules.shares(
      up[..., :n], rules.EMERGE, agents, level))
  assert held > 0.95 and median <= 3
  # 90% cannot be beaten by much; a large effect there is a share far below.
  down = seed_shares(rng, [0.3, 0.95, 0.95], 10, 0.1)
  _, failed, median = looks(lambda n, level: rules.shares(
      down[..., :n], rules.INJUNCTIVE, 10, level))
  assert failed > 0.95 and median <= 3


def conflicts(rng, peak_rate: float, last_share: float
              ) -> tuple[np.ndarray, np.ndarray]:
  """(last / peak, peak) per seed: three hours of Poisson(peak_rate)
  conflicts and a last hour of Poisson(last_share * peak_rate)."""
  shape = (SIMS, DESIGN.most)
  hours = rng.poisson(peak_rate, size=shape + (3,))
  last = rng.poisson(last_share * peak_rate, size=shape)
  peak = np.maximum(hours.max(-1), last).astype(float)
  ratio = np.where(peak > 0, last / np.maximum(peak, 1), 1.0)
  return ratio, peak


def last_share_on_the_line(rng, rate: float) -> float:
  """The last hour's rate at which the mean last / peak is FALLEN."""
  low, high = 0.0, 1.0
  for _ in range(30):
    mid = (low + high) / 2
    ratio, _ = conflicts(rng, rate, mid)
    low, high = (mid, high) if ratio.mean() < rules.FALLEN else (low, mid)
  return (low + high) / 2


@pytest.mark.parametrize("rate", [1.0, 3.0, 10.0, 40.0])
def test_conflict_rule_keeps_its_error_with_no_true_effect(rate):
  rng = np.random.default_rng(3)
  for last in (1.0, last_share_on_the_line(rng, rate)):  # no fall; the line
    ratio, peak = conflicts(rng, rate, last)
    held, _, _ = looks(lambda n, level: rules.falls(
        ratio[:, :n], peak[:, :n], level))
    assert at_most_five_percent(held), (rate, last, held)


def test_conflict_rule_stops_at_once_on_a_large_effect():
  # A peak of about 40 conflicts an hour gone in the last hour; with fewer
  # conflicts the Poisson floor asks for more seeds (docs/metrics.md).
  ratio, peak = conflicts(np.random.default_rng(4), 40.0, 0.0)
  held, _, median = looks(lambda n, level: rules.falls(
      ratio[:, :n], peak[:, :n], level))
  assert held > 0.95 and median <= 3


def gaps(seed: int, after: float, before: float, spread: float
         ) -> np.ndarray:
  """Minutes from one time to 50% to another, per part (2) and seed, each
  time known to a slot."""
  rng = np.random.default_rng(seed)
  shape = (SIMS, 2, DESIGN.most)
  return (slot_times(rng, after, spread, shape)
          - slot_times(rng, before, spread, shape))


# Descriptive norms later (each descriptive target after the latest and
# the earliest injunctive one: one injunctive target here) and belief
# before behaviour, on the same gaps.
TIME_RULES = {
    "later": lambda g, level: rules.later(g, g, rules.clock_floor(STEP),
                                          level),
    "lags": lambda g, level: rules.lags(g, rules.clock_floor(STEP), level)}


@pytest.mark.parametrize("rule", sorted(TIME_RULES))
@pytest.mark.parametrize("spread", [5.0, 30.0, 80.0])
def test_time_rules_keep_their_error_with_no_true_effect(rule, spread):
  gap = gaps(5, 100.0, 100.0, spread)
  gap[:, 1] += 120.0  # The other part: well after.
  held, _, _ = looks(lambda n, level: TIME_RULES[rule](gap[..., :n], level))
  assert at_most_five_percent(held)


@pytest.mark.parametrize("rule", sorted(TIME_RULES))
def test_time_rules_stop_at_once_on_a_large_effect(rule):
  gap = gaps(6, 180.0, 60.0, 20.0)  # Two hours after, give or take 20 min.
  held, _, median = looks(lambda n, level: TIME_RULES[rule](gap[..., :n],
                                                            level))
  assert held > 0.95 and median <= 3


def test_count_rule_keeps_its_error_and_stops_where_it_first_can():
  rng = np.random.default_rng(9)
  coin = rng.random((SIMS, DESIGN.most)) < rules.HALF
  held, _, _ = looks(lambda n, level: rules.seen(coin[:, :n], level))
  assert at_most_five_percent(held)
  always = np.ones((SIMS, DESIGN.most), bool)
  held, _, median = looks(lambda n, level: rules.seen(always[:, :n], level))
  # Three seeds of three say so by chance one time in eight: the first look
  # at which n of n is rare enough for its level.
  first = next(n for n in range(3, 11)
               if stats.binom.sf(n - 1, n, 0.5) <= DESIGN.level(n))
  assert held == 1.0 and median == first
  assert first > 3


def test_seeds_needed_is_where_the_same_mean_and_spread_would_decide():
  design = Design.fixed(3)
  values = [0.55, 0.6, 0.5]  # mean 0.55, sd 0.05

  def clears(n: int) -> bool:
    level = Design.fixed(n).level(n)
    return stats.t.ppf(1 - level, n - 1) * 0.05 / math.sqrt(n) < 0.05

  near = sequential.mean_needed(values, 0.5, 0.01, design)
  assert near is not None and clears(near) and not clears(near - 1)
  far = sequential.mean_needed([0.75, 0.8, 0.7], 0.5, 0.01, design)
  assert far is not None and far < near
  # The floor counts when the seeds agree too well.
  assert sequential.mean_needed([0.55] * 3, 0.5, 0.05, design) == near
  assert sequential.mean_needed([0.5] * 3, 0.5, 0.05, design) is None
  # Five seeds of five: 1/32 <= 5%; four of four (1/16) is not enough.
  assert sequential.rate_needed(3, 3, 0.5, design) == 5


def test_a_finding_of_parts_needs_what_its_open_parts_need():
  held = sequential.Part(True, False, False, None)
  rising = sequential.Part(False, False, False, 7)
  falling = sequential.Part(False, False, True, 9)
  assert sequential.combine([held, rising]) == (False, False, 7)
  # One part leaning below settles the finding once it is shown below.
  assert sequential.combine([falling, rising]) == (False, False, 9)
  assert sequential.combine([held, dataclasses.replace(
      falling, below=True)]) == (False, True, None)
  assert sequential.combine([held, held]) == (True, False, None)
  assert sequential.combine([]) == (False, False, None)


# -- the emerge finding read on the difference in differences --------------
# (present/stated_report.did_finding): a bootstrap per compare, so fewer
# compares are simulated than for the vectorised rules above.

DID_SIMS = 200
DID_DESIGN = Design(first=3, most=6)
# The matcher's measured error on the shipped café target (test half).
DID_RATES = Rates(tp=24, fp=12, fn=0, tn=82)


def _stated(rng, arm: str, start: float, end: float, agents: int,
            rho: float, seed: int) -> StatedRun:
  """One run's stated flags: each agent holds the target with the run's
  chance (Beta, intra-run correlation `rho`), states one rule, and the
  matcher flags it with its measured sensitivity and specificity."""
  k = 1 / rho - 1
  flags, rules, present = {}, {}, {}
  for phase, mean in (("start", start), ("end", end)):
    chance = rng.beta(mean * k, (1 - mean) * k)
    holds = rng.random(agents) < chance
    flagged = np.where(holds, rng.random(agents) < DID_RATES.sensitivity,
                       rng.random(agents) > DID_RATES.specificity)
    flags[phase] = {"t": flagged}
    rules[phase] = np.ones(agents, dtype=int)
    present[phase] = np.ones(agents, dtype=bool)
  return StatedRun(arm=arm, asked=("start", "end"),
                   agents=tuple(f"a{i}" for i in range(agents)), flags=flags,
                   rules=rules, present=present,
                   failed={"start": (), "end": ()},
                   entrepreneurs={"start": {}, "end": {}},
                   rates={"t": (DID_RATES, "simulated")}, seed=seed)


def did_looks(seed: int, normative: tuple[float, float],
              baseline: tuple[float, float], agents: int = 8,
              rho: float = 0.1) -> tuple[float, float]:
  """(share of compares the DiD reading ever says holds at a look, median
  seeds at the stop: most + 1 when never decided)."""
  rng = np.random.default_rng(seed)
  held, stops = 0, []
  for _ in range(DID_SIMS):
    runs = {"normative": [SimpleNamespace(stated=_stated(
                rng, "normative", *normative, agents, rho, s))
                          for s in range(DID_DESIGN.most)],
            "baseline": [SimpleNamespace(stated=_stated(
                rng, "baseline", *baseline, agents, rho, s))
                         for s in range(DID_DESIGN.most)]}
    stop = DID_DESIGN.most + 1
    for n in range(DID_DESIGN.first, DID_DESIGN.most + 1):
      verdict = stated_report.did_finding(
          {arm: ms[:n] for arm, ms in runs.items()},
          DID_DESIGN)["did_verdict"]
      if verdict != "cannot tell":
        held += verdict == "holds"
        stop = n
        break
    stops.append(stop)
  return held / DID_SIMS, float(np.median(stops))


@pytest.mark.parametrize("start,end", [(0.3, 0.3), (0.2, 0.7)])
def test_did_reading_keeps_its_error_with_no_true_effect(start, end):
  """Both arms change alike (or not at all): "holds" at most 5% of the
  time over the looks, plus two standard errors of the simulated share."""
  share, _ = did_looks(7, (start, end), (start, end))
  assert share <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / DID_SIMS)


def test_did_reading_stops_at_once_on_a_large_effect():
  share, median = did_looks(8, (0.1, 0.9), (0.1, 0.1))
  assert share >= 0.9 and median == DID_DESIGN.first

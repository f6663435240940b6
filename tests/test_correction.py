"""Misclassification-corrected shares (metrics/classifiers/correction.py).

The coverage simulation draws, from the matcher's labelled TEST half, both
the world and its measurement: for each target, a classifier whose true
sensitivity and false-positive rate are the test half's, a fresh labelled
set of the test half's size measured on it (binomial resamples of its
positives and negatives), and 5 runs of 10 agents of whom a known share hold
the norm, each agent holding 1-3 norms (every norm a chance for a false
positive). The corrected interval must cover the true share in >= 90% of
draws wherever the raw share's interval does not. No language model, no
embedder: the matcher's decisions on the test half are its counts in
data/matcher_quality.json (tests/test_matcher_quality.py pins them).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from crsec_concordia.metrics.classifiers import correction, labels
from crsec_concordia.metrics.classifiers import measured as matcher_error
from crsec_concordia.metrics.classifiers.correction import Rates

DRAWS = 200
RUNS, AGENTS, MAX_NORMS = 5, 10, 3


def _targets():
  measured = matcher_error.load_measured()
  rule = measured["rule"]["name"]
  for venue in labels.VENUES:
    for target in labels.venue_targets(venue):
      yield target, matcher_error.rates(target, rule, "test",
                                          measured=measured)


def coverage(test: Rates, share: float, seed: int, fewest_norms: int = 1
             ) -> tuple[float, float]:
  """(raw coverage, corrected coverage) of the true share over DRAWS;
  a non-holder holds `fewest_norms` to MAX_NORMS norms (0: some hold
  none, as ordinary agents do before anyone talks to them)."""
  rng = np.random.default_rng(seed)
  se, false_rate = test.sensitivity, 1.0 - test.specificity
  positives, negatives = test.tp + test.fn, test.tn + test.fp
  holders = int(round(share * AGENTS))
  truth = holders / AGENTS
  raw_hits = corrected_hits = 0
  for draw in range(DRAWS):
    tp = rng.binomial(positives, se)
    fp = rng.binomial(negatives, false_rate)
    measured = Rates(tp, fp, positives - tp, negatives - fp)
    holds = np.zeros((RUNS, AGENTS), dtype=bool)
    holds[:, :holders] = True
    norms = np.where(holds, 1, fewest_norms) + rng.integers(
        0, MAX_NORMS + 1 - np.where(holds, 1, fewest_norms))
    others = np.where(holds, norms - 1, norms)
    mistaken = ((rng.random((RUNS, AGENTS, MAX_NORMS)) < false_rate)
                & (np.arange(MAX_NORMS) < others[..., None])).any(-1)
    found = holds & (rng.random((RUNS, AGENTS)) < se)
    e = correction.estimate(found | mistaken, measured, norms, seed=draw)
    raw_hits += e.raw_low <= truth <= e.raw_high
    corrected_hits += e.low <= truth <= e.high
  return raw_hits / DRAWS, corrected_hits / DRAWS


def test_corrected_interval_covers_where_the_raw_one_does_not():
  results = {}
  for i, (target, test) in enumerate(_targets()):
    assert test is not None and test.usable(), target.id
    for share in (0.2, 0.9):
      results[(target.id, share)] = coverage(test, share, seed=100 * i
                                             + int(share * 10))
  print({k: tuple(round(x, 2) for x in v) for k, v in results.items()})
  assert len(results) == 12
  for key, (_, corrected) in results.items():
    assert corrected >= 0.9, (key, corrected)
  worse = {k: v for k, v in results.items() if v[0] < 0.9}
  # The raw share is biased by the matcher's error: its interval misses
  # the truth often (e.g. own plot at 90%: almost always).
  assert len(worse) >= 8, results
  assert min(raw for raw, _ in worse.values()) < 0.2
  assert (np.mean([c for _, c in results.values()])
          > np.mean([r for r, _ in results.values()]) + 0.2)


def test_rogan_gladen_inverts_the_expected_raw_share():
  se, sp = 0.8, 0.9
  for p in (0.0, 0.3, 1.0):
    raw = p * se + (1 - p) * (1 - sp)
    assert float(correction.rogan_gladen(raw, se, sp)) == pytest.approx(p)
  assert float(correction.rogan_gladen(0.01, se, sp)) == 0.0  # clipped
  assert math.isnan(float(correction.rogan_gladen(0.5, 0.5, 0.4)))


def test_estimate_without_measurement_is_raw_only():
  flags = np.array([[True, False, True, True]])
  e = correction.estimate(flags, None)
  assert e.raw == pytest.approx(0.75)
  assert e.raw_low <= 0.75 <= e.raw_high
  assert math.isnan(e.corrected) and math.isnan(e.low)
  assert e.as_dict()["corrected"] is None


def test_agents_with_no_norm_are_known_non_holders():
  """Three entrepreneurs of ten, five norms each, all rightly flagged: 30%
  (averaged in with the seven who hold nothing, as it once was, the
  entrepreneurs' sensitivity read as the society's and gave 100%)."""
  rates = Rates(tp=25, fp=4, fn=1, tn=200)
  flags = np.array([[True] * 3 + [False] * 7])
  norms = np.array([[5] * 3 + [0] * 7])
  e = correction.estimate(flags, rates, norms, seed=1)
  assert e.corrected == pytest.approx(0.3)
  assert e.low <= 0.3 <= e.high
  nobody = correction.estimate(np.zeros((1, 10), bool), rates,
                               np.zeros((1, 10)), seed=1)
  assert (nobody.corrected, nobody.low, nobody.high) == (0.0, 0.0, 0.0)


def test_a_unanimous_sample_is_not_certain():
  """None of ten agents with norms flagged: the share is 0, but ten agents
  do not prove nobody would hold the norm (resampling them gave [0%, 0%]).
  The interval is about Jeffreys' for 0 of 10, and all ten flagged mirrors
  it; one flagged of ten, resampled, gives an interval of the same order."""
  rates = Rates(tp=40, fp=2, fn=10, tn=150)
  norms = np.full((1, 10), 3)
  none = correction.estimate(np.zeros((1, 10), bool), rates, norms, seed=1)
  assert none.raw == 0.0 and none.corrected == 0.0
  assert none.raw_low == 0.0 and 0.1 < none.raw_high < 0.35
  assert none.low == 0.0 and 0.1 < none.high < 0.6
  every = correction.estimate(np.ones((1, 10), bool), rates, norms, seed=1)
  assert every.raw == 1.0 and every.raw_high == 1.0
  assert 0.65 < every.raw_low < 0.9
  one = correction.estimate(np.array([[True] + [False] * 9]), rates, norms,
                            seed=1)
  assert 0.5 < none.raw_high / one.raw_high < 1.5
  # Several runs, all unanimous: the pooled agents decide the width.
  runs = correction.estimate(np.zeros((5, 10), bool), rates,
                             np.full((5, 10), 3), seed=1)
  assert 0.0 < runs.raw_high < none.raw_high


def test_corrected_interval_covers_when_some_agents_hold_no_norm():
  """The coverage simulation with non-holders of no norm at all."""
  for target, test in _targets():
    for share in (0.2, 0.5):
      raw, corrected = coverage(test, share, seed=11, fewest_norms=0)
      assert corrected >= 0.9, (target.id, share, raw, corrected)


def test_agents_with_more_norms_get_more_false_positives_removed():
  rates = Rates(tp=90, fp=10, fn=10, tn=90)
  flags = np.array([[True, True, False, False, False]])
  one = correction.estimate(flags, rates, np.ones((1, 5)), seed=1)
  many = correction.estimate(flags, rates, np.full((1, 5), 4), seed=1)
  assert many.corrected < one.corrected
  # k = 1: the plain Rogan-Gladen estimate.
  assert one.corrected == pytest.approx(
      float(correction.rogan_gladen(0.4, 0.9, 0.9)))


def test_matcher_rates_count_the_venue_negatives():
  measured = matcher_error.load_measured()
  target = next(t for t, _ in _targets() if t.id == "no_smoking_indoors")
  rates = matcher_error.rates(target, measured["rule"]["name"], "test")
  assert (rates.tp, rates.fp, rates.fn) == (24, 12, 0)
  assert rates.tp + rates.fp + rates.fn + rates.tn == 118  # café test norms
  assert matcher_error.rates(target, "another_rule") is None

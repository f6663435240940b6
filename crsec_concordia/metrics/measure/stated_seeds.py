"""The stated-belief difference in differences, one number per seed: what
the emerge finding's DiD reading tests with the findings' sequential mean
rule (present/stated_report.did_finding), as every other finding is tested
on one number per normative seed (present/sequential.py).

A seed's difference pairs the normative and baseline runs of that seed
(both arms ran on the same seeds) and reads each run's share at the
matcher's point figures (corrected where they were measured, else raw), as
the share findings' seeds do; the pooled bootstrap interval
(stated_shares.py) carries the matcher's uncertainty.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from crsec_concordia.interviews.stated_table import END, PHASES, START
from crsec_concordia.metrics.classifiers import correction
from crsec_concordia.metrics.measure.stated_shares import StatedRun, usable


def point_share(run: StatedRun, phase: str, tid: str) -> float:
  """The run's share stating `tid` in `phase`: corrected at the matcher's
  point figures where they were measured, else raw; NaN when nobody
  answered."""
  here = run.present[phase]
  if not here.any():
    return math.nan
  rates = run.rates[tid][0]
  if not usable(rates):
    return float(run.flags[phase][tid][here].mean())
  return float(correction.corrected_share(
      run.flags[phase][tid].astype(float), np.where(here, run.rules[phase], 0),
      np.asarray(rates.sensitivity), np.asarray(rates.specificity), here))


def seed_differences(by_arm: Mapping[str, Sequence[StatedRun]], tid: str
                     ) -> tuple[np.ndarray, float]:
  """Per seed both arms ran, (normative end - start) - (baseline end -
  start) of the point shares, and the spread such a difference has by
  sampling alone: sqrt(sum over the four arm-phases of p(1-p)/m), p the
  pooled share with half an agent added to each side ((x + 1/2)/(m + 1),
  so that a unanimous sample still has some) and m its agents per run."""
  pairs = {arm: {r.seed: r for r in by_arm.get(arm, ()) if r.asked}
           for arm in ("normative", "baseline")}
  seeds = sorted(set(pairs["normative"]) & set(pairs["baseline"]),
                 key=str)
  values, variance = [], 0.0
  for s in seeds:
    n, b = pairs["normative"][s], pairs["baseline"][s]
    values.append(point_share(n, END, tid) - point_share(n, START, tid)
                  - point_share(b, END, tid) + point_share(b, START, tid))
  for arm in pairs:
    for phase in PHASES:
      runs = [pairs[arm][s] for s in seeds]
      x = sum(int(r.flags[phase][tid][r.present[phase]].sum()) for r in runs)
      m = sum(int(r.present[phase].sum()) for r in runs)
      if m:
        p = (x + 0.5) / (m + 1)
        variance += p * (1 - p) / (m / len(runs))
  out = np.asarray(values, dtype=float)
  return out[np.isfinite(out)], math.sqrt(variance)

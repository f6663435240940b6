"""Stated belief shares at the start and the end, and their difference in
differences: how much of a target norm the society made, net of what the
model and the personas brought.

Every agent of both arms is asked for its rules before the first slot and
after the last (interviews/stated_table.py); stated.py reads each stated
rule with the norm matcher. Per target and phase this module gives the
share of agents stating the target, raw and corrected for the matcher's
measured error (correction.py: Rogan-Gladen with each agent's k stated
rules as k classifications, exactly as held belief with k norms), with a
95% interval. Entrepreneurs (scenario role "entrepreneur") are seeded with
norms, so they are left out of both phases' shares and reported apart;
agents whose question failed are left out and counted; a run that asked
nobody gives no figure ("not asked"), never zero.

The difference in differences (normative end - start) - (baseline end -
start) and each arm's change are read from one joint bootstrap: per draw,
one (sensitivity, specificity) per target from their Jeffreys posteriors,
shared by both arms and phases (one matcher read them all), and per arm
its runs resampled as clusters (with one run, its agents), the same runs
or agents at the start and the end, so that an agent's two answers stay
paired. As in correction.estimate, a unanimous phase is redrawn from its
Jeffreys share and the draws are stretched by sqrt(n/(n-1)).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from crsec_concordia.interviews.stated_table import (END, NO_RULE, PHASES,
                                                     START, STATED_COLUMNS,
                                                     read_stated,
                                                     stated_rules)
from crsec_concordia.metrics.classifiers import correction
from crsec_concordia.metrics.classifiers.corrected import matcher_rates
from crsec_concordia.metrics.classifiers.correction import Estimate, Rates
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.metrics.measure.stated import ENTREPRENEUR, stated_targets
from crsec_concordia.rundir.reading import Run

NOT_ASKED = "not asked"
# The arm that pools both arms' start (whether a target was held at the
# start), and the DiD's row.
POOLED, DID = "pooled", "normative - baseline"


@dataclasses.dataclass(frozen=True)
class StatedRun:
  """One run's stated belief, ready to pool: per phase, its non-entrepreneur
  agents' flags per target and numbers of stated rules (0 where absent or
  failed: `present` says who counts), who failed, and the entrepreneurs'
  stated targets apart."""
  arm: str
  asked: tuple[str, ...]                       # phases the run asked
  agents: tuple[str, ...]                      # non-entrepreneurs asked
  flags: Mapping[str, Mapping[str, np.ndarray]]  # phase -> target -> bool
  rules: Mapping[str, np.ndarray]              # phase -> rules stated
  present: Mapping[str, np.ndarray]            # phase -> answered
  failed: Mapping[str, tuple[str, ...]]        # phase -> agents (any role)
  entrepreneurs: Mapping[str, Mapping[str, tuple[str, ...] | None]]
  rates: Mapping[str, tuple[Rates | None, str]]
  seed: int | None = None


def stated_run(run: Run, matcher: NormMatcher) -> StatedRun:
  """`run`'s stated belief as read by `matcher` (stated.stated_targets)."""
  meant = stated_targets(run, matcher)
  frame = read_stated(run.path)
  roles = run.roles
  asked = tuple(p for p in PHASES if meant.get(p))
  agents = tuple(sorted({a for p in asked for a in meant[p]
                         if roles.get(a) != ENTREPRENEUR}))
  flags: dict[str, dict[str, np.ndarray]] = {}
  rules, present, failed, apart = {}, {}, {}, {}
  for phase in PHASES:
    said, counts = meant.get(phase, {}), stated_rules(frame, phase)
    present[phase] = np.array([said.get(a, None) is not None
                               for a in agents], dtype=bool)
    rules[phase] = np.array([len(counts.get(a) or ()) for a in agents])
    flags[phase] = {t.id: np.array([t.id in (said.get(a) or ())
                                    for a in agents], dtype=bool)
                    for t in matcher.targets}
    failed[phase] = tuple(sorted(a for a, s in said.items() if s is None))
    apart[phase] = {a: (None if s is None else tuple(sorted(s)))
                    for a, s in sorted(said.items())
                    if roles.get(a) == ENTREPRENEUR}
  return StatedRun(arm=run.arm, asked=asked, agents=agents, flags=flags,
                   rules=rules, present=present, failed=failed,
                   entrepreneurs=apart, rates=matcher_rates(matcher),
                   seed=run.seed)


@dataclasses.dataclass(frozen=True)
class _Drawn:
  """A share's point figures and its bootstrap draws (aligned across the
  shares of one call, so that differences of draws are draws of the
  difference)."""
  raw: float
  raw_draws: np.ndarray
  corrected: float
  draws: np.ndarray
  agents: int
  runs: int


def _padded(runs: Sequence[StatedRun], phase: str, tid: str
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(flags, rules, present) as runs x agents, padded with absent agents."""
  width = max(len(r.agents) for r in runs)
  shape = (len(runs), width)
  f, k, p = np.zeros(shape), np.zeros(shape), np.zeros(shape, dtype=bool)
  for i, r in enumerate(runs):
    n = len(r.agents)
    here = r.present[phase]
    p[i, :n] = here
    k[i, :n] = np.where(here, r.rules[phase], 0)
    f[i, :n] = np.where(here, r.flags[phase][tid], False)
  return f, k, p


def _draw(runs: Sequence[StatedRun], tids: Sequence[str],
          rates: Mapping[str, Rates | None], seed: int, stream: int,
          draws: int = correction.DRAWS
          ) -> dict[str, dict[str, _Drawn]] | None:
  """{phase: {target: drawn}} of a group of runs; None when it asked
  nobody. `seed` fixes the rates' draws, so that groups drawn with one
  seed share their (sensitivity, specificity) draws (one matcher read
  them all); `stream` the group's own resampling (the arms are
  independent samples)."""
  runs = [r for r in runs if r.asked and r.agents]
  if not runs:
    return None
  rng = np.random.default_rng(seed)
  error = {t: rates[t].draw(rng, draws) if usable(rates[t]) else None
           for t in tids}
  rng = np.random.default_rng([seed, stream])
  # One pick for every phase and target: an agent's answers stay paired.
  many = len(runs) > 1
  width = max(len(r.agents) for r in runs)
  pick = rng.integers(0, len(runs) if many else width,
                      size=(draws, len(runs) if many else width))
  out: dict[str, dict[str, _Drawn]] = {}
  for phase in PHASES:
    out[phase] = {}
    for tid in tids:
      f, k, p = _padded(runs, phase, tid)
      if many:
        ff, kk, pp = (a[pick].reshape(draws, -1) for a in (f, k, p))
      else:
        ff, kk, pp = f[0][pick], k[0][pick], p[0][pick]
      out[phase][tid] = _drawn(f, k, p, ff, kk, pp, rates[tid],
                               error[tid], rng, len(runs))
  return out


def usable(rates: Rates | None) -> bool:
  return rates is not None and rates.usable()


def _drawn(f: np.ndarray, k: np.ndarray, p: np.ndarray, ff: np.ndarray,
           kk: np.ndarray, pp: np.ndarray, rates: Rates | None,
           error: tuple[np.ndarray, np.ndarray] | None,
           rng: np.random.Generator, runs: int) -> _Drawn:
  agents = int(p.sum())
  if not agents:
    nan = np.full(ff.shape[0], math.nan)
    return _Drawn(math.nan, nan, math.nan, nan, 0, 0)
  asked_runs = int(p.any(-1).sum())
  units = asked_runs if runs > 1 else agents
  stretch = math.sqrt(units / (units - 1)) if units > 1 else 1.0
  ff = correction.unanimous_draws(ff, f, k, kk, rng)
  with np.errstate(divide="ignore", invalid="ignore"):
    raw_now = np.where(pp, ff, 0.0).sum(-1) / pp.sum(-1)
  raw = float(f[p].mean())
  raw_draws = np.clip(raw + stretch * (raw_now - raw), 0.0, 1.0)
  if error is None:
    nan = np.full(ff.shape[0], math.nan)
    return _Drawn(raw, raw_draws, math.nan, nan, agents, asked_runs)
  se, sp = error
  point = float(correction.corrected_share(
      f.reshape(-1), k.reshape(-1), np.asarray(rates.sensitivity),
      np.asarray(rates.specificity), p.reshape(-1)))
  now = correction.corrected_share(ff, kk, se, sp, pp)
  if math.isfinite(point):
    now = np.clip(point + stretch * (now - point), 0.0, 1.0)
  return _Drawn(raw, raw_draws, point, now, agents, asked_runs)


def _bounds(values: np.ndarray, confidence: float) -> tuple[float, float]:
  values = values[np.isfinite(values)]
  if not values.size:
    return math.nan, math.nan
  tail = (1.0 - confidence) / 2 * 100
  low, high = np.percentile(values, [tail, 100 - tail])
  return float(low), float(high)


def estimate_of(d: _Drawn, confidence: float = correction.CONFIDENCE
                ) -> Estimate:
  raw_low, raw_high = _bounds(d.raw_draws, confidence)
  low, high = _bounds(d.draws, confidence)
  if math.isnan(d.corrected):
    low = high = math.nan
  return Estimate(d.raw, raw_low, raw_high, d.corrected, low, high,
                  agents=d.agents, runs=d.runs)


def difference(parts: Sequence[tuple[float, _Drawn]],
               confidence: float = correction.CONFIDENCE) -> dict[str, Any]:
  """sum(sign * share) with its interval: on the corrected shares where
  every part is corrected, else on the raw ones (`kind` says which)."""
  corrected = all(math.isfinite(d.corrected) for _, d in parts)
  point = sum(s * (d.corrected if corrected else d.raw) for s, d in parts)
  draws = sum(s * (d.draws if corrected else d.raw_draws) for s, d in parts)
  low, high = _bounds(np.asarray(draws, dtype=float), confidence)
  if not math.isfinite(point):
    return {"value": None, "low": None, "high": None, "kind": NOT_ASKED}
  return {"value": float(point), "low": low, "high": high,
          "kind": "corrected" if corrected else "raw"}


def _rates(by_arm: Mapping[str, Sequence[StatedRun]]
           ) -> dict[str, Rates | None]:
  first = next(r for rs in by_arm.values() for r in rs)
  return {tid: rate for tid, (rate, _) in first.rates.items()}


def _by_arm(by_arm: Mapping[str, Sequence[StatedRun]],
            rates: Mapping[str, Rates | None], seed: int = 0
            ) -> dict[str, dict[str, dict[str, _Drawn]] | None]:
  """Each arm's draws, its own resampling stream, the rates' draws shared."""
  return {arm: _draw(rs, list(rates), rates, seed, i + 1)
          for i, (arm, rs) in enumerate(sorted(by_arm.items())) if rs}


def differences(by_arm: Mapping[str, Sequence[StatedRun]],
                confidence: float = correction.CONFIDENCE, seed: int = 0
                ) -> dict[str, dict[str, Any]]:
  """Per target: each arm's change (end - start) and, with both arms, the
  difference in differences (`DID`), at `confidence`."""
  return differences_at(by_arm, (confidence,), seed)[0]


def differences_at(by_arm: Mapping[str, Sequence[StatedRun]],
                   confidences: Sequence[float], seed: int = 0
                   ) -> list[dict[str, dict[str, Any]]]:
  """`differences` at each of `confidences`, from one set of draws."""
  if not any(by_arm.values()):
    return [{} for _ in confidences]
  rates = _rates(by_arm)
  drawn = _by_arm(by_arm, rates, seed)
  return [_changes(drawn, list(rates), c) for c in confidences]


def _changes(drawn: Mapping[str, dict[str, dict[str, _Drawn]] | None],
             tids: Sequence[str], confidence: float
             ) -> dict[str, dict[str, Any]]:
  out: dict[str, dict[str, Any]] = {}
  for tid in tids:
    row: dict[str, Any] = {}
    for arm, d in drawn.items():
      row[arm] = (difference([(1, d[END][tid]), (-1, d[START][tid])],
                             confidence) if d else None)
    n, b = drawn.get("normative"), drawn.get("baseline")
    if n and b:
      row[DID] = difference([(1, n[END][tid]), (-1, n[START][tid]),
                             (-1, b[END][tid]), (1, b[START][tid])],
                            confidence)
    out[tid] = row
  return out


def held_at_start(e: Estimate) -> bool:
  """Whether the lower end of the start share's interval (corrected where
  the matcher's error was measured, else raw) is above 0: the agents
  brought the target, so its emergence cannot be read from the end alone."""
  low = e.low if math.isfinite(e.corrected) else e.raw_low
  return bool(math.isfinite(low) and low > 0.0)


def _apart(runs: Sequence[StatedRun], tids: Sequence[str]
           ) -> dict[str, Any]:
  """Per phase: failed agents, and the entrepreneurs answering and stating
  each target (counted over the runs, never pooled into the shares)."""
  out: dict[str, Any] = {}
  for phase in PHASES:
    said = [s for r in runs for s in r.entrepreneurs[phase].values()
            if s is not None]
    out[phase] = {
        "failed": sum(len(r.failed[phase]) for r in runs),
        "entrepreneurs": len(said),
        "entrepreneurs_stating": {t: sum(t in s for s in said)
                                  for t in tids}}
  return out


def stated_block(by_arm: Mapping[str, Sequence[StatedRun]]
                 ) -> dict[str, Any]:
  """The `stated_belief` block of a run's or a compare's summary."""
  runs = [r for rs in by_arm.values() for r in rs]
  if not any(r.asked for r in runs):
    return {"asked": False, "note": NOT_ASKED}
  rates = _rates(by_arm)
  tids = list(rates)
  drawn = _by_arm(by_arm, rates)
  pooled = _draw(runs, tids, rates, 0, 0)
  changes = _changes(drawn, tids, correction.CONFIDENCE)
  targets = {}
  for tid in tids:
    shares = {phase: {arm: (estimate_of(drawn[arm][phase][tid]).as_dict()
                            if drawn.get(arm) else None) for arm in by_arm}
              for phase in PHASES}
    start = (estimate_of(pooled[START][tid]) if pooled
             else correction.NAN_ESTIMATE)
    targets[tid] = {
        "shares": shares, "start_pooled": start.as_dict(),
        "held_at_start": held_at_start(start),
        "change": {arm: changes[tid].get(arm) for arm in by_arm},
        "did": changes[tid].get(DID),
        "rates": rates[tid].describe() if rates[tid] else None,
        "note": next(r for r in runs).rates[tid][1]}
  return {
      "asked": True,
      "runs": {arm: {"asked": sum(bool(r.asked) for r in rs),
                     "runs": len(rs)} for arm, rs in by_arm.items()},
      "apart": {arm: _apart(rs, tids) for arm, rs in by_arm.items()},
      "method": (
          "share of non-entrepreneur agents whose stated rules mean the "
          "target (stated.py), Rogan-Gladen with the matcher's measured "
          "error (k stated rules = k classifications), 95% percentile "
          "interval of a bootstrap of runs (agents with one run) and "
          "Jeffreys draws of sensitivity/specificity; change = end - "
          "start and DiD = normative change - baseline change from the "
          "same draws; held at the start: the lower end of the start "
          "share pooled over both arms is above 0"),
      "targets": targets}


def rule_rows(run: Run, matcher: NormMatcher | None) -> pd.DataFrame:
  """RUN_DIR/stated_belief.csv with `targets`: the ids of the targets each
  stated rule means (empty for an agent's no-rule or failed row; None for
  every row without a matcher)."""
  frame = read_stated(run.path)
  said = frame["rule_index"] != NO_RULE
  texts = frame.loc[said, "rule"].tolist()
  meant = (dict(zip(texts, matcher.means_many(texts)))
           if matcher is not None and texts else {})
  frame = frame.assign(targets=[
      (None if matcher is None else
       tuple(sorted(meant[r])) if ok else ())
      for r, ok in zip(frame["rule"], said)])
  return frame[[*STATED_COLUMNS, "targets"]]


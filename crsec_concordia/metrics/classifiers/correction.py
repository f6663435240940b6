"""Shares of agents corrected for the measured error of their classifier.

Belief (does an agent hold a norm that MEANS the target?) is decided by the
norm matcher, behaviour (does its latest relevant action comply?) by the
game master's referee. Both err, and their errors were measured on labelled
sets: a raw share of "yes" is then biased (a matcher with 10% false
positives reports 10% belief where nobody holds the norm), and an interval
around the raw share only says how sure we are of that biased number.

The Rogan-Gladen estimator undoes the bias: with sensitivity se (recall)
and specificity sp, E[raw] = p*se + (1-p)*(1-sp), so
    p = (raw + sp - 1) / (se + sp - 1), clipped to [0, 1].
Its interval must carry two uncertainties: of the measurement (se and sp
come from a few dozen labelled cases) and of the agents (which agents, which
runs). `estimate` draws both: se and sp from their Jeffreys posteriors
Beta(successes + 1/2, failures + 1/2) given the labelled counts (a plain
resample of a labelled set with no false positive would say sp = 1 for
sure), and the agents by resampling runs (clusters; a single run's agents
when there is one run). The percentile interval of the corrected draws is reported.

An agent is one classification per norm it holds: a holder of k qualified
norms, one of which means the target, is flagged with probability
1 - (1-se)*sp^(k-1); a non-holder with 1 - sp^k (any of its k norms may be
mistaken for the target). `estimate` averages these agent-level rates over
the (resampled) agents before applying Rogan-Gladen, so an agent with many
norms counts as a more error-prone classification; agents with no norm are
known non-holders and cannot be flagged. Behaviour passes k = 1 for every
agent (its state is its latest relevant action, one referee decision).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

DRAWS = 1000
CONFIDENCE = 0.95


@dataclasses.dataclass(frozen=True)
class Rates:
  """A classifier's labelled confusion counts for one target.

  `tn` is the labelled negatives the classifier left alone: for the matcher,
  the venue's labelled norms that do not mean the target (every norm is
  scored against every target of its venue), minus the false positives."""
  tp: int
  fp: int
  fn: int
  tn: int
  source: str = ""

  @property
  def sensitivity(self) -> float:
    return self.tp / (self.tp + self.fn) if self.tp + self.fn else math.nan

  @property
  def specificity(self) -> float:
    return self.tn / (self.tn + self.fp) if self.tn + self.fp else math.nan

  def usable(self) -> bool:
    """Both rates measured, and the classifier better than a coin (else
    Rogan-Gladen divides by ~0 or flips the sign)."""
    return (self.tp + self.fn > 0 and self.tn + self.fp > 0
            and self.sensitivity + self.specificity > 1.0)

  def draw(self, rng: np.random.Generator, n: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """n draws of (sensitivity, specificity) from their Jeffreys posteriors."""
    se = rng.beta(self.tp + 0.5, self.fn + 0.5, size=n)
    sp = rng.beta(self.tn + 0.5, self.fp + 0.5, size=n)
    return se, sp

  def describe(self) -> dict[str, Any]:
    return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "tn": self.tn,
            "sensitivity": _round(self.sensitivity),
            "specificity": _round(self.specificity), "source": self.source}


def _round(x: float) -> float | None:
  return None if math.isnan(x) else round(x, 4)


def rogan_gladen(raw: Any, se: Any, sp: Any) -> np.ndarray:
  """(raw + sp - 1) / (se + sp - 1), clipped to [0, 1]; NaN where the
  classifier is no better than a coin."""
  raw, se, sp = (np.asarray(v, dtype=float) for v in (raw, se, sp))
  denominator = se + sp - 1.0
  with np.errstate(divide="ignore", invalid="ignore"):
    p = (raw + sp - 1.0) / denominator
  return np.where(denominator > 0, np.clip(p, 0.0, 1.0), np.nan)


@dataclasses.dataclass(frozen=True)
class Estimate:
  """A share of agents: raw, with its agents-only interval, and corrected,
  with the interval that also carries the classifier's measured error."""
  raw: float
  raw_low: float
  raw_high: float
  corrected: float
  low: float
  high: float
  agents: int
  runs: int

  def as_dict(self) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and math.isnan(v) else v)
            for k, v in dataclasses.asdict(self).items()}


NAN_ESTIMATE = Estimate(*(math.nan,) * 6, agents=0, runs=0)


def _agent_rates(se: np.ndarray, sp: np.ndarray, k: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
  """Per-agent P(flag | holds) and P(flag | does not hold) for k norms."""
  with np.errstate(invalid="ignore"):
    hit = 1.0 - (1.0 - se) * sp ** np.maximum(k - 1, 0)
    false = 1.0 - sp ** k
  return np.where(k > 0, hit, 0.0), np.where(k > 0, false, 0.0)


def corrected_share(flags: np.ndarray, k: np.ndarray, se: np.ndarray,
                    sp: np.ndarray, present: np.ndarray | None = None
                    ) -> np.ndarray:
  """Corrected share for agents along the last axis; se, sp broadcast.
  `present` (same shape as `flags`) marks the agents that count, where
  samples of unequal size are padded (padding has k = 0 and is never
  flagged); a sample with nobody present has no share (NaN).

  Rogan-Gladen over the agents that hold any norm (k > 0), then scaled to
  all agents: an agent with none is a known non-holder, never flagged.
  Averaged in with the others (its chance of being flagged if it held the
  target counted as 0), such agents would pull the mean sensitivity down
  and inflate the share of those who do hold norms (docs/trials/metrics.md).
  """
  hit, false = _agent_rates(se[..., None], sp[..., None], k)
  some = np.broadcast_to(k > 0, hit.shape)
  count = some.sum(-1)
  with np.errstate(divide="ignore", invalid="ignore"):
    raw = np.where(some, flags, 0.0).sum(-1) / count
    mean_hit = np.where(some, hit, 0.0).sum(-1) / count
    mean_false = np.where(some, false, 0.0).sum(-1) / count
    denominator = mean_hit - mean_false
    p = (raw - mean_false) / denominator
  if present is None:
    share = np.clip(p, 0.0, 1.0) * count / some.shape[-1]
    return np.where(count == 0, 0.0,
                    np.where(denominator > 0, share, np.nan))
  total = np.broadcast_to(present, hit.shape).sum(-1)
  with np.errstate(divide="ignore", invalid="ignore"):
    share = np.clip(p, 0.0, 1.0) * count / total
  return np.where(total == 0, np.nan, np.where(
      count == 0, 0.0, np.where(denominator > 0, share, np.nan)))


def unanimous_draws(f: np.ndarray, flags: np.ndarray, k: np.ndarray,
                    kk: np.ndarray, rng: np.random.Generator) -> np.ndarray:
  """The resampled flags, or, when every agent that could be flagged was
  flagged alike (none, or all), flags drawn afresh.

  Resampling agents (or runs) of a unanimous sample gives the same share in
  every draw: "tip after meals: 0% [0%, 0%]" from ten agents, as if a
  handful of agents proved that nobody would ever hold it. Instead the
  share of flagged agents is drawn from its Jeffreys posteriors
  Beta(x + 1/2, n - x + 1/2) (x of n agents with a norm flagged, all runs
  pooled), and each resampled agent with a norm is flagged with that
  chance: none of 10 gives about the interval that one flagged agent of 10
  gives by resampling.
  """
  some = k > 0
  n = int(some.sum())
  x = int(flags[some].sum())
  if n == 0 or 0 < x < n:
    return f
  share = rng.beta(x + 0.5, n - x + 0.5, size=(f.shape[0], 1))
  return np.where(kk > 0, rng.random(f.shape) < share, 0.0)


def estimate(flags: Sequence[Sequence[bool]] | np.ndarray,
             rates: Rates | None,
             norms: Sequence[Sequence[int]] | np.ndarray | None = None, *,
             draws: int = DRAWS, confidence: float = CONFIDENCE,
             seed: int = 0) -> Estimate:
  """The share of flagged agents over runs (rows) and agents (columns).

  `norms`: each agent's number of classifications (qualified norms held;
  None = 1 each). Without usable `rates` the corrected fields are NaN: a
  share is never corrected by an error nobody measured."""
  flags = np.asarray(flags, dtype=float)
  if flags.ndim == 1:
    flags = flags[None, :]
  runs, agents = flags.shape
  if flags.size == 0:
    return NAN_ESTIMATE
  k = (np.ones_like(flags) if norms is None
       else np.asarray(norms, dtype=float).reshape(flags.shape))
  rng = np.random.default_rng(seed)
  # Runs are clusters: with several, resample whole runs (which carries the
  # agents' variation within them too; resampling agents again inside
  # would count it twice); with one run, resample its agents.
  if runs > 1:
    pick = rng.integers(0, runs, size=(draws, runs))
    f, kk = flags[pick].reshape(draws, -1), k[pick].reshape(draws, -1)
  else:
    pick = rng.integers(0, agents, size=(draws, agents))
    f, kk = flags[0][pick], k[0][pick]
  f = unanimous_draws(f, flags, k, kk, rng)
  tail = (1.0 - confidence) / 2 * 100
  # The bootstrap's spread of a mean of n units is (n-1)/n of the
  # variance's unbiased estimate, so with a few runs the intervals fall
  # short of their coverage (docs/trials/metrics.md). Draws are stretched
  # about the point by sqrt(n/(n-1)).
  units = runs if runs > 1 else agents
  stretch = math.sqrt(units / (units - 1)) if units > 1 else 1.0
  raw = float(flags.mean())
  raw_draws = raw + stretch * (f.mean(-1) - raw)
  raw_low, raw_high = np.clip(np.percentile(raw_draws, [tail, 100 - tail]),
                              0.0, 1.0)
  if rates is None or not rates.usable():
    return Estimate(raw, float(raw_low), float(raw_high), math.nan, math.nan,
                    math.nan, agents=runs * agents, runs=runs)
  se, sp = rates.draw(rng, draws)
  point = corrected_share(flags.reshape(-1), k.reshape(-1),
                          np.asarray(rates.sensitivity),
                          np.asarray(rates.specificity))
  corrected = corrected_share(f, kk, se, sp)
  corrected = corrected[np.isfinite(corrected)]
  if np.isfinite(point):
    corrected = np.clip(point + stretch * (corrected - point), 0.0, 1.0)
  if not corrected.size:
    return Estimate(raw, float(raw_low), float(raw_high), float(point),
                    math.nan, math.nan, agents=runs * agents, runs=runs)
  low, high = np.percentile(corrected, [tail, 100 - tail])
  return Estimate(raw, float(raw_low), float(raw_high), float(point),
                  float(low), float(high), agents=runs * agents, runs=runs)

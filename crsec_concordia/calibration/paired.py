"""Two ways of asking the same labelled cases, compared case by case.

Whether a model judges as well asked about several cases in one call
(batched) as asked about each alone is a paired question: the same cases
answered both ways, so the difference is read on the same resamples of
the cases, not on two independent samples (docs/calibration.md, "A place's
slot judged together"). `paired_bootstrap` gives each way's two rates and
the paired difference with 95% intervals; a `BatchRule` holds what one
operation counts (the referee's tags, DetectConflict's verdicts), its
rules, and the figures calibration/batching.py keeps per venue and pooled.
Only numbers here: asking the model is metrics/classifiers/batch_probe_run.py's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

RESAMPLES = 2000
SEED = 0
# The rules' margin, a difference of rates (no cosine): the repeat-to-repeat
# recall difference of the same model on the same cases (docs/calibration.md,
# "Models compared").
REPEAT_DIFFERENCE = 0.05
# {mode: {rate: (value, lo, hi), "d" + rate: (difference, lo, hi)}}.
Figures = dict[str, dict[str, tuple[float, ...]]]
# The rule read on one mode's figures: whether batched held.
Rule = Callable[[dict[str, tuple[float, ...]]], bool]
# (rng, loss) -> a simulated venue's per-case rows asked both ways.
Draw = Callable[[np.random.Generator, float], tuple[np.ndarray, np.ndarray]]


def paired_bootstrap(base: np.ndarray, others: Mapping[str, np.ndarray],
                     rates: Callable[[np.ndarray], np.ndarray],
                     keys: tuple[str, str], name: str,
                     resamples: int = RESAMPLES, seed: int = SEED) -> Figures:
  """{mode: {key: (value, lo, hi), "d" + key: (diff, lo, hi)}}: the two
  `rates` of each mode's summed per-case rows with 95% intervals from
  resampling the cases, and the paired difference from `base` (the same
  resamples scored both ways; none for base itself, named `name`)."""
  rng = np.random.default_rng(seed)
  n = len(base)
  draws = rng.integers(0, n, size=(resamples, n)) if n else np.zeros(
      (1, 0), dtype=int)
  base_value = rates(base.sum(axis=0))
  base_boot = rates(base[draws].sum(axis=1))
  out: Figures = {}
  for mode, rows in {name: base, **others}.items():
    value = rates(rows.sum(axis=0))
    boot = rates(rows[draws].sum(axis=1))
    figures: dict[str, tuple[float, ...]] = {}
    for k, key in enumerate(keys):
      figures[key] = (float(value[k]), *map(float, np.quantile(
          boot[:, k], [0.025, 0.975])))
      if mode != name:
        figures["d" + key] = (float(value[k] - base_value[k]), *map(
            float, np.quantile(boot[:, k] - base_boot[:, k],
                               [0.025, 0.975])))
    out[mode] = figures
  return out


def interval_text(figure: tuple[float, ...]) -> str:
  """`value [lo, hi]`, two decimals."""
  return f"{figure[0]:.2f} [{figure[1]:.2f}, {figure[2]:.2f}]"


def batches_of(size: int) -> str:
  """The name of the mode that asks `size` cases a call."""
  return f"batches of {size}"


def largest(sizes: Sequence[int]) -> str:
  """The mode the rules read: batches of the largest size probed (a run's
  largest place-slot)."""
  return batches_of(max(sizes))


def joined(found: Sequence[Mapping[str, np.ndarray]]
           ) -> dict[str, np.ndarray]:
  """Venues' per-case rows ({mode: rows} each) as one venue's."""
  return {m: np.concatenate([r[m] for r in found]) for m in found[0]}


@dataclasses.dataclass(frozen=True)
class BatchRule:
  """One operation's comparison: the mode batched is compared against
  (`base`), the two rates its per-case rows give (`keys`, `rates`), the
  pooled rule (`passes`), the venue's own (`holds`), and the rate a loss
  of what is found shows in (`found`: hits, recall)."""
  base: str
  keys: tuple[str, str]
  rates: Callable[[np.ndarray], np.ndarray]
  passes: Rule
  holds: Rule
  found: str

  def venue_verdict(self, figures: Mapping[str, Mapping[str, Sequence[float]]],
                    sizes: Sequence[int]) -> bool | None:
    """The venue's rule at the largest size, or None where the venue's
    cases cannot show a loss: `base` found nothing on them (no breach
    found one at a time, no tag right per action), so batched has nothing
    to lose there and the venue goes by the pooled verdict."""
    if not figures[self.base][self.found][0] > 0:
      return None
    return self.holds(figures[largest(sizes)])

  def compare(self, rows: Mapping[str, np.ndarray],
              resamples: int = RESAMPLES, seed: int = SEED) -> Figures:
    """Each mode's figures from its per-case rows ({mode: rows}, `base`
    among them), the others' paired with `base`."""
    return paired_bootstrap(rows[self.base], {
        m: r for m, r in rows.items() if m != self.base}, self.rates,
        self.keys, self.base, resamples, seed)

  def venue_figures(self, rows: Mapping[str, np.ndarray],
                    sizes: Sequence[int]) -> dict[str, Any]:
    """What calibration/batching.py keeps of a venue: each mode's figures,
    and `keeps`: its verdict (`venue_verdict`; None: cannot tell)."""
    figures = self.compare(rows)
    return {"n": int(len(rows[self.base])), "figures": figures,
            "keeps": self.venue_verdict(figures, sizes)}

  def pooled(self, found: Sequence[Mapping[str, np.ndarray]],
             sizes: Sequence[int]) -> dict[str, Any]:
    """Every venue's cases scored as one, and `passes`: the pooled rule at
    the largest size."""
    rows = joined(found)
    figures = self.compare(rows)
    return {"n": int(len(rows[self.base])), "figures": figures,
            "passes": self.passes(figures[largest(sizes)]),
            "margin": REPEAT_DIFFERENCE, "sizes": sorted(sizes)}

  def pass_rates(self, draw: Draw, rule: Rule, losses: Sequence[float],
                 venues: int, resamples: int, seed: int
                 ) -> dict[float, float]:
    """{loss: the share of `venues` simulated venues `rule` passes}, each
    venue's rows drawn by `draw` (the rules' error rates, by simulation)."""
    rng = np.random.default_rng(seed)
    out = {}
    for loss in losses:
      passed = 0
      for v in range(venues):
        base, other = draw(rng, loss)
        figures = paired_bootstrap(base, {"b": other}, self.rates,
                                   self.keys, self.base, resamples, seed + v)
        passed += rule(figures["b"])
      out[loss] = passed / venues
    return out

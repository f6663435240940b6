"""The referee's tags asked per action and batched: scored and judged.

A place's slot may be judged in one call (game_masters/referee/batch.py)
only where the model's tags hold so: the same labelled cases tagged per
action and in batches, scored as bench/probe_scores.py counts tags
(precision and recall over behaviour tags), compared case by case
(paired.py). Two rules read the comparison at the largest size
(docs/calibration.md): on a venue with labelled cases, batched is not
shown worse on its own cases (`holds_on_venue`); pooled over the measured
venues, the paired difference's interval lies above -REPEAT_DIFFERENCE
(`passes`), the stricter test a venue nobody labelled is decided by. `simulate` shows
both rules' error rates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from crsec_concordia.calibration.paired import (REPEAT_DIFFERENCE,
                                                RESAMPLES, SEED, BatchRule,
                                                Figures, Rule, interval_text)
from crsec_concordia.calibration.probes import Case

PER_ACTION = "per action"


@dataclasses.dataclass
class ModeTags:
  """One mode's tags of every case, in the cases' order."""
  name: str
  tags: list[list[str]]


def case_tag_counts(truth: Sequence[Sequence[str]],
                    got: Sequence[Sequence[str]]) -> np.ndarray:
  """Per case: (TP, FP, FN), probe_scores.TagCounts' counting."""
  rows = []
  for want, have in zip(truth, got):
    want, have = set(want), set(have)
    rows.append((len(want & have), len(have - want), len(want - have)))
  return np.array(rows, dtype=float).reshape(-1, 3)


def tag_rates(sums: np.ndarray) -> np.ndarray:
  """(precision, recall) of each row of summed (TP, FP, FN) counts, as
  calibration/scores.py defines them (1.0 with nothing claimed, or nothing
  to find)."""
  tp, fp, fn = sums[..., 0], sums[..., 1], sums[..., 2]
  with np.errstate(invalid="ignore", divide="ignore"):
    p = np.where(tp + fp > 0, tp / (tp + fp), 1.0)
    r = np.where(tp + fn > 0, tp / (tp + fn), 1.0)
  return np.stack([p, r], axis=-1)


def passes(figures: dict[str, tuple[float, ...]],
           margin: float = REPEAT_DIFFERENCE) -> bool:
  """The pooled rule: the paired difference's interval for precision and
  for recall lies above -margin."""
  return figures["dP"][1] > -margin and figures["dR"][1] > -margin


def holds_on_venue(figures: dict[str, tuple[float, ...]],
                   margin: float = REPEAT_DIFFERENCE) -> bool:
  """The venue's rule: batched is not shown worse on the venue's own
  cases, the paired difference's interval reaching 0 for precision and
  for recall, and neither point figure is below -margin."""
  return all(figures[k][0] >= -margin and figures[k][2] >= 0
             for k in ("dP", "dR"))


REFEREE_RULE = BatchRule(PER_ACTION, ("P", "R"), tag_rates, passes,
                         holds_on_venue, found="R")


def compare_tags(truth: Sequence[Sequence[str]], base: ModeTags,
                 others: Sequence[ModeTags], resamples: int = RESAMPLES,
                 seed: int = SEED) -> Figures:
  """{mode: {"P": (value, lo, hi), "R": ..., "dP": (diff, lo, hi), "dR":
  ...}}: each mode's precision and recall with 95% bootstrap intervals
  over cases, and its paired difference from `base` (none for base)."""
  rows = {m.name: case_tag_counts(truth, m.tags) for m in (base, *others)}
  return dataclasses.replace(REFEREE_RULE, base=base.name).compare(
      rows, resamples, seed)


def simulate(cases: int = 66, venues: int = 200, shown: float = 0.5,
             recall: float = 0.8, false_tags: float = 0.05,
             losses: Sequence[float] = (0.0, 0.05, 0.1, 0.15),
             churn: float = 0.1, resamples: int = 500, seed: int = SEED,
             rule: Rule = passes) -> dict[float, float]:
  """{recall lost batched: the share of simulated venues `rule` (the
  pooled one, `passes`, or the venue's, `holds_on_venue`) passes}. Each
  venue: `cases` cases, a share `shown` labelled with one behaviour; per
  action finds it at `recall` and adds a false tag at `false_tags`;
  batched answers each case as per action did (paired, as the same model
  asked both ways) except that a share `churn` of cases is answered afresh
  at the same rates (answers that differ with nothing lost on average) and
  a found tag is lost at the rate that takes `loss` off recall."""
  def draw(rng: np.random.Generator, loss: float):
    want = rng.random(cases) < shown
    found = want & (rng.random(cases) < recall)
    false = rng.random(cases) < false_tags
    fresh = rng.random(cases) < churn
    again = np.where(fresh, want & (rng.random(cases) < recall), found)
    again_false = np.where(fresh, rng.random(cases) < false_tags, false)
    lost = again & (rng.random(cases) < loss / recall)

    def rows(hit, wrong):
      return np.stack([hit, wrong, want & ~hit], axis=1).astype(float)
    return rows(found, false), rows(again & ~lost, again_false)
  return REFEREE_RULE.pass_rates(draw, rule, losses, venues, resamples, seed)


def differing_tags(cases: Sequence[Case], base: ModeTags, other: ModeTags
                   ) -> list[str]:
  """A line per case whose tags differ between two modes."""
  return [f"   differs ({other.name}): want {sorted(c.behaviours)}, "
          f"{base.name} {b}, {other.name} {o} | {c.actor}: {c.action}"
          for c, b, o in zip(cases, base.tags, other.tags) if b != o]


def tag_lines(label: str, figures: Figures, n: int) -> list[str]:
  """One line per mode of a venue's figures (per action first)."""
  lines = []
  for mode, f in figures.items():
    lines.append(
        f"{label} {mode}: P {interval_text(f['P'])} R "
        f"{interval_text(f['R'])}"
        + (f"; minus per action: P {interval_text(f['dP'])} R "
           f"{interval_text(f['dR'])}" if "dP" in f else "") + f" (n={n})")
  return lines

"""DetectConflict's verdicts asked one at a time and batched: scored and judged.

A slot's DetectConflict questions of a place may be asked in one call
(operations/detect_conflict_batch.py) only where the model's verdicts
hold so: the same labelled conflict cases asked both ways, scored as hits
(breaches found, of the breaches) and false alarms (non-breaches called
breaches, intentions among them), a failed call counted as no breach
found, and compared case by case (paired.py). The rules
(docs/calibration.md): pooled, batched finds no fewer breaches and raises
no more false alarms than one at a time, within the margin, at 95%
(`conflicts_pass`); on a venue's own cases, batched is not shown worse
(`conflicts_hold_on_venue`). `simulate_conflicts` shows their error rates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from crsec_concordia.calibration.paired import (REPEAT_DIFFERENCE, SEED,
                                                BatchRule, Rule,
                                                interval_text)
from crsec_concordia.calibration.probes import ConflictCase

ONE_AT_A_TIME = "one at a time"


@dataclasses.dataclass
class ModeVerdicts:
  """One mode's verdict on every case, in the cases' order: True a
  breach, False none, None the call failed."""
  name: str
  said: list[bool | None]


def outcomes(cases: Sequence[ConflictCase], said: Sequence[bool | None]
             ) -> np.ndarray:
  """Per case: (hit, breach, false alarm, non-breach) as 0 or 1."""
  return np.array([(c.breaks and s is True, c.breaks,
                    not c.breaks and s is True, not c.breaks)
                   for c, s in zip(cases, said)], dtype=float).reshape(-1, 4)


def alarm_rates(sums: np.ndarray) -> np.ndarray:
  """(hit rate, false-alarm rate) of summed outcome rows (0 with nothing
  to count)."""
  with np.errstate(invalid="ignore", divide="ignore"):
    hits = np.where(sums[..., 1] > 0, sums[..., 0] / sums[..., 1], 0.0)
    alarms = np.where(sums[..., 3] > 0, sums[..., 2] / sums[..., 3], 0.0)
  return np.stack([hits, alarms], axis=-1)


def conflicts_pass(figures: dict[str, tuple[float, ...]],
                   margin: float = REPEAT_DIFFERENCE) -> bool:
  """The pooled rule: batched finds no fewer breaches and raises no more
  false alarms than one at a time, within the margin, at 95%."""
  return figures["dhits"][1] > -margin and figures["dalarms"][2] < margin


def conflicts_hold_on_venue(figures: dict[str, tuple[float, ...]],
                            margin: float = REPEAT_DIFFERENCE) -> bool:
  """The venue's rule: batched is not shown worse on the venue's own
  cases (the hits' difference interval reaching 0 from below, the false
  alarms' from above), and neither point figure is worse than the
  margin."""
  return (figures["dhits"][0] >= -margin and figures["dhits"][2] >= 0
          and figures["dalarms"][0] <= margin and figures["dalarms"][1] <= 0)


CONFLICT_RULE = BatchRule(ONE_AT_A_TIME, ("hits", "alarms"), alarm_rates,
                          conflicts_pass, conflicts_hold_on_venue,
                          found="hits")


def simulate_conflicts(cases: int = 23, venues: int = 200,
                       breaches: float = 0.4, hit: float = 0.8,
                       alarm: float = 0.1,
                       losses: Sequence[float] = (0.0, 0.05, 0.1, 0.15),
                       churn: float = 0.1, resamples: int = 500,
                       seed: int = SEED, rule: Rule = conflicts_pass
                       ) -> dict[float, float]:
  """{hit rate lost batched: the share of simulated venues `rule` (the
  pooled one or the venue's) passes}. Each venue: `cases` cases, a share
  `breaches` of them breaches; one at a time finds a breach at `hit` and
  raises a false alarm at `alarm`; batched answers as one at a time did
  (paired: the same model asked both ways) except that a share `churn` of
  cases is answered afresh at the same rates, and a found breach is lost
  at the rate that takes `loss` off the hit rate."""
  def draw(rng: np.random.Generator, loss: float):
    breach = rng.random(cases) < breaches
    said = np.where(breach, rng.random(cases) < hit,
                    rng.random(cases) < alarm)
    fresh = rng.random(cases) < churn
    again = np.where(fresh, np.where(breach, rng.random(cases) < hit,
                                     rng.random(cases) < alarm), said)
    again &= ~(breach & (rng.random(cases) < loss / hit))

    def rows(verdict):
      return np.stack([breach & verdict, breach, ~breach & verdict,
                       ~breach], axis=1).astype(float)
    return rows(said), rows(again)
  return CONFLICT_RULE.pass_rates(draw, rule, losses, venues, resamples,
                                  seed)


def differing_verdicts(cases: Sequence[ConflictCase], base: ModeVerdicts,
                       other: ModeVerdicts) -> list[str]:
  """A line per case whose verdict differs between two modes."""
  def word(s):
    return "failed" if s is None else "breach" if s else "none"
  return [f"   differs ({other.name}): want "
          f"{'breach' if c.breaks else 'none'}"
          f"{' (intention)' if c.intention else ''}, {base.name} "
          f"{word(b)}, {other.name} {word(o)} | {c.norm} | {c.action}"
          for c, b, o in zip(cases, base.said, other.said) if b != o]


def verdict_lines(label: str, rows: Mapping[str, np.ndarray]) -> list[str]:
  """The figures of each mode's outcome rows ({mode: rows}, the first one
  at a time), one line each."""
  names = list(rows)
  rule = dataclasses.replace(CONFLICT_RULE, base=names[0])
  figures = rule.compare(rows)
  lines = []
  for mode in names:
    f, sums = figures[mode], rows[mode].sum(axis=0)
    line = (f"{label} DetectConflict {mode}: hits {sums[0]:.0f}/{sums[1]:.0f}"
            f" {interval_text(f['hits'])}, false alarms "
            f"{sums[2]:.0f}/{sums[3]:.0f} {interval_text(f['alarms'])}")
    if "dhits" in f:
      line += (f"; minus one at a time: hits {interval_text(f['dhits'])}, "
               f"false alarms {interval_text(f['dalarms'])}, rule "
               f"{'passes' if conflicts_pass(f) else 'fails'}")
    lines.append(line + f" (n={len(rows[mode])})")
  return lines

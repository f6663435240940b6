"""Measuring the matcher on labelled norms: how its rule was chosen.

Every rule and parameter is chosen on the calibration half of the
labelled norms (labels.py); the test half gives the figures. Scoring is
over (norm, target) pairs within a venue. `TRIED` lists every rule put
to the calibration half, `select` picks one; docs/trials/matcher.md has
the figures of each and the history of the choice.

`data/matcher_quality.json` holds the chosen rule's counts (measured.py
reads them); the report shows them beside the belief curves, and
tests/test_matcher_quality.py checks that they are what this module
computes. Regenerate it with
`python -m crsec_concordia.metrics.classifiers.matcher_quality --write`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from crsec_concordia.metrics.classifiers.threshold_search import Score
from crsec_concordia.metrics.classifiers.labels import (HELD_OUT_VENUES,
                                                        SPLITS, VENUES,
                                                        LabelledNorm,
                                                        load_items,
                                                        venue_behaviours,
                                                        venue_targets)
from crsec_concordia.metrics.classifiers.matching import (CHOSEN_RULE, POLARITY,
                                                          MatchRule,
                                                          NormMatcher)
from crsec_concordia.metrics.classifiers.measured import QUALITY_PATH
from crsec_concordia.scenarios import TargetNorm

# Thresholds tried when a rule is calibrated.
GRID = tuple(float(x) for x in np.round(np.arange(0.30, 0.90 + 1e-9, 0.005), 3))


@dataclasses.dataclass
class Table:
  """A rule's scores on one split: per target id, scores and labels."""
  scores: dict[str, np.ndarray]
  positive: dict[str, np.ndarray]
  texts: dict[str, list[str]]
  wording: dict[str, str]  # target id -> the target's text

  def counts(self, rule: MatchRule) -> dict[str, Score]:
    return {t: _score(s, self.positive[t], rule.threshold_for(self.wording[t]))
            for t, s in self.scores.items()}


def _score(scores: np.ndarray, positive: np.ndarray, threshold: float) -> Score:
  hit = scores >= threshold
  return Score(threshold=float(threshold), tp=int((hit & positive).sum()),
               fp=int((hit & ~positive).sum()), fn=int((~hit & positive).sum()))


def table(rule: MatchRule, split: str, *, embedder: Any = None,
          items: Sequence[LabelledNorm] | None = None,
          targets: dict[str, list[TargetNorm]] | None = None,
          venues: Iterable[str] = tuple(VENUES)) -> Table:
  """Every (norm, target) pair of `split` scored by `rule` (no judge), on
  the venues rules are chosen on unless others are named."""
  items = load_items() if items is None else items
  out = Table({}, {}, {}, {})
  for venue in venues:
    chosen = [i for i in items if i.venue == venue and i.split == split]
    if not chosen:
      continue
    venue_t = (targets or {}).get(venue) or venue_targets(venue)
    matcher = NormMatcher(venue_t, rule=rule, embedder=embedder,
                          behaviours=venue_behaviours(venue))
    scores = matcher.scores([i.text for i in chosen])
    for k, target in enumerate(venue_t):
      out.scores[target.id] = scores[:, k]
      out.positive[target.id] = np.array([target.id in i.targets
                                          for i in chosen])
      out.texts[target.id] = [i.text for i in chosen]
      out.wording[target.id] = target.text
  return out


def _worst_f1(counts: dict[str, Score]) -> float:
  return min(s.f1 for s in counts.values())


def fit_thresholds(rule: MatchRule, calibration: Table, *,
              per_target: bool = False,
              grid: Iterable[float] = GRID) -> MatchRule:
  """`rule` with the threshold(s) chosen on the calibration table.

  One threshold for all targets: the one whose worst target F1 is highest
  (ties go to the higher threshold, i.e. to precision). Per target: each
  target's best-F1 threshold (same tie rule), keyed by the target's text,
  with the one threshold for all kept for targets of other wordings."""
  grid = list(grid)
  best = max(grid, key=lambda x: (_worst_f1(calibration.counts(
      dataclasses.replace(rule, threshold=x, thresholds=()))), x))
  rule = dataclasses.replace(rule, threshold=float(best), thresholds=())
  if per_target:
    chosen = []
    for t, s in calibration.scores.items():
      mine = max(grid, key=lambda x: (_score(s, calibration.positive[t], x).f1, x))
      chosen.append((calibration.wording[t], float(mine)))
    rule = dataclasses.replace(rule, thresholds=tuple(chosen))
  return rule


@dataclasses.dataclass(frozen=True)
class Tried:
  """A rule tried on the calibration half, and how its thresholds were set."""
  label: str
  rule: MatchRule
  calibration: str = "global"  # "global", "per_target" or "fixed"

  def fitted(self, calibration: Table) -> MatchRule:
    if self.calibration == "fixed":
      return self.rule
    return fit_thresholds(self.rule, calibration,
                          per_target=self.calibration == "per_target")


_READ = dict(aliases=True, clauses=True, contrast=True, permissions=True)
_SIDED = dict(_READ, reasons=True, margin=0.0, polarity=POLARITY)
# Every rule tried, in the order tried; bench/matcher_quality.py prints them
# and `select` picks one of them on the calibration half.
TRIED = (
    Tried("single cosine >= 0.52 (the old rule)", MatchRule("single_cosine"),
          "fixed"),
    Tried("single cosine, threshold recalibrated", MatchRule("single_cosine")),
    Tried("max over text + aliases", MatchRule("aliases", aliases=True)),
    Tried("aliases, clauses", MatchRule("aliases_clauses", aliases=True,
                                        clauses=True)),
    Tried("aliases, clauses, contrast, permissions",
          MatchRule("aliases_clauses_permissions", **_READ)),
    Tried("+ opposites by behaviour descriptions",
          MatchRule("behaviour_opposites", opposites=True, **_READ)),
    Tried("+ comma parts", MatchRule("comma_parts", commas=True, **_READ)),
    Tried("+ nearest target only (margin 0)",
          MatchRule("nearest_target", margin=0.0, **_READ)),
    Tried("+ nearest target, reasons, polarity 0.05",
          MatchRule("nearest_target_polarity", **_SIDED)),
    Tried("+ nearest target, reasons, polarity 0.05, mean of best 3",
          MatchRule("nearest_target_polarity_pool3", pool=3, **_SIDED)),
    Tried("+ nearest target, reasons, polarity 0.05, per-target thresholds",
          MatchRule("nearest_target_polarity_per_target", **_SIDED),
          "per_target"),
    Tried("+ stance 0.6, per-target thresholds",
          MatchRule("stance_60_per_target", stance=0.6, **_SIDED),
          "per_target"),
)


def worst(counts: dict[str, Score]) -> float:
  """The lowest precision or recall of any target: what the goal (both at
  least 0.9 for every target) is stated in."""
  return min(min(s.precision, s.recall) for s in counts.values())


def select(fitted: dict[str, MatchRule], calibration: dict[str, dict[str, Score]]
           ) -> str:
  """The label of the tried rule whose worst target precision or recall on
  the calibration half is highest (ties to the earlier, simpler rule)."""
  labels = list(fitted)
  return max(labels, key=lambda l: (worst(calibration[l]), -labels.index(l)))


def figures(counts: dict[str, Score]) -> dict[str, dict[str, Any]]:
  return {t: {"precision": round(s.precision, 4), "recall": round(s.recall, 4),
              "f1": round(s.f1, 4), "tp": s.tp, "fp": s.fp, "fn": s.fn,
              "threshold": s.threshold} for t, s in counts.items()}


def measure_matcher(rule: MatchRule = CHOSEN_RULE, *, embedder: Any = None
                    ) -> dict[str, Any]:
  """The rule's figures on both halves, with the wordings they hold for:
  the venues it was chosen on and the held-out ones (named under
  `held_out`), whose labels it never saw."""
  items = load_items()
  venues = (*VENUES, *HELD_OUT_VENUES)
  targets = {v: venue_targets(v) for v in venues}
  out: dict[str, Any] = {
      "rule": rule.describe(),
      "labels": {s: sum(i.split == s for i in items) for s in SPLITS},
      "held_out": list(HELD_OUT_VENUES),
      "targets": {t.id: {"venue": v, "text": t.text, "aliases": list(t.aliases)}
                  for v, ts in targets.items() for t in ts}}
  for split in SPLITS:
    counts = table(rule, split, embedder=embedder, items=items,
                   targets=targets, venues=venues).counts(rule)
    out[split] = figures(counts)
  return out


def main(argv: Sequence[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--write", action="store_true",
                      help=f"write {QUALITY_PATH.name}")
  args = parser.parse_args(argv)
  result = measure_matcher()
  text = json.dumps(result, indent=1, ensure_ascii=False) + "\n"
  if args.write:
    QUALITY_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {QUALITY_PATH}")
  else:
    print(text)


if __name__ == "__main__":
  main()

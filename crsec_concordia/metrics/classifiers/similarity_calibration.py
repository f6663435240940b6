"""Every similarity threshold of an embedder, derived from labelled cases.

The thresholds an embedder's record holds (calibration/thresholds.py's
SimilarityThresholds) are derived here with the embedder alone, no model:
the relevance floor is the highest floor that keeps every labelled breach
of the deed/norm pairs (calibration/data/deed_norm_pairs.jsonl); the
matcher's ABOUT cut and judge floor the cut with the widest margin between
those pairs that concern the norm (breach or related) and the unrelated
ones; ImmediateEvaluation's related floor keeps every paraphrase and
contradiction of the norm pairs (norm_pairs.jsonl), its duplicate cut lies
above every non-paraphrase (no candidate is rejected unasked unless the
labels say it may be); the referee's tag gate, second-look floor and
occasion gate each keep every labelled tag of the venues' probes
(scenarios/*.probes.yaml); the matcher's rule and single cosine are the
best on its labelled norms (matcher_quality.py, threshold_search.py), on a
grid of the embedder's own observed scores. The nearest rule's tie is the
cut between the venues' labelled gaps (`tie_gaps`): where a right
behaviour is among the second look's candidates, its score less the
nearest wrong candidate's; the tie is the cut with the fewest errors and
the widest margin between the gaps a tie should spare (a right behaviour
behind a wrong one) and those it should not (a wrong one behind a right),
so it scales with the embedder as its gaps do. The polarity penalty is a
share of the spread of the embedder's probe cosines: a scale of its own,
so an embedder whose cosines are MiniLM's squeezed into 0.6-1.0 gets the
same decisions.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from crsec_concordia import embedding
from crsec_concordia.calibration import probes as probes_lib
from crsec_concordia.calibration import store
from crsec_concordia.embedding.records import (SimilarityThresholds,
                                               Thresholds)
from crsec_concordia.game_masters.referee import (second_look, similarity_of,
                                                  tag_gate)
from crsec_concordia.metrics.classifiers import matcher_quality
from crsec_concordia.metrics.classifiers import threshold_search
from crsec_concordia.metrics.classifiers.matching import CHOSEN_RULE
from crsec_concordia.operations import detect_conflict_relevance as relevance
from crsec_concordia.scenarios import load_scenario

DEED_NORM_PAIRS = store.SHIPPED / "deed_norm_pairs.jsonl"
NORM_PAIRS = store.SHIPPED / "norm_pairs.jsonl"
# A share of the spread (standard deviation) of the embedder's cosines of
# probe actions with the venues' behaviours: the matcher's polarity
# penalty. A ratio, not a cosine: set so that MiniLM gets its measured
# penalty.
POLARITY_SHARE = 0.356
DECIMALS = 4


def _down(x: float) -> float:
  return math.floor(x * 10 ** DECIMALS) / 10 ** DECIMALS


def _read(path) -> list[dict[str, Any]]:
  return [json.loads(line) for line in path.read_text("utf-8").splitlines()
          if line.strip()]


def widest_cut(inside: Iterable[float], outside: Iterable[float]) -> float:
  """The cut with the fewest errors (inside at or above, outside below)
  and, among those, the widest margin: the midpoint of its gap (a cut
  past every case has no margin, and lies a step beyond the last)."""
  marks = sorted([(x, True) for x in inside] + [(x, False) for x in outside])
  values = [x for x, _ in marks]
  step = 10 ** -DECIMALS
  best, best_key = values[0], None
  for k in range(len(marks) + 1):
    if k == 0:
      cut, width = values[0] - step, 0.0
    elif k == len(values):
      cut, width = values[-1] + step, 0.0
    else:
      cut, width = (values[k - 1] + values[k]) / 2, values[k] - values[k - 1]
    errors = (sum(1 for _, i in marks[:k] if i)
              + sum(1 for _, i in marks[k:] if not i))
    key = (-errors, width)
    if best_key is None or key > best_key:
      best, best_key = cut, key
  return round(best, DECIMALS)


def deed_norm_cosines(embedder) -> dict[str, list[float]]:
  """The labelled deed/norm pairs' cosines by label, as the
  ConflictDetector reads them (the deed's sentence nearest the norm)."""
  out: dict[str, list[float]] = {}
  for pair in _read(DEED_NORM_PAIRS):
    near, = relevance.nearest_rules(embedder, [pair["deed"]], [pair["norm"]])
    out.setdefault(pair["label"], []).append(near.similarity)
  return out


def norm_pair_cosines(embedder) -> dict[str, list[float]]:
  pairs = _read(NORM_PAIRS)
  sims = embedding.similarity(embedder, [p["norm"] for p in pairs],
                              [p["other"] for p in pairs])
  out: dict[str, list[float]] = {}
  for k, pair in enumerate(pairs):
    out.setdefault(pair["label"], []).append(float(sims[k][k]))
  return out


def _probed_venues() -> Iterator[tuple[probes_lib.Probes, dict[str, str],
                                      frozenset[str]]]:
  """Each shipped venue's labelled cases, its behaviours' descriptions by
  id and its place words (tag_gate.place_words)."""
  for venue in probes_lib.probed_venues():
    scenario = load_scenario(venue)
    yield (probes_lib.load_probes(probes_lib.probes_path(scenario), scenario),
           {b.id: b.description for b in scenario.behaviours},
           tag_gate.place_words(scenario.setting))


def probe_cosines(embedder) -> dict[str, list[float]]:
  """From every shipped venue's probes: each labelled tag's nearness
  (`tag`), each tagged action's nearest behaviour (`look`), each labelled
  occasion answer's cosine with its behaviour (`occasion`), and every
  nearness (`all`)."""
  similarity = similarity_of(embedder)
  out: dict[str, list[float]] = {"tag": [], "look": [], "occasion": [],
                                 "all": []}
  for cases, described, words in _probed_venues():
    for case in cases.referee:
      near = tag_gate.near_scores(case.action, described, similarity, words)
      out["all"] += list(near.values())
      if case.behaviours:
        out["tag"] += [near[b] for b in case.behaviours]
        out["look"].append(max(near.values()))
    if cases.occasion is not None:
      for answer in cases.occasion.answers:
        out["occasion"] += [float(similarity(answer.action, described[b]))
                            for b in answer.behaviours]
  return out


def tie_gaps(embedder, floors: SimilarityThresholds) -> list[float]:
  """The labelled gaps of every shipped venue's probes: for each labelled
  action whose second look would list a right behaviour and a wrong one
  (second_look.candidates, on the tag and look floors of `floors`), the
  best right candidate's score less the best wrong one's. Negative: a
  strict nearest rule refuses the right answer; positive: a tie this wide
  or wider lets the wrong one through."""
  similarity = similarity_of(embedder)
  gaps = []
  for cases, described, words in _probed_venues():
    for case in cases.referee:
      near = dict(second_look.candidates(case.action, described, similarity,
                                         words, floors))
      right = [near[b] for b in case.behaviours if b in near]
      wrong = [s for b, s in near.items() if b not in case.behaviours]
      if right and wrong:
        gaps.append(max(right) - max(wrong))
  return gaps


def tie_of_gaps(gaps: Sequence[float]) -> float:
  """The tie with the fewest errors and the widest margin between the
  gaps it should spare (a right behaviour behind, by less than the tie)
  and those it should not (a wrong behaviour behind, by the tie or more);
  no gap of either kind: no tie."""
  behind = [-g for g in gaps if g < 0]
  ahead = [g for g in gaps if g > 0]
  if not behind or not ahead:
    return 0.0
  return max(0.0, widest_cut(ahead, behind))


def _midpoints(values: np.ndarray) -> list[float]:
  found = np.unique(np.round(values[np.isfinite(values) & (values > -1)],
                             DECIMALS + 1))
  return [float(x) for x in (found[:-1] + found[1:]) / 2] or [0.5]


def matcher_thresholds(embedder, polarity: float) -> tuple[float, float]:
  """(the chosen rule's threshold, the single cosine's) on the matcher's
  labelled norms, each on a grid of the embedder's own scores."""
  rule = dataclasses.replace(CHOSEN_RULE, polarity=polarity)
  calibration = matcher_quality.table(rule, "calibration", embedder=embedder)
  grid = _midpoints(np.concatenate(list(calibration.scores.values())))
  rule = matcher_quality.fit_thresholds(rule, calibration, grid=grid)
  sims, positive, _ = threshold_search.similarity_table(
      threshold_search.load_labels(), embedder)
  single = threshold_search.best_threshold(sims, positive,
                                           grid=_midpoints(sims.ravel()))
  return round(rule.threshold, DECIMALS), round(single.threshold, DECIMALS)


def derive(embedder, name: str | None = None) -> SimilarityThresholds:
  """The embedder's record, every threshold derived from labelled cases."""
  identity = embedding.identity_for(embedder)
  name = name or identity.name
  embedder = embedding.cached(embedder)  # Texts recur across the cases.
  deeds = deed_norm_cosines(embedder)
  norms = norm_pair_cosines(embedder)
  probed = probe_cosines(embedder)
  spread = float(np.std(probed["all"]))
  polarity = round(POLARITY_SHARE * spread, DECIMALS)
  rule, match = matcher_thresholds(embedder, polarity)
  about = widest_cut(deeds["breach"] + deeds["related"], deeds["unrelated"])
  tag = _down(min(probed["tag"]))
  look = _down(min(probed["look"]))
  unlike = norms["opposite"] + norms["other"]
  floors = SimilarityThresholds.with_floors(name, tag, look)
  return SimilarityThresholds(
      embedder=name, fingerprint=identity.fingerprint, measured=True,
      matcher=Thresholds(name, match=match, rule=rule, related=about,
                         judge_floor=about),
      relevance=_down(min(deeds["breach"])), tag=tag, spare_far=tag,
      occasion=_down(min(probed["occasion"])),
      look=look, near_tie=tie_of_gaps(tie_gaps(embedder, floors)),
      duplicate=widest_cut(
          [x for x in norms["same"] if x > max(unlike)], unlike),
      related_norms=_down(min(norms["same"] + norms["opposite"])),
      polarity=polarity)


def breaches_let_through(record: SimilarityThresholds, embedder,
                         conflicts: Sequence[tuple[str, str]]) -> float:
  """The share of labelled breaches (deed, norm) the relevance floor lets
  through to DetectConflict."""
  if not conflicts:
    return 1.0
  found = [relevance.nearest_rules(embedder, [deed], [norm])[0]
           for deed, norm in conflicts]
  return sum(n is not None and n.similarity >= record.relevance
             for n in found) / len(conflicts)

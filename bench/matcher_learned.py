"""Learned norm-matching rules tried on the labelled norms (issue 11); none is
shipped.

Each rule learns, per target, from the calibration half's labelled norms of
the target's venue (its positives, and every other norm of the venue as a
negative: near-misses, opposites, other targets' norms, unrelated ones):

- kNN: the majority label of the K calibration norms nearest by cosine of
  their 384-d all-MiniLM-L6-v2 embeddings;
- logistic regression on the raw embedding (L2, C; classes weighted to
  balance), MEANS when the probability is at least 0.5;
- the same on the embedding joined with the existing scores (the chosen
  rule's, the single cosine's and the text + aliases cosine's score for
  every target of the venue, and has_negation; scaled by 3);
- the chosen rule outside a band around its threshold, the logistic
  regression inside it.

The shipped rule (matching.CHOSEN_RULE) is the baseline, with its
per-target thresholds re-set on each training part, as a learned rule's
parameters are. A rule is judged by 5-fold cross-validation within the
calibration half (folds stratified by label, 5 repeats): the lowest
precision or recall of any target, pooled over the folds of one repeat,
averaged over repeats. Only then is each fitted on the whole calibration
half and scored on the test half.

numpy only (no scikit-learn): the logistic regression is solved by Newton's
method, the intercept unpenalised. bench/matcher_quality.py --learned prints
the table; docs/metrics.md records it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from crsec_concordia.metrics.classifiers import matcher_quality as mq
from crsec_concordia.metrics.classifiers import norm_clauses
from crsec_concordia.metrics.classifiers.threshold_search import Score
from crsec_concordia.metrics.classifiers.labels import venue_behaviours
from crsec_concordia.metrics.classifiers.matching import (CHOSEN_RULE,
                                                          MatchRule,
                                                          NormMatcher)

FOLDS = 5
REPEATS = 5
SCORE_SCALE = 3.0


@dataclasses.dataclass
class Venue:
  """One venue's labelled norms with every feature a learned rule uses."""
  ids: list[str]
  split: np.ndarray  # (norms,) "calibration" / "test"
  positive: np.ndarray  # (norms, targets) bool
  embedding: np.ndarray  # (norms, 384)
  chosen: np.ndarray  # (norms, targets): matching.CHOSEN_RULE's score
  scores: np.ndarray  # (norms, 3 * targets + 1): the existing scores


def venues(embedder: Any, items: Sequence[mq.LabelledNorm] | None = None
           ) -> dict[str, Venue]:
  items = mq.load_items() if items is None else items
  out = {}
  for venue in mq.VENUES:
    targets = mq.venue_targets(venue)
    mine = [i for i in items if i.venue == venue]
    texts = [i.text for i in mine]

    def scored(rule: MatchRule, texts=texts, targets=targets,
               behaviours=venue_behaviours(venue)) -> np.ndarray:
      return NormMatcher(targets, behaviours=behaviours, rule=rule,
                         embedder=embedder).scores(texts)

    chosen = scored(CHOSEN_RULE)
    negation = np.array([[norm_clauses.has_negation(t)] for t in texts], float)
    out[venue] = Venue(
        ids=[t.id for t in targets],
        split=np.array([i.split for i in mine]),
        positive=np.array([[t.id in i.targets for t in targets] for i in mine]),
        embedding=np.asarray(embedder.encode(texts), dtype=float),
        chosen=chosen,
        scores=np.hstack([chosen, scored(mq.TRIED[0].rule),
                          scored(MatchRule("aliases", aliases=True)),
                          negation]))
  return out


def logistic(x: np.ndarray, y: np.ndarray, c: float, iterations: int = 100
             ) -> tuple[np.ndarray, float]:
  """Weights and intercept minimising the class-balanced log loss plus
  |w|^2 / (2c) (scikit-learn's LogisticRegression(C=c,
  class_weight="balanced") objective), by Newton's method."""
  n, d = x.shape
  counts = np.array([(~y).sum(), y.sum()], float)
  weight = np.where(y, n / (2 * counts[1]), n / (2 * counts[0]))
  xa = np.hstack([x, np.ones((n, 1))])
  theta = np.zeros(d + 1)
  penalty = np.full(d + 1, 1.0 / c)
  penalty[-1] = 0.0
  for _ in range(iterations):
    p = 1.0 / (1.0 + np.exp(-(xa @ theta)))
    gradient = xa.T @ (weight * (p - y)) + penalty * theta
    hessian = (xa * (weight * p * (1 - p))[:, None]).T @ xa + np.diag(
        penalty + 1e-9)
    step = np.linalg.solve(hessian, gradient)
    theta -= step
    if np.abs(step).max() < 1e-8:
      break
  return theta[:-1], float(theta[-1])


# A rule: fit(venue, training rows, target column) -> predict(rows) -> bool.
Fit = Callable[[Venue, np.ndarray, int], Callable[[np.ndarray], np.ndarray]]


def _best_threshold(scores: np.ndarray, positive: np.ndarray) -> float:
  return max(mq.GRID, key=lambda x: (mq._score(scores, positive, x).f1, x))  # pylint: disable=protected-access


def chosen_refit(v: Venue, rows: np.ndarray, k: int):
  threshold = _best_threshold(v.chosen[rows, k], v.positive[rows, k])
  return lambda r: v.chosen[r, k] >= threshold


def knn(neighbours: int) -> Fit:
  def fit(v: Venue, rows: np.ndarray, k: int):
    x, y = v.embedding[rows], v.positive[rows, k].astype(float)

    def predict(r: np.ndarray) -> np.ndarray:
      nearest = np.argsort(-(v.embedding[r] @ x.T), axis=1,
                           kind="stable")[:, :neighbours]
      return y[nearest].mean(axis=1) >= 0.5
    return predict
  return fit


def _features(v: Venue, rows: np.ndarray, with_scores: bool) -> np.ndarray:
  if not with_scores:
    return v.embedding[rows]
  return np.hstack([v.embedding[rows], SCORE_SCALE * v.scores[rows]])


def regression(c: float, with_scores: bool = False) -> Fit:
  def fit(v: Venue, rows: np.ndarray, k: int):
    w, b = logistic(_features(v, rows, with_scores), v.positive[rows, k], c)
    return lambda r: _features(v, r, with_scores) @ w + b >= 0.0
  return fit


def band(width: float, inner: Fit) -> Fit:
  """The chosen rule (thresholds re-set) outside threshold +- width; the
  learned rule inside."""
  def fit(v: Venue, rows: np.ndarray, k: int):
    threshold = _best_threshold(v.chosen[rows, k], v.positive[rows, k])
    learned = inner(v, rows, k)

    def predict(r: np.ndarray) -> np.ndarray:
      out = v.chosen[r, k] >= threshold
      unsure = np.abs(v.chosen[r, k] - threshold) < width
      if unsure.any():
        out[unsure] = learned(r[unsure])
      return out
    return predict
  return fit


RULES: tuple[tuple[str, Fit], ...] = (
    ("chosen rule, per-target thresholds re-set on the training part",
     chosen_refit),
    ("kNN on embeddings, K=5", knn(5)),
    ("kNN on embeddings, K=9", knn(9)),
    ("logistic regression on embeddings, C=10", regression(10.0)),
    ("logistic regression on embeddings, C=100", regression(100.0)),
    ("logistic regression on embeddings + existing scores, C=10",
     regression(10.0, with_scores=True)),
    ("logistic regression on embeddings + existing scores, C=100",
     regression(100.0, with_scores=True)),
    ("chosen rule, logistic regression (embeddings, C=10) within +-0.05",
     band(0.05, regression(10.0))),
    ("chosen rule, logistic regression (embeddings, C=10) within +-0.08",
     band(0.08, regression(10.0))),
    ("chosen rule, logistic regression (+ scores, C=100) within +-0.08",
     band(0.08, regression(100.0, with_scores=True))),
)


def _counts(predicted: np.ndarray, positive: np.ndarray) -> Score:
  return Score(threshold=0.0, tp=int((predicted & positive).sum()),
               fp=int((predicted & ~positive).sum()),
               fn=int((~predicted & positive).sum()))


def _folds(strata: np.ndarray, seed: int, folds: int = FOLDS) -> np.ndarray:
  """A fold number per row, each stratum dealt round the folds in a random
  order."""
  rng = np.random.default_rng(seed)
  out = np.empty(len(strata), int)
  start = 0
  for stratum in np.unique(strata):
    rows = rng.permutation(np.flatnonzero(strata == stratum))
    out[rows] = (start + np.arange(len(rows))) % folds
    start += len(rows)
  return out


def cross_validate(fit: Fit, data: dict[str, Venue], *,
                   repeats: int = REPEATS) -> dict[str, Any]:
  """Per target the mean precision and recall over repeats of out-of-fold
  decisions on the calibration half, and the mean of each repeat's worst."""
  worst, per_target = [], {}
  for repeat in range(repeats):
    counts = {}
    for v in data.values():
      rows = np.flatnonzero(v.split == "calibration")
      label = v.positive[rows]
      strata = np.where(label.any(axis=1), label.argmax(axis=1) + 1, 0)
      fold = _folds(strata, seed=repeat)
      for k, target in enumerate(v.ids):
        predicted = np.zeros(len(rows), bool)
        for f in range(FOLDS):
          predict = fit(v, rows[fold != f], k)
          predicted[fold == f] = predict(rows[fold == f])
        counts[target] = _counts(predicted, label[:, k])
    worst.append(mq.worst(counts))
    for target, s in counts.items():
      per_target.setdefault(target, []).append((s.precision, s.recall))
  return {"worst": float(np.mean(worst)),
          "targets": {t: tuple(np.mean(pr, axis=0)) for t, pr in
                      per_target.items()}}


def test_half(fit: Fit, data: dict[str, Venue]) -> dict[str, Score]:
  """Fitted on the whole calibration half, scored on the test half."""
  counts = {}
  for v in data.values():
    train = np.flatnonzero(v.split == "calibration")
    test = np.flatnonzero(v.split == "test")
    for k, target in enumerate(v.ids):
      counts[target] = _counts(fit(v, train, k)(test), v.positive[test, k])
  return counts

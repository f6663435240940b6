"""The single cosine's threshold searched on labelled pairs, and `Score`.

`Score` counts a classifier's (item, target) decisions; matcher_quality.py
scores every rule with it. `data/matcher_labels.json` holds short
hand-written paraphrases and near-misses of the café's targets, each
labelled with the target norms it means (see its "about" and matching.py
for the standard): the set the single cosine's MATCH_THRESHOLD was
chosen on, which still cuts emergent norms' clusters. A pair is
positive when the item lists the target; the threshold is the one with the
highest F1 on a 0.005 grid (ties go to the higher threshold, i.e. to
precision).

Run `python -m crsec_concordia.metrics.classifiers.threshold_search` to print
the sweep and the errors at the chosen threshold.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from crsec_concordia import embedding
from crsec_concordia.calibration import scores
from crsec_concordia.metrics.classifiers import DATA
from crsec_concordia.metrics.classifiers.matching import MATCH_THRESHOLD

MATCHER_LABELS_PATH = DATA / "matcher_labels.json"


@dataclasses.dataclass(frozen=True)
class Score:
  threshold: float
  tp: int
  fp: int
  fn: int

  @property
  def precision(self) -> float:
    return scores.precision((self.tp, self.fp, self.fn))

  @property
  def recall(self) -> float:
    return scores.recall((self.tp, self.fp, self.fn))

  @property
  def f1(self) -> float:
    p, r = self.precision, self.recall
    return 2 * p * r / (p + r) if p + r else 0.0


def load_labels(path: Path = MATCHER_LABELS_PATH) -> dict[str, Any]:
  return json.loads(Path(path).read_text(encoding="utf-8"))


def similarity_table(labels: dict[str, Any], embedder: Any = None
                     ) -> tuple[np.ndarray, np.ndarray, list[str]]:
  """(similarities items x targets, positive mask, target ids)."""
  if embedder is None:
    embedder = embedding.shared_embedder()
  ids = list(labels["targets"])
  items = labels["items"]
  sims = embedding.similarity(embedder, [i["text"] for i in items],
                              [labels["targets"][t] for t in ids])
  positive = np.array([[t in i["targets"] for t in ids] for i in items])
  return np.asarray(sims), positive, ids


def score(sims: np.ndarray, positive: np.ndarray, threshold: float) -> Score:
  predicted = sims >= threshold
  return Score(threshold=float(threshold),
               tp=int((predicted & positive).sum()),
               fp=int((predicted & ~positive).sum()),
               fn=int((~predicted & positive).sum()))


def best_threshold(sims: np.ndarray, positive: np.ndarray,
              grid: Sequence[float] | None = None) -> Score:
  """The best-F1 threshold on the grid (ties to the higher threshold)."""
  if grid is None:
    grid = np.round(np.arange(0.30, 0.90 + 1e-9, 0.005), 3)
  best: Score | None = None
  for threshold in grid:
    s = score(sims, positive, threshold)
    if best is None or s.f1 >= best.f1:
      best = s
  assert best is not None
  return best


def main() -> None:
  labels = load_labels()
  sims, positive, ids = similarity_table(labels)
  print(f"{len(labels['items'])} items, {int(positive.sum())} positive pairs "
        f"of {positive.size}")
  for threshold in np.round(np.arange(0.35, 0.75, 0.025), 3):
    s = score(sims, positive, threshold)
    print(f"  {threshold:.3f}  precision {s.precision:.3f}  recall "
          f"{s.recall:.3f}  F1 {s.f1:.3f}")
  best = best_threshold(sims, positive)
  print(f"best F1 {best.f1:.3f} at {best.threshold:.3f} (precision "
        f"{best.precision:.3f}, recall {best.recall:.3f})")
  used = score(sims, positive, MATCH_THRESHOLD)
  print(f"MATCH_THRESHOLD {MATCH_THRESHOLD}: precision {used.precision:.3f} "
        f"recall {used.recall:.3f} F1 {used.f1:.3f} (tp {used.tp}, fp "
        f"{used.fp}, fn {used.fn})")
  for i, item in enumerate(labels["items"]):
    for j, target in enumerate(ids):
      hit, pos = sims[i, j] >= MATCH_THRESHOLD, positive[i, j]
      if hit != pos:
        print(f"  {'FP' if hit else 'FN'} {sims[i, j]:.2f} {target}: "
              f"{item['text']}")


if __name__ == "__main__":
  main()

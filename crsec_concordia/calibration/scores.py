"""Precision, recall and F1 of a classifier's decisions, from their counts.

Every measured judgement error is told in these three (a model's tags on
labelled cases, the matcher's decisions on labelled pairs), and each
reader of the figures says the same thing by the same words: with nothing
claimed a classifier made no false claim (precision 1.0), with nothing to
find it missed nothing (recall 1.0).
"""

from __future__ import annotations

Counts = tuple[int, int, int]  # (true positives, false positives, misses)


def precision(counts: Counts) -> float:
  """TP / (TP + FP); 1.0 with nothing claimed (no false claim)."""
  tp, fp, _ = counts
  return tp / (tp + fp) if tp + fp else 1.0


def recall(counts: Counts) -> float:
  """TP / (TP + FN); 1.0 with nothing to find."""
  tp, _, fn = counts
  return tp / (tp + fn) if tp + fn else 1.0


def f1(counts: Counts) -> float:
  tp, fp, fn = counts
  return 2 * tp / (2 * tp + fp + fn) if tp else 0.0

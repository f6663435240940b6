"""How well the norm matcher finds targets in agents' wording, per target.

Every rule tried (metrics/classifiers/matcher_quality.py, TRIED: the old
single cosine at 0.52 first) has its threshold(s) set on the calibration
half of crsec_concordia/metrics/data/norm_labels.jsonl, then is scored on
both halves over (norm, target) pairs within a venue. Prints, per rule, the
threshold(s) and precision, recall and F1 per target on the calibration and
the test half, then the chosen rule (matching.CHOSEN_RULE) and whether its
threshold is the one its calibration picks; with --errors, the chosen
rule's misses on the calibration half (the test half's misses are not
printed: that half is for the figures, not for tuning); with --learned,
the learned rules tried (bench/matcher_learned.py: kNN and logistic
regression on the embeddings, per target), judged by 5-fold
cross-validation on the calibration half, then scored on the test half
(a few minutes; none is shipped). With --held-out, only the chosen rule
on the held-out venues' labels (labels.HELD_OUT_VENUES: written after the
rule and its thresholds were chosen, and never used to choose or fit
them): sensitivity and specificity per target with 95% Jeffreys intervals
(the Beta(x + 1/2, n - x + 1/2) of correction.py), on the test half and on
both halves, and every norm it reads wrong; docs/calibration.md's table.
No language model: only the sentence embedder (a few seconds on 2 cores).
Usage: .venv/bin/python bench/matcher_quality.py [--errors] [--learned]
       | --held-out
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.metrics.classifiers import matcher_quality as mq  # noqa: E402
from crsec_concordia.metrics.classifiers import measured as matcher_error  # noqa: E402
from crsec_concordia.metrics.classifiers.threshold_search import Score  # noqa: E402
from crsec_concordia.metrics.classifiers.matching import (  # noqa: E402
    CHOSEN_RULE, MatchRule)
import matcher_learned as ml  # noqa: E402  (bench/, beside this file)


def _row(label: str, counts: dict[str, Score]) -> list[str]:
  cells = [f"{s.precision:.2f} {s.recall:.2f} {s.f1:.2f}"
           for s in counts.values()]
  return [f"| {label} | " + " | ".join(cells) + f" | {mq.worst(counts):.2f} |"]


def _thresholds(rule: MatchRule, targets: list) -> str:
  if rule.thresholds:
    return ", ".join(f"{t.id} {rule.threshold_for(t.text):.3f}"
                     for t in targets) + f" (others {rule.threshold:.3f})"
  return f"{rule.threshold:.3f}"


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--errors", action="store_true",
                      help="print the chosen rule's calibration misses")
  parser.add_argument("--learned", action="store_true",
                      help="also cross-validate the learned rules tried")
  parser.add_argument("--held-out", action="store_true",
                      help="only the chosen rule on the held-out venues")
  args = parser.parse_args()
  embedder = shared_embedder()
  items = mq.load_items()
  if args.held_out:
    _held_out(embedder, items)
    return
  targets = {v: mq.venue_targets(v) for v in mq.VENUES}
  every = [t for ts in targets.values() for t in ts]
  ids = [t.id for t in every]
  print(f"{len(items)} labelled norms: "
        + ", ".join(f"{s} {sum(i.split == s for i in items)}" for s in mq.SPLITS)
        + "; cells are precision recall F1 over (norm, target) pairs; "
        "'worst' is the lowest precision or recall of any target")
  header = "| rule | " + " | ".join(ids) + " | worst |"
  rule_line = "|---" * (len(ids) + 2) + "|"
  results: dict[str, dict[str, dict[str, Score]]] = {s: {} for s in mq.SPLITS}
  fitted: dict[str, MatchRule] = {}
  started = time.perf_counter()
  for tried in mq.TRIED:
    calibration = mq.table(tried.rule, "calibration", embedder=embedder,
                           items=items, targets=targets)
    rule = tried.fitted(calibration)
    fitted[tried.label] = rule
    results["calibration"][tried.label] = calibration.counts(rule)
    results["test"][tried.label] = mq.table(
        rule, "test", embedder=embedder, items=items,
        targets=targets).counts(rule)
  print(f"({time.perf_counter() - started:.1f} s for {len(mq.TRIED)} rules, "
        "both halves)\n")
  print("Thresholds set on the calibration half:")
  for label, rule in fitted.items():
    print(f"- {label}: {_thresholds(rule, every)}")
  for split in ("calibration", "test"):
    print(f"\n{split} half:\n{header}\n{rule_line}")
    for label, counts in results[split].items():
      print("\n".join(_row(label, counts)))

  best = mq.select(fitted, results["calibration"])
  print(f"\nSelected on the calibration half (highest worst precision or "
        f"recall): {best}")
  chosen_test = mq.table(CHOSEN_RULE, "test", embedder=embedder, items=items,
                         targets=targets).counts(CHOSEN_RULE)
  print(f"\nChosen rule: {CHOSEN_RULE.name} (threshold "
        f"{_thresholds(CHOSEN_RULE, every)}), test half:")
  print("| target | precision | recall | F1 | TP | FP | FN |\n|---|---|---|---|---|---|---|")
  for t, s in chosen_test.items():
    print(f"| {t} | {s.precision:.3f} | {s.recall:.3f} | {s.f1:.3f} | "
          f"{s.tp} | {s.fp} | {s.fn} |")
  same = fitted[best] == CHOSEN_RULE
  print(f"matching.CHOSEN_RULE is the selected rule as calibrated: "
        f"{'yes' if same else 'NO'}")
  measured = matcher_error.load_measured()
  shipped = {t: f for t, f in (measured or {}).get("test", {}).items()
             if t in chosen_test}
  if measured is not None and shipped != mq.figures(chosen_test):
    print(f"{mq.QUALITY_PATH.name} is out of date: run "
          "python -m crsec_concordia.metrics.classifiers.matcher_quality --write")

  if args.errors:
    calibration = mq.table(CHOSEN_RULE, "calibration", embedder=embedder,
                           items=items, targets=targets)
    print("\nChosen rule's misses on the calibration half:")
    for t, scores in calibration.scores.items():
      threshold = CHOSEN_RULE.threshold_for(calibration.wording[t])
      for text, score, pos in zip(calibration.texts[t], scores,
                                  calibration.positive[t]):
        if (score >= threshold) != pos:
          print(f"  {'FP' if not pos else 'FN'} {score:.3f} {t}: {text}")

  if args.learned:
    _learned(embedder, items, ids)


def _interval(x: int, n: int) -> str:
  """x/n with its 95% Jeffreys interval."""
  if not n:
    return "- (0/0)"
  low, high = stats.beta.ppf([0.025, 0.975], x + 0.5, n - x + 0.5)
  return f"{x / n:.2f} [{low:.2f}, {high:.2f}] ({x}/{n})"


def _held_out(embedder, items) -> None:
  venues = tuple(mq.HELD_OUT_VENUES)
  targets = {v: mq.venue_targets(v) for v in venues}
  rule = CHOSEN_RULE
  halves = {s: mq.table(rule, s, embedder=embedder, items=items,
                        targets=targets, venues=venues) for s in mq.SPLITS}
  print(f"Chosen rule {rule.name} on the held-out venues ({', '.join(venues)}), "
        "thresholds as shipped; sensitivity and specificity with 95% "
        "Jeffreys intervals")
  print("| target | half | norms | sensitivity | specificity |\n|---|---|---|---|---|")
  for t in halves["test"].scores:
    for label, parts in (("test", ["test"]), ("both", list(mq.SPLITS))):
      hit = np.concatenate([halves[s].scores[t] >= rule.threshold_for(
          halves[s].wording[t]) for s in parts])
      pos = np.concatenate([halves[s].positive[t] for s in parts])
      print(f"| {t} | {label} | {len(pos)} | "
            f"{_interval(int((hit & pos).sum()), int(pos.sum()))} | "
            f"{_interval(int((~hit & ~pos).sum()), int((~pos).sum()))} |")
  print("\nRead wrong (both halves):")
  kinds = {i.text: i.kind for i in items}
  for split, table in halves.items():
    for t, scores in table.scores.items():
      threshold = rule.threshold_for(table.wording[t])
      for text, score, pos in zip(table.texts[t], scores, table.positive[t]):
        if (score >= threshold) != pos:
          print(f"  {'FP' if not pos else 'FN'} {score:.3f} {split} "
                f"{kinds[text]}: {text}")


def _learned(embedder, items, ids) -> None:
  data = ml.venues(embedder, items)
  print(f"\nLearned rules, per target, trained on the calibration half: "
        f"{ml.FOLDS}-fold cross-validation on it ({ml.REPEATS} repeats; cells "
        "precision recall, 'worst' the mean of each repeat's lowest "
        "precision or recall), then fitted on all of it and scored on the "
        "test half:")
  print("| rule | CV worst | " + " | ".join(f"CV {t}" for t in ids)
        + " | test worst | " + " | ".join(f"test {t}" for t in ids) + " |")
  print("|---" * (2 * len(ids) + 3) + "|")
  for label, fit in ml.RULES:
    cv = ml.cross_validate(fit, data)
    test = ml.test_half(fit, data)
    print(f"| {label} | {cv['worst']:.2f} | "
          + " | ".join(f"{p:.2f} {r:.2f}" for p, r in cv["targets"].values())
          + f" | {mq.worst(test):.2f} | "
          + " | ".join(f"{s.precision:.2f} {s.recall:.2f}"
                       for s in test.values()) + " |", flush=True)


if __name__ == "__main__":
  main()

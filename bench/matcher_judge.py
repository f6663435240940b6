"""What the LLM judge adds to the norm matcher, on the labelled test half.

The metrics decide that a personal norm MEANS a target by the chosen
embedding rule (crsec_concordia/metrics/classifiers/matching.py, CHOSEN_RULE); with a
judge (`crsec report --judge`), every (norm, target) pair whose rule score
is at or above JUDGE_FLOOR goes to the language model, whose yes/no
decides (a failed answer leaves the rule's decision). This bench puts the
test half of crsec_concordia/metrics/data/norm_labels.jsonl through both
and prints precision, recall and F1 per target for the rule alone and for
the rule with the judge, how many pairs the judge saw, how often it turned
the rule's decision (right and wrong) and its failed answers. Nothing is
tuned on it: the test half is for the final figures only.

The model is the run's default endpoint (the embedded model unless
CRSEC_BASE_URL and friends say otherwise; `crsec doctor` shows which), one
judge call at a time (two llama.cpp requests at once only share the 2
cores). About 2 to 4 seconds a pair on the embedded model.

  .venv/bin/python bench/matcher_judge.py             # the test half
  .venv/bin/python bench/matcher_judge.py --limit 40  # a first look
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.metrics.classifiers import matcher_quality as mq  # noqa: E402
from crsec_concordia.metrics.classifiers.threshold_search import Score  # noqa: E402
from crsec_concordia.metrics.classifiers.judge import LLMJudge  # noqa: E402
from crsec_concordia.metrics.classifiers.matching import (  # noqa: E402
    CHOSEN_RULE, JUDGE_FLOOR)
from crsec_concordia.models import EndpointConfig, make_model  # noqa: E402


def _counts(decided: list[tuple[str, bool, bool]]) -> dict[str, Score]:
  """(target, decision, label) triples -> a Score per target."""
  out: dict[str, Score] = {}
  for target in dict.fromkeys(t for t, _, _ in decided):
    mine = [(d, p) for t, d, p in decided if t == target]
    out[target] = Score(threshold=0.0,
                        tp=sum(d and p for d, p in mine),
                        fp=sum(d and not p for d, p in mine),
                        fn=sum(p and not d for d, p in mine))
  return out


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--split", choices=mq.SPLITS, default="test")
  parser.add_argument("--limit", type=int, default=None,
                      help="judge at most this many pairs (a first look)")
  args = parser.parse_args(argv)
  endpoint = EndpointConfig.resolve()
  model = make_model(endpoint, seed=1)
  judge = LLMJudge(model)
  embedder = shared_embedder()
  items = [i for i in mq.load_items() if i.split == args.split]

  # (target id, norm text, rule score, rule decision, label) of every pair.
  table = mq.table(CHOSEN_RULE, args.split, embedder=embedder)
  pairs = [(t, text, float(score),
            bool(score >= CHOSEN_RULE.threshold_for(table.wording[t])),
            bool(label))
           for t, scores in table.scores.items()
           for text, score, label in zip(table.texts[t], scores,
                                         table.positive[t])]
  asked = [p for p in pairs if p[2] >= JUDGE_FLOOR]
  if args.limit is not None:
    asked = asked[:args.limit]
  print(f"{len(items)} labelled norms ({args.split} half), {len(pairs)} "
        f"(norm, target) pairs, {len(asked)} at or above the judge floor "
        f"{JUDGE_FLOOR}; model {endpoint.describe()}", flush=True)

  verdicts: dict[tuple[str, str], bool | None] = {}
  started = time.perf_counter()
  for n, (target, text, _, _, _) in enumerate(asked, 1):
    verdicts[(target, text)] = judge(text, table.wording[target])
    if n % 20 == 0 or n == len(asked):
      spent = time.perf_counter() - started
      print(f"  judged {n}/{len(asked)} in {spent:.0f} s "
            f"({spent / n:.1f} s a pair), {judge.failures} failed",
            file=sys.stderr, flush=True)
  spent = time.perf_counter() - started

  judged = set(verdicts)
  scope = [p for p in pairs if (p[0], p[1]) in judged] if args.limit \
      else pairs
  rule = _counts([(t, d, lab) for t, _, _, d, lab in scope])
  with_judge, turned = [], {"right": 0, "wrong": 0}
  for target, text, _, decision, label in scope:
    verdict = verdicts.get((target, text))
    final = decision if verdict is None else verdict
    if final != decision:
      turned["right" if final == label else "wrong"] += 1
    with_judge.append((target, final, label))
  both = _counts(with_judge)

  print(f"\n{len(verdicts)} judge calls in {spent:.0f} s "
        f"({spent / max(1, len(verdicts)):.1f} s each), {judge.failures} "
        f"without a valid answer; the judge turned the rule's decision "
        f"{turned['right']} times rightly, {turned['wrong']} times wrongly"
        + (" (over the judged pairs only: --limit)" if args.limit else ""))
  print("| target | rule P | rule R | rule F1 | +judge P | +judge R | "
        "+judge F1 |\n|---|---|---|---|---|---|---|")
  for t, s in rule.items():
    j = both[t]
    print(f"| {t} | {s.precision:.2f} | {s.recall:.2f} | {s.f1:.2f} | "
          f"{j.precision:.2f} | {j.recall:.2f} | {j.f1:.2f} |")
  print(f"worst precision or recall: rule {mq.worst(rule):.2f}, "
        f"with the judge {mq.worst(both):.2f}")
  return 0


if __name__ == "__main__":
  sys.exit(main())

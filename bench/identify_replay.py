"""IdentifyNorm asked again on the sources a run recorded: what changes?

Every candidate norm in a run's events.jsonl keeps the text it came from
(a conversation, or an agent's thoughts) and the rule IdentifyNorm wrote.
This bench asks today's IdentifyNorm the same question on the same texts
and prints, side by side, the rule recorded and the rule written now, with
how each starts ("No", "People", ...) and how many of each speak of a
word given with --about (e.g. "tip") in the negative. So a prompt change
can be judged on real agents' words in minutes, not by another run of
hours. Any endpoint: CRSEC_BASE_URL / CRSEC_MODEL; by default the embedded
model (one model-backed job at a time).
Usage: .venv/bin/python bench/identify_replay.py RUN_DIR [--limit N]
       [--about WORD ...]
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from crsec_concordia.metrics.classifiers.norm_clauses import has_negation  # noqa: E402
from crsec_concordia.models import EndpointConfig, make_model  # noqa: E402
from crsec_concordia.operations.identify_norm import identify_norm  # noqa: E402

# The origin a candidate record names -> IdentifyNorm's source kind.
SOURCE_KINDS = {"conversation": "conversation", "observation": "thoughts"}


def candidates(run_dir: Path, limit: int, about: list[str]) -> list[dict]:
  """The run's candidate records with a source text: those whose source
  speaks of an --about word first (half at most), then every k-th of the
  rest, `limit` in all, spread over the whole run."""
  records = []
  with (run_dir / "events.jsonl").open() as f:
    for line in f:
      record = json.loads(line)
      if (record.get("kind") == "candidate" and record.get("source_text")
          and record.get("origin") in SOURCE_KINDS):
        records.append(record)
  def speaks_of(record: dict) -> bool:
    return any(w.lower() in record["source_text"].lower() for w in about)
  chosen = [r for r in records if speaks_of(r)][:limit // 2]
  rest = [r for r in records if not speaks_of(r)]
  step = max(1, len(rest) // max(limit - len(chosen), 1))
  chosen += rest[::step][:limit - len(chosen)]
  return sorted(chosen, key=lambda r: (r["step"], r["agent"], r["norm_id"]))


def opening(rule: str | None) -> str:
  return rule.split()[0] if rule else "(none)"


def negative_about(rule: str | None, words: list[str]) -> bool:
  # The metrics' own test of a refusal (norm_clauses), not another regex.
  return bool(rule) and has_negation(rule) and any(
      w.lower() in rule.lower() for w in words)


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("run_dir", type=Path)
  parser.add_argument("--limit", type=int, default=40)
  parser.add_argument("--about", nargs="*", default=[])
  parser.add_argument("--seed", type=int, default=1)
  args = parser.parse_args()
  if not (args.run_dir / "events.jsonl").is_file():
    print(f"identify_replay: {args.run_dir} has no events.jsonl; give a run "
          "directory", file=sys.stderr)
    return 2
  records = candidates(args.run_dir, args.limit, args.about)
  model = make_model(EndpointConfig(), seed=args.seed)
  before, after = collections.Counter(), collections.Counter()
  negative = collections.Counter()
  start = time.monotonic()
  for record in records:
    failures: list = []
    found = identify_norm(model, name=record["agent"],
                          source_kind=SOURCE_KINDS[record["origin"]],
                          source_text=record["source_text"],
                          on_failure=failures.append)
    now = (found["content"] if found else
           ("(failed)" if failures else None))
    old = record["content"]
    before[opening(old)] += 1
    after[opening(now)] += 1
    negative["recorded"] += negative_about(old, args.about)
    negative["now"] += negative_about(now, args.about)
    source = " ".join(record["source_text"].split())[:110]
    print(f"{record['agent']} ({record['origin']}, step {record['step']})\n"
          f"  source:   {source}\n  recorded: {old}\n  now:      {now}")
  print(f"\n{len(records)} sources in {time.monotonic() - start:.0f} s")
  print(f"rule opens with, recorded: {dict(before.most_common())}")
  print(f"rule opens with, now:      {dict(after.most_common())}")
  if args.about:
    print(f"negative rules about {'/'.join(args.about)}: recorded "
          f"{negative['recorded']}, now {negative['now']}")
  return 0


if __name__ == "__main__":
  sys.exit(main())

"""What llama.cpp's draftless speculative decoding buys on a run's own requests.

A run's answers quote what they judge (DetectConflict's and the referee's
evidence) and repeat names and keys, so drafts taken from n-grams already in
the context could be accepted often, and a draft checked in one batch costs
less than the tokens written one by one. Whether it pays depends on the
machine: the checking is extra work, and with several slots busy on few
cores the model has no spare time to spend on it. This replays a run's
requests (the log written with `CRSEC_CALL_LOG=FILE`) against an embedded
server of its own for each setting, in the log's order, `--jobs` at a time,
each answer held to the logged one by a grammar of that text alone (so
every setting writes the same tokens and only the drafting differs), and
prints per operation the tokens written, drafted and accepted, and the wall
time of each pass with its ratio to the first. Compare the settings of one
invocation (the machine's load moves absolute times).

  CRSEC_CALL_LOG=/tmp/calls.jsonl crsec run scenarios/hobbs_cafe.yaml \\
      --seed 1 --steps 12 --no-cache --out /tmp/cafe12
  .venv/bin/python bench/speculative.py /tmp/calls.jsonl \\
      --settings none ngram-simple ngram-mod --tags DetectConflict

Only one model process on the machine at a time: run it alone.
"""

from __future__ import annotations

import argparse
import collections
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import openai

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import call_replay  # noqa: E402
from crsec_concordia.models import embedded  # noqa: E402
from crsec_concordia.models.call_log import read  # noqa: E402

# A pass's figures per request: (tag, written, drafted, accepted, same).
Row = tuple[str, int, int, int, bool]
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def literal_grammar(text: str) -> str:
  """A GBNF grammar whose only sentence is `text`."""
  return 'root ::= "' + "".join(_ESCAPES.get(c, c) for c in text) + '"'


def replay(base_url: str, entries: Sequence[dict[str, Any]], jobs: int
           ) -> tuple[list[Row], float]:
  """Each request's figures in the log's order, and the seconds."""
  client = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0,
                         timeout=3600)

  def one(entry: dict[str, Any]) -> Row:
    response = client.chat.completions.create(
        model="embedded", messages=entry["messages"], max_tokens=4096,
        temperature=0.0, seed=0,
        extra_body={"grammar": literal_grammar(entry["answer"])})
    timings = (response.model_extra or {}).get("timings") or {}
    return (entry["tag"], response.usage.completion_tokens,
            int(timings.get("draft_n", 0)),
            int(timings.get("draft_n_accepted", 0)),
            response.choices[0].message.content == entry["answer"])

  return call_replay.in_order(entries, jobs, one)


def table(passes: dict[str, tuple[list[Row], float]]) -> list[str]:
  """Per operation and setting: written, drafted and accepted tokens."""
  settings = list(passes)
  by_tag: dict[str, dict[str, list[int]]] = collections.defaultdict(
      lambda: {s: [0, 0, 0, 0] for s in settings})
  for s, (rows, _) in passes.items():
    for tag, written, drafted, accepted, _ in rows:
      cell = by_tag[tag][s]
      for i, v in enumerate((1, written, drafted, accepted)):
        cell[i] += v
  lines = [f"{'operation':<22}{'calls':>6}{'written':>9}" + "".join(
      f"{s + ' drafted/accepted':>32}" for s in settings[1:])]
  for tag, cells in sorted(by_tag.items(),
                           key=lambda kv: -kv[1][settings[0]][1]):
    first = cells[settings[0]]
    lines.append(f"{tag:<22}{first[0]:>6}{first[1]:>9}" + "".join(
        f"{f'{cells[s][2]}/{cells[s][3]}':>32}" for s in settings[1:]))
  lines.append(call_replay.wall_line(
      {s: seconds for s, (_, seconds) in passes.items()}, 37, 16))
  return lines


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  call_replay.add_arguments(
      parser, tags="all but the interviews' StatedBelief")
  parser.add_argument("--settings", nargs="+",
                      default=["none", "ngram-simple", "ngram-mod"],
                      help="speculative types to compare, one pass each "
                      "(none: no drafting; the first is the baseline)")
  args = parser.parse_args(argv)
  entries = call_replay.chosen(read(args.log), args,
                               lambda e: bool(e.get("answer")),
                               lambda e: e["tag"] != "StatedBelief")
  if not entries:
    print(f"speculative: no answered requests in {args.log} (--tags "
          f"{' '.join(args.tags) or 'any'}): give a CRSEC_CALL_LOG file",
          file=sys.stderr)
    return 2
  try:  # Every setting checked before the first pass.
    embedded.speculative_types(
        embedded.llama_cpp(), [s for s in args.settings if s != "none"])
  except ValueError as e:
    print(f"speculative: {e}", file=sys.stderr)
    return 2
  passes = {}
  for setting in args.settings:
    server = embedded.EmbeddedServer(embedded.ServerSettings(
        speculative=() if setting == "none" else (setting,))).start()
    try:
      passes[setting] = replay(server.base_url, entries, args.jobs)
    finally:
      server.stop()
    differ = sum(not row[4] for row in passes[setting][0])
    print(f"{setting}: {len(entries)} requests in "
          f"{passes[setting][1]:.0f}s, {differ} answers not as logged",
          flush=True)
  print("\n".join(table(passes)))
  return 0


if __name__ == "__main__":
  sys.exit(main())

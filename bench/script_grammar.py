"""What holding answers to the prompt's scripts in the grammar changes.

A small model trained on much Chinese text sometimes writes a word of an
English quote in Chinese; the answer is then refused after it is written
(models/scripts.py) and asked again, and a quote the model writes so every
time ends as a recorded failure. The embedded model's grammar can hold the
rule while the answer is written instead (`confine_scripts`). This replays
a run's structured requests (the log written with `CRSEC_CALL_LOG=FILE`,
whose lines say how each was asked) against an embedded server of its own,
once as logged and once with the rule in the grammar, each request asked
once with its logged seed and temperature, and prints per operation the
answers refused for their letters or their schema, the answers equal to the
logged ones, the tokens written, and each pass's wall time with its ratio
to the first (the grammar's extra work per token shows there).

  CRSEC_CALL_LOG=/tmp/calls.jsonl crsec run scenarios/hobbs_cafe.yaml \\
      --seed 1 --steps 12 --no-cache --out /tmp/cafe12
  .venv/bin/python bench/script_grammar.py /tmp/calls.jsonl \\
      --tags DetectConflict

Only one model process on the machine at a time: run it alone.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import call_replay  # noqa: E402
from crsec_concordia.models import OpenAICompatibleModel, embedded  # noqa: E402
from crsec_concordia.models.base import StructuredOutputError  # noqa: E402
from crsec_concordia.models.call_log import read  # noqa: E402
from crsec_concordia.models.scripts import foreign_scripts  # noqa: E402

PASSES = {"as logged": False, "scripts in the grammar": True}


@dataclasses.dataclass(frozen=True)
class Outcome:
  """One request's answer in one pass."""
  tag: str
  verdict: str  # "ok", "letters" (another script) or "schema"
  same: bool  # equal to the logged answer
  written: int  # completion tokens


def ask(base_url: str, entry: dict[str, Any], confine: bool) -> Outcome:
  """`entry` asked once as the log says it was, with or without the rule."""
  asked = entry["asked"]
  prompt = entry["messages"][-1]["content"]
  model = OpenAICompatibleModel(
      base_url, "none", embedded.MODEL_NAME, timeout=3600, max_retries=0,
      json_retries=0, schema_mode="grammar", one_line_json=True,
      confine_scripts=confine)
  try:
    value = model.sample_json(
        prompt, asked["schema"], max_tokens=asked["max_tokens"],
        temperature=asked["temperature"], seed=asked["seed"],
        tag=entry["tag"])
  except StructuredOutputError as e:
    try:
      letters = bool(foreign_scripts(json.loads(e.raw), prompt))
    except json.JSONDecodeError:
      letters = False
    return Outcome(entry["tag"], "letters" if letters else "schema", False,
                   written(model))
  try:
    logged = json.loads(entry["answer"])
  except json.JSONDecodeError:
    logged = None
  return Outcome(entry["tag"], "ok", value == logged, written(model))


def written(model: OpenAICompatibleModel) -> int:
  return sum(u["completion_tokens"] for u in model.usage.by_tag().values())


def table(passes: dict[str, tuple[list[Outcome], float]]) -> list[str]:
  """Per operation and pass: answers refused for their letters, for their
  schema, answers as logged, and tokens written."""
  names = list(passes)
  cells: dict[str, dict[str, collections.Counter]] = collections.defaultdict(
      lambda: {n: collections.Counter() for n in names})
  for name, (outcomes, _) in passes.items():
    for o in outcomes:
      cell = cells[o.tag][name]
      cell["calls"] += 1
      cell[o.verdict] += 1
      cell["same"] += o.same
      cell["written"] += o.written
  heads = [f"{n}: letters/schema/same/written" for n in names]
  width = max(len(h) for h in heads) + 2
  lines = [f"{'operation':<22}{'calls':>6}" + "".join(
      f"{h:>{width}}" for h in heads)]
  shown = "{letters}/{schema}/{same}/{written}"
  for tag, by_pass in sorted(cells.items()):
    lines.append(f"{tag:<22}{by_pass[names[0]]['calls']:>6}" + "".join(
        f"{shown.format_map(by_pass[n]):>{width}}" for n in names))
  lines.append(call_replay.wall_line(
      {n: seconds for n, (_, seconds) in passes.items()}, 28, width))
  return lines


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  call_replay.add_arguments(parser, tags="all")
  args = parser.parse_args(argv)
  entries = call_replay.chosen(
      read(args.log), args, lambda e: bool((e.get("asked") or {}).get(
          "schema")))
  if not entries:
    print(f"script_grammar: no structured request that says how it was "
          f"asked in {args.log} (--tags {' '.join(args.tags) or 'any'}): "
          "give a CRSEC_CALL_LOG file written by this version", file=sys.stderr)
    return 2
  passes = {}
  for name, confine in PASSES.items():
    server = embedded.EmbeddedServer(embedded.ServerSettings()).start()
    try:
      passes[name] = call_replay.in_order(
          entries, args.jobs,
          lambda e, c=confine: ask(server.base_url, e, c))
    finally:
      server.stop()
    print(f"{name}: {len(entries)} requests in {passes[name][1]:.0f}s",
          flush=True)
  print("\n".join(table(passes)))
  return 0


if __name__ == "__main__":
  sys.exit(main())

"""What the embedded server's chunk reuse buys on a run's own requests.

`bench/prompt_reuse.py` shows that most of what a run's prompts lose is
lost early: an act prompt's window of recent events starts a slot later
each time, so the prefix the server reuses ends where that window begins,
though most of the events after it were read before. llama.cpp can reuse
such later chunks too (`n_cache_reuse`: cached chunks of at least N tokens
moved into place instead of read again). This replays a run's requests
(the log written with `CRSEC_CALL_LOG=FILE`) against an embedded server of
its own for each setting, in the log's order, `--jobs` at a time, each
asking for a single token (the prompt is what is measured, and the settings
then do the same work), and prints per operation the prompt tokens the
server reused and the wall time of each pass. Compare the settings of one
invocation (the machine's load moves absolute times).

  CRSEC_CALL_LOG=/tmp/calls.jsonl crsec run scenarios/hobbs_cafe.yaml \\
      --seed 1 --steps 12 --no-cache --out /tmp/cafe12
  .venv/bin/python bench/cache_reuse.py /tmp/calls.jsonl --reuse 0 256

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
from crsec_concordia.models.wire import reused_prompt_tokens  # noqa: E402


def replay(base_url: str, entries: Sequence[dict[str, Any]], jobs: int
           ) -> tuple[list[tuple[str, int, int]], float]:
  """[(tag, prompt tokens, reused)] in the log's order, and the seconds."""
  client = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0,
                         timeout=600)

  def one(entry: dict[str, Any]) -> tuple[str, int, int]:
    response = client.chat.completions.create(
        model="embedded", messages=entry["messages"], max_tokens=1,
        temperature=0.0, seed=0)
    return (entry["tag"], response.usage.prompt_tokens,
            reused_prompt_tokens(response))

  return call_replay.in_order(entries, jobs, one)


def table(passes: dict[int, tuple[list[tuple[str, int, int]], float]]
          ) -> list[str]:
  """Per operation, each setting's reused share of the prompt tokens."""
  settings = list(passes)
  by_tag: dict[str, dict[int, list[int]]] = collections.defaultdict(
      lambda: {s: [0, 0, 0] for s in settings})
  for s, (results, _) in passes.items():
    for tag, prompt, reused in results:
      cell = by_tag[tag][s]
      cell[0] += 1
      cell[1] += prompt
      cell[2] += reused
  head = f"{'operation':<22}{'calls':>6}{'prompt':>9}" + "".join(
      f"{'reuse ' + str(s):>12}" for s in settings)
  lines = [head]
  rows = sorted(by_tag.items(), key=lambda kv: -kv[1][settings[0]][1])
  total = {s: [0, 0, 0] for s in settings}
  for tag, cells in rows:
    first = cells[settings[0]]
    lines.append(f"{tag:<22}{first[0]:>6}{first[1]:>9}" + "".join(
        f"{cells[s][2] / max(1, cells[s][1]):>12.0%}" for s in settings))
    for s in settings:
      total[s] = [a + b for a, b in zip(total[s], cells[s])]
  first = total[settings[0]]
  lines.append(f"{'all':<22}{first[0]:>6}{first[1]:>9}" + "".join(
      f"{total[s][2] / max(1, total[s][1]):>12.0%}" for s in settings))
  lines.append(f"{'wall seconds':<37}" + "".join(
      f"{passes[s][1]:>12.0f}" for s in settings))
  return lines


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  call_replay.add_arguments(parser)
  parser.add_argument("--reuse", type=int, nargs="+", default=[0, 256],
                      help="n_cache_reuse settings to compare (0: prefix "
                      "only)")
  args = parser.parse_args(argv)
  entries = call_replay.chosen(read(args.log), args, lambda e: True)
  if not entries:
    print(f"cache_reuse: no requests in {args.log}", file=sys.stderr)
    return 2
  passes = {}
  for setting in args.reuse:
    server = embedded.EmbeddedServer(
        embedded.ServerSettings(n_cache_reuse=setting)).start()
    try:
      passes[setting] = replay(server.base_url, entries, args.jobs)
    finally:
      server.stop()
    print(f"n_cache_reuse {setting}: {len(entries)} requests in "
          f"{passes[setting][1]:.0f}s", flush=True)
  print("\n".join(table(passes)))
  return 0


if __name__ == "__main__":
  sys.exit(main())

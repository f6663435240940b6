"""Long prompts at once on the embedded server: is any given up while the
server works on it?

A run's end question sends four prompts of about 3k tokens at once, which
on 2 cores take minutes each, longer than the client's timeout. This
bench sends `--prompts` such prompts at once with a short `--timeout` and
no retry, and prints each request's seconds, whether it was answered and
how many times it went out; with `--fixed` the client does not read the
server's `/slots` (a fixed timeout, as before models/server_progress.py),
so the two can be set side by side. Starts its own embedded server: run
nothing else model-backed beside it (about 5 minutes at the defaults).
Usage: .venv/bin/python bench/server_wait.py [--timeout S] [--prompts N]
       [--sentences K] [--fixed]
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from crsec_concordia.models import chat_post, embedded, server_progress  # noqa: E402


def long_prompt(n: int, sentences: int) -> str:
  """A prompt of about 20 tokens a sentence, its own from the first words
  (so the server's cache cannot share one prompt's reading with another)."""
  lines = [f"Traveller {n} passed house {k} of street {n} and saw a cat."
           for k in range(sentences)]
  return f"Record {n}.\n" + "\n".join(lines) + "\nSay in one sentence what it saw."


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--timeout", type=float, default=60.0)
  parser.add_argument("--prompts", type=int, default=4)
  parser.add_argument("--sentences", type=int, default=180,
                      help="the prompt's length (about 20 tokens each)")
  parser.add_argument("--fixed", action="store_true",
                      help="do not read /slots: a fixed timeout")
  args = parser.parse_args()
  server = embedded.shared_server(print)
  watch = None if args.fixed else server_progress.SlotsWatch(server.base_url)
  poster = chat_post.ChatPoster(server.base_url, "none", timeout=args.timeout,
                                max_retries=0, trust_env=False, progress=watch)
  said: dict[int, str] = {}

  def ask(n: int) -> None:
    start = time.monotonic()
    try:
      answer = poster.post({
          "model": embedded.MODEL_NAME, "max_tokens": 60, "temperature": 0.0,
          "messages": [{"role": "user",
                        "content": long_prompt(n, args.sentences)}]})
      tokens = answer.get("usage", {}).get("prompt_tokens")
      said[n] = (f"answered after {time.monotonic() - start:.0f} s, "
                 f"{tokens} prompt tokens, sent {poster.last_sends()} time(s)")
    except Exception as e:  # noqa: BLE001 - the bench reports any failure.
      said[n] = (f"given up after {time.monotonic() - start:.0f} s "
                 f"({type(e).__name__})")
  threads = [threading.Thread(target=ask, args=(n,))
             for n in range(args.prompts)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  mode = "fixed timeout" if args.fixed else "waits while /slots move"
  print(f"{args.prompts} prompts at once, --timeout {args.timeout:.0f} s, "
        f"{mode}:")
  for n in sorted(said):
    print(f"  prompt {n}: {said[n]}")
  return 0


if __name__ == "__main__":
  sys.exit(main())

"""CPU per request of the local endpoint's posts, http.client and ours.

models/plain_http.py posts each request to a plain `http://` endpoint on
a connection kept per thread. This bench posts a 1.2 kB chat request to
society_scaling.py's fake server (a process of its own, no latency) in a
loop on one thread, several ways in alternating rounds so that a change
in the machine's load falls on each alike: `http.client` on a kept
connection (what plain_http.py replaced), plain_http.py now, and
plain_http.py as it stood at each `--rev` (loaded from git; by default
the commit where h11 framed the request and read the answer). It prints
each way's median over the rounds of this process's CPU microseconds per
request.

  .venv/bin/python bench/post_cpu.py [--posts 500] [--rounds 5] [--rev REV]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import time
import types
import urllib.parse
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crsec_concordia.models import plain_http  # noqa: E402
from society_scaling import start_fake_server, stop_fake_server  # noqa: E402  (bench/)

# The commit whose plain_http.py used h11 (docs/measurements.md).
H11_REV = "c8e35bf"
HEADERS = {"Authorization": "Bearer k", "Content-Type": "application/json",
           "Accept": "application/json"}


def _body() -> bytes:
  """A chat request of about 1.3 kB, as an agent's act sends."""
  text = "You are at the market square. " * 36
  return json.dumps({"model": "m", "temperature": 0, "messages": [
      {"role": "user", "content": text}]}).encode()


def _at(rev: str) -> types.ModuleType:
  """plain_http.py as it stood at `rev`."""
  source = subprocess.run(
      ["git", "-C", str(ROOT), "show",
       f"{rev}:crsec_concordia/models/plain_http.py"],
      check=True, capture_output=True, text=True).stdout
  module = types.ModuleType(f"plain_http_{rev}")
  code = compile(source, f"{rev}:plain_http.py", "exec")
  exec(code, module.__dict__)  # pylint: disable=exec-used
  return module


def _with_http_client(url: str) -> Callable[[bytes], int]:
  parts = urllib.parse.urlsplit(url)
  connection = http.client.HTTPConnection(parts.hostname, parts.port,
                                          timeout=10)

  def post(body: bytes) -> int:
    connection.request("POST", parts.path, body=body, headers=HEADERS)
    response = connection.getresponse()
    response.read()
    return response.status
  return post


def _with_kept(module: types.ModuleType, url: str) -> Callable[[bytes], int]:
  kept = module.KeptConnections(url, timeout=10)
  return lambda body: kept.post(body, HEADERS)[0]


def _cpu_per_post(post: Callable[[bytes], int], body: bytes,
                  posts: int) -> float:
  """Microseconds of this process's CPU per post."""
  assert post(body) == 200  # The connection opened outside the count.
  start = time.process_time()
  for _ in range(posts):
    post(body)
  return (time.process_time() - start) / posts * 1e6


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--posts", type=int, default=500,
                      help="posts per way per round")
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--rev", action="append",
                      help="a commit whose plain_http.py to compare "
                      f"(repeatable; default {H11_REV}, h11's)")
  args = parser.parse_args()
  server, base_url = start_fake_server(0.0)
  url = base_url + "/chat/completions"
  try:
    ways = {"http.client": _with_http_client(url),
            "plain_http now": _with_kept(plain_http, url)}
    for rev in args.rev or [H11_REV]:
      ways[f"plain_http {rev}"] = _with_kept(_at(rev), url)
    body = _body()
    figures: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.rounds):
      for name, post in ways.items():
        figures[name].append(_cpu_per_post(post, body, args.posts))
  finally:
    stop_fake_server(server)
  print(f"{len(body)}-byte request, {args.posts} posts a way a round, "
        f"{args.rounds} rounds; CPU microseconds per request:")
  for name, values in figures.items():
    print(f"  {name:>20}: median {statistics.median(values):6.0f}  "
          f"(rounds: {', '.join(f'{v:.0f}' for v in values)})")
  return 0


if __name__ == "__main__":
  sys.exit(main())

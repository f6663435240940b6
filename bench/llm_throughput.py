"""How fast is the embedded model, alone and with 4 requests at a time?

Concordia runs an entity's components in parallel threads, and the embedded
llama.cpp server has 4 slots, so what a run gets out of the CPU depends on
how much concurrent requests share it. This measures completion tokens per
second and calls per second with 1 and with 4 concurrent requests, over the
same short prompts (temperature 0, fixed seed, response cache off), through
`OpenAICompatibleModel` exactly as a run calls it.

Usage: .venv/bin/python bench/llm_throughput.py [--max-tokens 64] [--budget 75]
       [--slots N] [--concurrency 1 4 8]  (another slot count: a server of
       its own with N slots, to choose the embedded server's)
Runs in about a minute on 2 idle cores. Another busy process makes the
figures collapse (llama.cpp's threads wait for each other), so each pass also
reports the CPU share other processes took meanwhile.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import os
import statistics
import sys
import time

from crsec_concordia.models import OpenAICompatibleModel, embedded

# Short prompts whose answers run past --max-tokens, so every call produces
# the same number of tokens and the two settings do the same work.
PROMPTS = (
    "Describe a quiet café in the morning in a few sentences.",
    "Explain why people should not smoke inside a café.",
    "Write a short note asking guests to keep their voices down.",
    "Describe the smell of fresh coffee and pastries.",
    "Explain the custom of tipping the staff after a meal.",
    "Describe a barista preparing three drinks at once.",
    "Write a friendly reminder to clear your own table.",
    "Describe a rainy afternoon seen from a café window.",
    "Explain how a café owner might settle a quarrel between two guests.",
    "Describe a regular customer and their usual order.",
)

# Unrelated prompts run on all slots before each measurement, so neither
# setting finds its prompts already read into a slot by the other.
FLUSH = ("List four colours.", "Name four rivers.", "Name four trees.",
         "List four fruits.")


@dataclasses.dataclass
class Result:
  concurrency: int
  calls: int
  completion_tokens: int
  seconds: float
  latencies: list[float]
  others_share: float | None  # CPU used by other processes meanwhile.

  @property
  def tokens_per_second(self) -> float:
    return self.completion_tokens / self.seconds

  @property
  def calls_per_second(self) -> float:
    return self.calls / self.seconds


def _machine_busy_seconds() -> float | None:
  """CPU seconds spent by all processes since boot (Linux), or None."""
  try:
    with open("/proc/stat") as f:
      values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle, iowait
    return (sum(values) - idle) / os.sysconf("SC_CLK_TCK")
  except (OSError, ValueError, IndexError):
    return None


def _own_seconds() -> float:
  # The llama.cpp server runs in this process, so this counts it too.
  t = os.times()
  return t.user + t.system


class OthersMeter:
  """How much of the CPUs other processes used while we measured.

  The load average lags by minutes and cannot tell whose load it is; here
  the machine's busy time minus this process's is divided by the capacity.
  """

  def __enter__(self) -> "OthersMeter":
    self._start = (time.monotonic(), _machine_busy_seconds(), _own_seconds())
    self.share: float | None = None
    return self

  def __exit__(self, *exc) -> None:
    wall0, busy0, own0 = self._start
    busy1 = _machine_busy_seconds()
    if busy0 is None or busy1 is None:
      return
    capacity = (time.monotonic() - wall0) * (os.cpu_count() or 1)
    others = (busy1 - busy0) - (_own_seconds() - own0)
    self.share = max(0.0, others / capacity) if capacity else None


def _timed_call(model: OpenAICompatibleModel, prompt: str, max_tokens: int,
                deadline: float) -> float | None:
  """Seconds for one call, or None if the pass ran out of time before it."""
  start = time.monotonic()
  if start > deadline:
    return None
  model.sample_text(prompt, max_tokens=max_tokens, temperature=0.0)
  return time.monotonic() - start


def _flush(model: OpenAICompatibleModel) -> None:
  with concurrent.futures.ThreadPoolExecutor(len(FLUSH)) as pool:
    list(pool.map(lambda p: model.sample_text(p, max_tokens=4,
                                              temperature=0.0), FLUSH))


def measure(base_url: str, concurrency: int, max_tokens: int,
            budget: float) -> Result:
  """One pass over PROMPTS with `concurrency` requests in flight.

  Calls not started within `budget` seconds are skipped, so a machine slowed
  down by other work gives a short run with fewer calls, not a stuck one.
  """
  # A fresh model per pass: its usage meter then counts this pass only.
  model = OpenAICompatibleModel(base_url, "none", embedded.MODEL_NAME,
                                seed=1, cache=None, timeout=300)
  _flush(model)
  flushed = model.usage.totals()["completion_tokens"]
  start = time.monotonic()
  deadline = start + budget
  with OthersMeter() as others, concurrent.futures.ThreadPoolExecutor(
      concurrency) as pool:
    timed = list(pool.map(
        lambda p: _timed_call(model, p, max_tokens, deadline), PROMPTS))
  seconds = time.monotonic() - start
  latencies = [t for t in timed if t is not None]
  totals = model.usage.totals()
  assert totals["failed_calls"] == 0, totals
  return Result(concurrency, len(latencies),
                totals["completion_tokens"] - flushed, seconds, latencies,
                others.share)


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--max-tokens", type=int, default=64,
                      help="tokens per answer (default 64)")
  parser.add_argument("--budget", type=float, default=75.0,
                      help="seconds per pass before skipping the remaining "
                      "calls (default 75; an idle machine needs about 20)")
  parser.add_argument("--slots", type=int, default=None,
                      help="server slots (default: the embedded server's, "
                      f"{embedded.ServerSettings().n_parallel})")
  parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4],
                      help="requests in flight in each pass (default 1 4)")
  args = parser.parse_args(argv)

  with OthersMeter() as before:
    time.sleep(1.0)
  if before.share is not None and before.share > 0.25:
    print(f"warning: other processes use {before.share:.0%} of the CPUs: "
          "the figures will be low and noisy.", flush=True)
  start = time.monotonic()
  progress = lambda m: print(f"  {m}", flush=True)
  server = (embedded.EmbeddedServer(embedded.ServerSettings(
      n_parallel=args.slots)).start(progress) if args.slots
            else embedded.shared_server(progress))
  print(f"embedded model ready in {time.monotonic() - start:.1f}s "
        f"({server.settings.n_parallel} slots, {server.settings.threads} "
        f"threads, {os.cpu_count()} CPUs)", flush=True)

  # Warm-up: the first requests pay for allocating buffers and slots.
  warm = OpenAICompatibleModel(server.base_url, "none", embedded.MODEL_NAME,
                               seed=1, timeout=300)
  warm.sample_text(PROMPTS[0], max_tokens=16, temperature=0.0)
  _flush(warm)

  results = []
  for concurrency in args.concurrency:
    print(f"measuring {len(PROMPTS)} calls, {concurrency} at a time...",
          flush=True)
    results.append(measure(server.base_url, concurrency, args.max_tokens,
                           args.budget))

  print()
  print(f"{'concurrent':>10} {'calls':>6} {'tokens':>7} {'seconds':>8} "
        f"{'tokens/s':>9} {'calls/s':>8} {'latency s':>10} {'others':>7}")
  for r in results:
    others = "?" if r.others_share is None else f"{r.others_share:.0%}"
    print(f"{r.concurrency:>10} {r.calls:>6} {r.completion_tokens:>7} "
          f"{r.seconds:>8.1f} {r.tokens_per_second:>9.1f} "
          f"{r.calls_per_second:>8.3f} {statistics.mean(r.latencies):>10.2f} "
          f"{others:>7}")
  one = results[0]
  print()
  for other in results[1:]:
    print(f"{other.concurrency}-concurrent / {one.concurrency}-concurrent: "
          f"tokens/s x{other.tokens_per_second / one.tokens_per_second:.2f}, "
          f"calls/s x{other.calls_per_second / one.calls_per_second:.2f}")
  if any(r.calls < len(PROMPTS) for r in results):
    print(f"warning: a pass ran out of its {args.budget:.0f}s budget and "
          "skipped calls.")
  disturbed = [r.concurrency for r in results
               if r.others_share is not None and r.others_share > 0.1]
  if disturbed:
    print(f"warning: other processes used over 10% of the CPUs during the "
          f"{' and '.join(map(str, disturbed))}-concurrent pass: rerun on a "
          "quiet machine before trusting the ratio.")
  print(f"total {time.monotonic() - start:.0f}s ('others': CPU share used by "
        "other processes during the pass)")
  return 0


if __name__ == "__main__":
  sys.exit(main())

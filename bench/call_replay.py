"""A run's logged requests sent again, in the log's order, a few at a time.

The benches that compare server settings on a run's own requests
(bench/cache_reuse.py, bench/speculative.py) share this: the log written with
`CRSEC_CALL_LOG=FILE`, at most `--jobs` requests in flight as the run had
them (the server's slots), and optionally only its first `--limit`.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from crsec_concordia.models import embedded

T = TypeVar("T")


def add_arguments(parser: argparse.ArgumentParser,
                  tags: str | None = None) -> None:
  """The log and how it is sent: `log`, `--jobs`, `--limit`, and with
  `tags` (its help: which operations by default) `--tags`."""
  parser.add_argument("log", help="a run's request log (CRSEC_CALL_LOG)")
  parser.add_argument("--jobs", type=int,
                      default=embedded.ServerSettings().n_parallel,
                      help="requests in flight (the server's slots)")
  parser.add_argument("--limit", type=int, default=0,
                      help="only the first N requests")
  if tags is not None:
    parser.add_argument("--tags", nargs="*", default=[],
                        help=f"only these operations (default: {tags})")


def chosen(entries: Iterable[dict[str, Any]], args: argparse.Namespace,
           fits: Callable[[dict[str, Any]], bool],
           by_default: Callable[[dict[str, Any]], bool] = lambda e: True
           ) -> list[dict[str, Any]]:
  """The entries that `fits`, of `--tags` (or `by_default` without it),
  the first `--limit` of them."""
  tags = getattr(args, "tags", None)
  out = [e for e in entries if fits(e)
         and (e["tag"] in tags if tags else by_default(e))]
  return out[:args.limit] if args.limit else out


def in_order(entries: Sequence[dict[str, Any]], jobs: int,
             one: Callable[[dict[str, Any]], T]) -> tuple[list[T], float]:
  """`one` of each entry, `jobs` at a time, and the seconds it all took."""
  start = time.monotonic()
  with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
    # map() submits in order: the server sees the requests as the run sent
    # them, `jobs` in flight.
    results = list(pool.map(one, entries))
  return results, time.monotonic() - start


def wall_line(seconds: Mapping[str, float], label: int, width: int) -> str:
  """Each pass's wall seconds with its ratio to the first, in columns."""
  base = next(iter(seconds.values()))
  return f"{'wall seconds (ratio)':<{label}}" + "".join(
      f"{f'{s:.0f} ({s / base:.2f})':>{width}}" for s in seconds.values())

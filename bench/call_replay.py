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
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from crsec_concordia.models import embedded

T = TypeVar("T")


def add_arguments(parser: argparse.ArgumentParser) -> None:
  """The log and how it is sent: `log`, `--jobs`, `--limit`."""
  parser.add_argument("log", help="a run's request log (CRSEC_CALL_LOG)")
  parser.add_argument("--jobs", type=int,
                      default=embedded.ServerSettings().n_parallel,
                      help="requests in flight (the server's slots)")
  parser.add_argument("--limit", type=int, default=0,
                      help="only the first N requests")


def in_order(entries: Sequence[dict[str, Any]], jobs: int,
             one: Callable[[dict[str, Any]], T]) -> tuple[list[T], float]:
  """`one` of each entry, `jobs` at a time, and the seconds it all took."""
  start = time.monotonic()
  with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
    # map() submits in order: the server sees the requests as the run sent
    # them, `jobs` in flight.
    results = list(pool.map(one, entries))
  return results, time.monotonic() - start

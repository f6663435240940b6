"""KeptThreads: Concordia's `run_tasks` on threads kept from one slot to the next.

Concordia's `concurrency.run_tasks` makes a thread pool per call. A pool
starts its threads one at a time, and each start waits until the new
thread runs, while the threads already started hold the GIL on their way to
their model calls; kept threads only have to wake up. What runs, and the
results, are the same (the measurements:
docs/trials/acting-and-planning.md#a-society-that-acts-at-once).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent import futures
from typing import TypeVar

from concordia.utils import concurrency

_T = TypeVar("_T")


def run_tasks(tasks: Mapping[str, Callable[[], _T]], parallel: bool = True
              ) -> Mapping[str, _T]:
  """`concurrency.run_tasks(tasks)`, but a single task (or any, with
  `parallel` off) runs in this thread: a pool for one task costs a thread
  start, under the GIL, on a path every agent takes every slot."""
  if parallel and len(tasks) > 1:
    return concurrency.run_tasks(tasks)
  return {key: task() for key, task in tasks.items()}


class KeptThreads:
  """A pool that grows to the largest batch it has run and keeps its threads."""

  def __init__(self, name: str):
    self._name = name
    self._lock = threading.Lock()
    self._pool: futures.ThreadPoolExecutor | None = None
    self._size = 0

  def _executor(self, count: int) -> futures.ThreadPoolExecutor:
    with self._lock:
      if self._pool is None or self._size < count:
        if self._pool is not None:
          self._pool.shutdown(wait=False)  # Its threads end when idle.
        self._pool = futures.ThreadPoolExecutor(
            max_workers=count, thread_name_prefix=self._name)
        self._size = count
      return self._pool

  def start(self, count: int) -> None:
    """Starts `count` threads now (before the first slot, say)."""
    if count < 1:
      return
    barrier = threading.Barrier(count)

    def wait() -> None:
      try:
        barrier.wait(timeout=5.0)
      except threading.BrokenBarrierError:
        pass  # Only a head start: the run goes on without it.

    self.run_tasks({f"{i:05d}": wait for i in range(count)})

  def run_tasks(self, tasks: Mapping[str, Callable[[], _T]]
                ) -> Mapping[str, _T]:
    """`concurrency.run_tasks(tasks)`, every task on a thread of its own.

    Not for tasks that wait on other tasks of the same call's pool: there
    is a thread for every task, so none waits for a free one.
    """
    if not tasks:
      return {}
    return concurrency.run_tasks(tasks, executor=self._executor(len(tasks)))

  def close(self) -> None:
    """Lets the threads end (a later `run_tasks` makes new ones)."""
    with self._lock:
      pool, self._pool, self._size = self._pool, None, 0
    if pool is not None:
      pool.shutdown(wait=False)

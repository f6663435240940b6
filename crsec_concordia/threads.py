"""Bounded thread pools for work that waits on the model.

Concordia's `concurrency.run_tasks` makes a thread pool per call, with a
thread for every task: a thousand agents are a thousand threads, each
holding a connection and a stack while it waits for a request slot the
endpoint does not have. Every pool here has at most `workers` threads,
sized by the endpoint's capacity (`workers_for`: the requests the model
may have in flight, twice over, so that a worker's Python between two
calls leaves no request slot idle), and the tasks beyond wait in the
pool's queue. No task here waits on another task of its own pool, so a
bounded pool cannot deadlock; the results are the same whatever the order.
The process's threads are then the agents' (KeptThreads, sized by the
endpoint), the background pool's and the helpers' (`run_tasks`), both of
a fixed size: bounded by the endpoint's capacity plus a constant, whatever
the number of agents or places.

KeptThreads keeps its threads from one slot to the next: a pool starts its
threads one at a time, and each start waits until the new thread runs,
while the threads already started hold the GIL on their way to their model
calls; kept threads only have to wake up (the measurements:
docs/trials/acting-and-planning.md#a-society-that-acts-at-once).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping
from concurrent import futures
from typing import Any, TypeVar

from concordia.utils import concurrency

_T = TypeVar("_T")

# The threads of one pool when the model says nothing of its capacity (a
# scripted model, a Concordia LanguageModel): a bound, not a tuning.
DEFAULT_WORKERS = 64


def workers_for(model: Any) -> int:
  """Threads for a batch of tasks that call `model`: twice the requests it
  may have in flight (`max_in_flight`), else DEFAULT_WORKERS."""
  bound = getattr(model, "max_in_flight", None)
  return 2 * int(bound) if bound else DEFAULT_WORKERS


def run_tasks(tasks: Mapping[str, Callable[[], _T]], parallel: bool = True,
              workers: int = DEFAULT_WORKERS) -> Mapping[str, _T]:
  """Runs `tasks` at once on this thread and at most `workers - 1` of the
  process's HELPERS (`Helpers.run`), or all in this thread when there is
  one task, `parallel` is off, or no helper is free. The results, by key,
  are the same either way."""
  if parallel and len(tasks) > 1 and workers > 1:
    return _helpers.run(tasks, min(workers, len(tasks)) - 1)
  return {key: task() for key, task in tasks.items()}


# The helper threads of the whole process: a bound, not a tuning.
HELPERS = DEFAULT_WORKERS


class Helpers:
  """Threads that lend a hand to whoever runs tasks, HELPERS in all.

  Concordia's `concurrency.run_tasks` starts a pool for each call: every
  agent's components that ask the model at once started threads of their
  own, hundreds in a society of a thousand, each start a hand-over of the
  GIL. Here the caller borrows the helpers that are free (never waiting for
  one) and works through the tasks beside them, so the process has at most
  HELPERS such threads, however many agents call at once, and none waits
  for a thread: a task that runs tasks of its own borrows in turn, or runs
  them itself.
  """

  def __init__(self, size: int):
    self._free = threading.Semaphore(size)
    self._pool = futures.ThreadPoolExecutor(max_workers=size,
                                            thread_name_prefix="Helper")

  def run(self, tasks: Mapping[str, Callable[[], _T]], wanted: int
          ) -> dict[str, _T]:
    """Every task's result by key; after a task raises, no task starts
    and the error of the first such task (by key) is raised once the
    started ones are done."""
    waiting = list(reversed(list(tasks)))
    results: dict[str, _T] = {}
    errors: dict[str, BaseException] = {}
    lock = threading.Condition()
    lent = 0

    def work() -> None:
      while True:
        with lock:
          if errors or not waiting:
            return
          key = waiting.pop()
        try:
          value = tasks[key]()
        except BaseException as e:  # pylint: disable=broad-except
          with lock:
            errors[key] = e
        else:
          with lock:
            results[key] = value

    def helper() -> None:
      nonlocal lent
      try:
        work()
      finally:
        self._free.release()
        with lock:
          lent -= 1
          lock.notify_all()

    while lent < wanted and self._free.acquire(blocking=False):
      lent += 1
    for _ in range(lent):
      self._pool.submit(helper)
    work()
    with lock:
      while lent:
        lock.wait()
    if errors:
      raise errors[min(errors)]
    return {key: results[key] for key in tasks}


_helpers = Helpers(HELPERS)


class KeptThreads:
  """A pool that grows to the largest batch it has run, up to `limit`
  threads, and keeps its threads."""

  def __init__(self, name: str, limit: int = DEFAULT_WORKERS):
    self._name = name
    self._limit = max(1, limit)
    self._lock = threading.Lock()
    self._pool: futures.ThreadPoolExecutor | None = None
    self._size = 0

  @property
  def limit(self) -> int:
    return self._limit

  def _executor(self, count: int) -> futures.ThreadPoolExecutor:
    count = min(count, self._limit)
    with self._lock:
      if self._pool is None or self._size < count:
        if self._pool is not None:
          self._pool.shutdown(wait=False)  # Its threads end when idle.
        self._pool = futures.ThreadPoolExecutor(
            max_workers=count, thread_name_prefix=self._name)
        self._size = count
      return self._pool

  def start(self, count: int) -> None:
    """Starts `count` threads (at most the limit) now (before the first
    slot, say)."""
    count = min(count, self._limit)
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
    """`concurrency.run_tasks(tasks)` on the kept threads; tasks beyond
    the limit wait for a free thread (so none may wait on another task of
    the same call)."""
    if not tasks:
      return {}
    return concurrency.run_tasks(tasks, executor=self._executor(len(tasks)))

  def close(self) -> None:
    """Lets the threads end (a later `run_tasks` makes new ones)."""
    with self._lock:
      pool, self._pool, self._size = self._pool, None, 0
    if pool is not None:
      pool.shutdown(wait=False)


class Background:
  """Work handed to the shared background pool; `join` waits for it."""

  def __init__(self, future: futures.Future):
    self._future = future

  def join(self) -> None:
    futures.wait([self._future])

  def done(self) -> bool:
    return self._future.done()


_background: futures.ThreadPoolExecutor | None = None
_background_lock = threading.Lock()


def background(fn: Callable[[], None]) -> Background:
  """Runs `fn` on a pool of DEFAULT_WORKERS threads shared by the process
  (a component's work that outlives the hook that starts it, such as a
  ConflictDetector's detection): a thread per agent no more. `fn` must
  handle its own errors, and must not wait on other background work."""
  global _background  # pylint: disable=global-statement
  with _background_lock:
    if _background is None:
      _background = futures.ThreadPoolExecutor(
          max_workers=DEFAULT_WORKERS, thread_name_prefix="Background")
    return Background(_background.submit(fn))


class Permits:
  """At most `count` holders at once (`with permits:`), as a bounded
  semaphore, in C.

  `threading.BoundedSemaphore` is Python around a Condition: each take and
  return of a request slot ran its lines under the GIL, and each waiter
  made a lock of its own, for every model call of every agent. Here the
  permits are tokens in a `queue.SimpleQueue` (C): taking one is a
  blocking `get` (the GIL released while it waits), giving it back a
  `put`. Which waiter gets a freed permit is the system's choice, as with
  the semaphore; nothing here depends on it.
  """

  def __init__(self, count: int):
    if count < 1:
      raise ValueError("Permits needs a count of at least 1")
    self.count = count
    self._tokens: queue.SimpleQueue[None] = queue.SimpleQueue()
    for _ in range(count):
      self._tokens.put(None)

  @property
  def free(self) -> int:
    """The permits no one holds now."""
    return self._tokens.qsize()

  def __enter__(self) -> None:
    self._tokens.get()

  def __exit__(self, *exc_info: Any) -> None:
    self._tokens.put(None)


"""crsec_concordia.threads: tasks run at once on a bounded set of helpers.

What the engine relies on: every task's result by key whatever thread ran
it, tasks that wait on the model overlapping, a task's error raised after
the others started are done, and the process's helper threads never more
than HELPERS however many callers run tasks at once, nested or not.
"""

from __future__ import annotations

import threading
import time

import pytest

from crsec_concordia import threads


def test_results_by_key_in_parallel_and_in_this_thread():
  tasks = {f"{i:03d}": (lambda i=i: i * i) for i in range(50)}
  want = {k: int(k) ** 2 for k in tasks}
  assert dict(threads.run_tasks(tasks)) == want
  assert dict(threads.run_tasks(tasks, parallel=False)) == want
  assert list(threads.run_tasks(tasks)) == list(tasks)


def test_tasks_that_wait_overlap():
  meet = threading.Barrier(3, timeout=10)
  done = threads.run_tasks({k: meet.wait for k in "abc"})
  assert sorted(done.values()) == [0, 1, 2]


def test_the_first_error_by_key_is_raised_after_the_started_tasks():
  finished = []

  def slow_ok():
    time.sleep(0.05)
    finished.append("ok")
    return 1

  def fails(name):
    raise ValueError(name)

  with pytest.raises(ValueError, match="b"):
    threads.run_tasks({"a": slow_ok, "b": lambda: fails("b"),
                       "c": lambda: fails("c")}, workers=3)
  assert finished == ["ok"]


def test_helper_threads_stay_bounded_under_many_nested_callers():
  peak, lock = [0], threading.Lock()

  def helpers_alive() -> int:
    return sum(t.name.startswith("Helper") for t in threading.enumerate())

  def leaf():
    time.sleep(0.002)
    with lock:
      peak[0] = max(peak[0], helpers_alive())
    return 1

  def inner():
    return sum(threads.run_tasks({f"{i}": leaf for i in range(8)}).values())

  def caller():
    return sum(threads.run_tasks({f"{i}": inner for i in range(8)}).values())

  callers = [threading.Thread(target=caller) for _ in range(40)]
  for t in callers:
    t.start()
  for t in callers:
    t.join(timeout=60)
  assert not any(t.is_alive() for t in callers)
  assert 0 < peak[0] <= threads.HELPERS
  assert helpers_alive() <= threads.HELPERS

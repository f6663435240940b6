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


def test_permits_hold_at_most_their_count_and_come_back_after_errors():
  permits = threads.Permits(3)
  lock = threading.Lock()
  inside, most = [0], [0]
  all_in = threading.Barrier(3, timeout=10)

  def hold(i: int) -> int:
    with permits:
      with lock:
        inside[0] += 1
        most[0] = max(most[0], inside[0])
      if i < 3:
        all_in.wait()  # The first three meet: the count is reached.
      with lock:
        inside[0] -= 1
      if i % 7 == 0:
        raise ValueError(i)
    return i

  workers = [threading.Thread(target=lambda i=i: _swallow(hold, i))
             for i in range(3)]
  for w in workers:
    w.start()
  for w in workers:
    w.join()
  assert most[0] == 3
  many = threads.run_tasks({f"{i:03d}": (lambda i=i: _swallow(hold, i))
                            for i in range(3, 200)})
  assert most[0] == 3 and len(many) == 197
  assert permits.free == 3  # Every permit came back, the errors' too.
  with pytest.raises(ValueError):
    threads.Permits(0)


def _swallow(fn, i):
  try:
    return fn(i)
  except ValueError:
    return None

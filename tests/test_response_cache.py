"""The response cache waits out a lock SQLite's busy timeout does not
cover (two processes switching a new file to WAL at once answer "database
is locked" at once), and fails on any other error at once. The race is
rare: the first test drives the retry directly; the second opens one new
file from four processes at once, the case where it was met."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest

from crsec_concordia.models import cache


def test_a_lock_is_waited_out_and_another_error_is_not():
  tries = []

  def locked_twice() -> str:
    tries.append(1)
    if len(tries) < 3:
      raise sqlite3.OperationalError("database is locked")
    return "done"

  assert cache._patiently(locked_twice) == "done" and len(tries) == 3

  def broken() -> None:
    tries.append(1)
    raise sqlite3.OperationalError("no such table: responses")

  tries.clear()
  with pytest.raises(sqlite3.OperationalError, match="no such table"):
    cache._patiently(broken)
  assert len(tries) == 1


def _open_and_write(path: str, worker: int) -> None:
  store = cache.ResponseCache(path)
  for i in range(20):
    store.put(f"{worker}-{i}", "answer", 1, 1)
  store.close()


def test_processes_opening_a_new_cache_together_all_write(tmp_path):
  path = str(tmp_path / "responses.sqlite")
  context = multiprocessing.get_context("spawn")
  workers = [context.Process(target=_open_and_write, args=(path, w))
             for w in range(4)]
  for w in workers:
    w.start()
  for w in workers:
    w.join(60)
  assert [w.exitcode for w in workers] == [0, 0, 0, 0]
  assert len(cache.ResponseCache(path)) == 80

"""An on-disk response cache, so a seeded rerun replays without the model.

Keyed by everything that determines an answer: model, messages, sampling
settings, seed and schema. Only valid answers are stored, never failures.
SQLite gives atomic writes across threads and survives a killed run.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar


# How long a connection waits for another process's lock on the file.
BUSY_SECONDS = 120.0
_T = TypeVar("_T")


def _patiently(work: Callable[[], _T]) -> _T:
  """`work`, tried again while another connection holds the file.

  SQLite's busy timeout does not cover every lock: switching a new file to
  WAL, or a WAL being recovered, answers "database is locked" at once
  when two processes (a compare's arms, a sweep's runs) open the same
  cache together. Such a wait is retried up to BUSY_SECONDS.
  """
  deadline = time.monotonic() + BUSY_SECONDS
  pause = 0.02
  while True:
    try:
      return work()
    except sqlite3.OperationalError as e:
      if "locked" not in str(e) or time.monotonic() > deadline:
        raise
      time.sleep(pause)
      pause = min(pause * 2, 0.5)


def cache_key(**parts: Any) -> str:
  return hashlib.sha256(
      json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


class ResponseCache:
  """A thread-safe key -> (text, usage) store in one SQLite file."""

  def __init__(self, path: str | os.PathLike[str]):
    self.path = Path(path)
    self.path.parent.mkdir(parents=True, exist_ok=True)
    self._lock = threading.Lock()
    # Runs on one node share the file: a writer waits for another's lock
    # (SQLite's default 5 s was exceeded on a busy machine, "database is
    # locked") rather than failing the run.
    self._conn = sqlite3.connect(self.path, check_same_thread=False,
                                 isolation_level=None, timeout=BUSY_SECONDS)
    _patiently(lambda: self._conn.execute("PRAGMA journal_mode=WAL"))
    _patiently(lambda: self._conn.execute(
        "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, "
        "text TEXT NOT NULL, prompt_tokens INTEGER, completion_tokens INTEGER)"))

  def get(self, key: str) -> tuple[str, int, int] | None:
    with self._lock:
      row = _patiently(lambda: self._conn.execute(
          "SELECT text, prompt_tokens, completion_tokens FROM responses "
          "WHERE key = ?", (key,)).fetchone())
    return None if row is None else (row[0], row[1] or 0, row[2] or 0)

  def put(self, key: str, text: str, prompt_tokens: int,
          completion_tokens: int) -> None:
    with self._lock:
      _patiently(lambda: self._conn.execute(
          "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
          (key, text, prompt_tokens, completion_tokens)))

  def __len__(self) -> int:
    with self._lock:
      return self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

  def close(self) -> None:
    with self._lock:
      self._conn.close()

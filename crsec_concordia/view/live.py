"""Following a run while it goes: the page's data made again when the
run's files change, for the endpoint `crsec view --serve` answers
(serve.py) and the page polls (static/page.js).

A run commits a slot by writing its records, its norm snapshot, usage.json
and last run.json (runs/session.py); the watch notices a change by the
size and time of those files (and of a compare or sweep's manifest, and a
report's metrics), never by reading them, so a poll of an unchanged run
costs a few `stat`s. A change makes the data again from the files, the
belief of slots read before kept (belief.RunBelief). A file caught
mid-write (a line being appended) leaves the last data shown: the next
poll reads it whole. Who holds which target appears once the run's
embedder is loaded, which happens on a thread of its own: the page shows
the run at once.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from crsec_concordia.embedding import SentenceEmbedder
from crsec_concordia.errors import UserError
from crsec_concordia.rundir import format as fmt
from crsec_concordia.view import belief, page

# The endpoint's name beside the page: GET live.json?v=VERSION.
LIVE = "live.json"
# What a run writes that the page shows, by where it lies in a run.
_RUN_FILES = (fmt.RUN_JSON, fmt.EVENTS, fmt.USAGE_JSON, fmt.NORMS,
              fmt.METRICS, f"{fmt.METRICS}/{fmt.SUMMARY_JSON}",
              f"{fmt.METRICS}/{fmt.PER_STEP_CSV}")
_MANIFESTS = (fmt.RUN_JSON, fmt.COMPARE_JSON, fmt.SWEEP_JSON)


def _stat(path: Path) -> tuple[int, int] | None:
  try:
    found = os.stat(path)
  except OSError:
    return None
  return found.st_size, found.st_mtime_ns


class Watch:
  """A run, compare or sweep directory's page data, made again when its
  files change; `version` counts the changes."""

  def __init__(self, path: Path,
               embedder: SentenceEmbedder | None = None):
    self.path = Path(path)
    self._lock = threading.Lock()
    self._loaded = 0  # Embedders that finished loading (a change too).
    self.beliefs = belief.Beliefs(embedder, wait=False,
                                  changed=self._embedder_ready)
    self._stamp: tuple | None = None
    self._data: dict[str, Any] | None = None
    self.version = 0

  def _embedder_ready(self) -> None:
    with self._lock:
      self._loaded += 1

  def _runs(self) -> list[Path]:
    return [Path(r["meta"]["path"]) for r in (self._data or {}).get(
        "runs", ())]

  def _stamp_now(self) -> tuple:
    return (self._loaded,
            tuple(_stat(self.path / name) for name in _MANIFESTS),
            tuple(_stat(run / name) for run in self._runs()
                  for name in _RUN_FILES))

  def data(self) -> tuple[int, dict[str, Any]]:
    """(version, the page's data), made again if anything changed.

    Raises UserError (or the OSError, ValueError of a file caught
    mid-write) when the directory cannot be read and nothing was read
    before."""
    with self._lock:
      stamp = self._stamp_now()
      if self._data is not None and stamp == self._stamp:
        return self.version, self._data
      try:
        fresh = page.page_data(self.path, self.beliefs)
      except (UserError, OSError, ValueError):
        if self._data is None:
          raise
        return self.version, self._data  # Mid-write: the next poll reads it.
      before = self._runs()
      if fresh != self._data:
        self.version += 1
        self._data = fresh
      # A run read for the first time (a sweep's new one) was not in the
      # stamp: the next poll reads once more, its files stamped first.
      self._stamp = stamp if self._runs() == before else None
      return self.version, self._data

  def answer(self, have: str) -> bytes:
    """The endpoint's answer: the version, and the data when the page's
    (`have`) is not that version."""
    version, data = self.data()
    body: dict[str, Any] = {"v": version}
    if have != str(version):
      body["page"] = data
    return page.as_json(body).encode("utf-8")

  def html(self) -> bytes:
    """The page as it is now, following the run from this version."""
    version, data = self.data()
    return page.page_html({**data, "live": version}).encode("utf-8")

"""Embeds texts ahead of need, in batches, in the background (not a component).

The shared sentence embedder serves every agent behind one lock, and at
the start of a slot every normative observer's ConflictDetector embeds the
norms it holds, new to the embedder since the slot before: one forward pass
each, queued at the lock, ahead of their DetectConflict calls. A text handed
to `warm` is embedded in a background thread, together with whatever else
is waiting (one forward pass for many texts), while the agents' model calls
are in flight; the detection then finds it in the embedder's cache. Nothing
depends on warming: a text not yet warmed is embedded where it is needed,
and a failure here is only logged. The measurements:
docs/trials/acting-and-planning.md#a-society-that-acts-at-once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from crsec_concordia.embedding import vectors

_log = logging.getLogger(__name__)
# Texts warmed per embedder are remembered up to this many, then forgotten
# (warming one again only costs a cache look-up in the embedder).
_MAX_REMEMBERED = 100_000


class EmbeddingWarmer:
  """One background worker per embedder, batching what it is given."""

  def __init__(self, embedder: Any):
    self._embedder = embedder
    self._lock = threading.Lock()
    self._pending: dict[str, None] = {}
    self._done: set[str] = set()
    self._worker: threading.Thread | None = None

  def warm(self, texts: Iterable[str]) -> None:
    """Embeds `texts` soon, in the background (returns at once)."""
    with self._lock:
      for text in texts:
        if text and text not in self._done:
          self._pending[text] = None
      if not self._pending or self._worker is not None:
        return
      # Not a daemon: the interpreter waits for it at exit. A daemon thread
      # still inside torch when Python finalizes is ended by an unwinding
      # that torch's C++ frames do not allow, and the process aborts
      # (exit 134) after a run that has written everything.
      self._worker = threading.Thread(target=self._run, daemon=False,
                                      name="EmbeddingWarmer")
      self._worker.start()

  def _run(self) -> None:
    while True:
      with self._lock:
        batch = list(self._pending)
        self._pending.clear()
        if not batch:
          self._worker = None
          return
        if len(self._done) > _MAX_REMEMBERED:
          self._done.clear()
        self._done.update(batch)
      try:
        vectors.encode(self._embedder, batch)
      except Exception:  # pylint: disable=broad-except
        _log.debug("warming %d embeddings failed", len(batch), exc_info=True)

  def join(self) -> None:
    """Waits until nothing is pending (for tests)."""
    while True:
      with self._lock:
        worker = self._worker
      if worker is None:
        return
      worker.join()


_warmers: dict[int, tuple[Any, EmbeddingWarmer]] = {}
_warmers_lock = threading.Lock()


def warmer_for(embedder: Any) -> EmbeddingWarmer | None:
  """The warmer of `embedder`, or None if it cannot embed in batches."""
  if not callable(getattr(embedder, "encode", None)):
    return None
  with _warmers_lock:
    known = _warmers.get(id(embedder))
    if known is None or known[0] is not embedder:
      known = (embedder, EmbeddingWarmer(embedder))
      _warmers[id(embedder)] = known
    return known[1]


def warm(embedder: Any, texts: Iterable[str]) -> None:
  """Embeds `texts` with `embedder` in the background, if it can batch."""
  warmer = warmer_for(embedder)
  if warmer is not None:
    warmer.warm(texts)

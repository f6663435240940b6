"""The sentence embedder: meaning, unit vectors, batching, cache, threads.

The real all-MiniLM-L6-v2 is loaded once for the module (importing torch
takes seconds); cache and eviction logic is also checked against a tiny fake
model, where exact call counts are easy to state.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import subprocess
import sys
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from crsec_concordia.embedding import warmer as _embedding_warmer
from crsec_concordia import embedding
from crsec_concordia.embedding import DIMENSION, MiniLMEmbedder, shared_embedder

NORM = "No smoking indoors."
PARAPHRASE = "Smoking is not permitted inside the cafe."
UNRELATED = "Tip the server after meals."


class CountingModel:
  """Wraps a model's `encode`, recording each batch it is asked for."""

  def __init__(self, encode):
    self._encode = encode
    self.batches: list[list[str]] = []
    self.kwargs: list[dict] = []
    self._lock = threading.Lock()

  def encode(self, texts: Sequence[str], **kwargs) -> np.ndarray:
    with self._lock:
      self.batches.append(list(texts))
      self.kwargs.append(kwargs)
    return self._encode(texts, **kwargs)

  @property
  def texts_encoded(self) -> list[str]:
    return [t for batch in self.batches for t in batch]


def fake_encode(texts: Sequence[str], **kwargs) -> np.ndarray:
  """Deterministic unit vectors from a hash: no torch needed."""
  del kwargs
  rows = []
  for text in texts:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
    v = np.random.default_rng(seed).standard_normal(DIMENSION)
    rows.append(v / np.linalg.norm(v))
  return np.array(rows, dtype=np.float32)


def with_model(embedder: MiniLMEmbedder, encode) -> CountingModel:
  counting = CountingModel(encode)
  embedder._model = counting  # pylint: disable=protected-access
  return counting


@pytest.fixture(scope="module")
def real() -> MiniLMEmbedder:
  embedder = MiniLMEmbedder()
  embedder.encode(["warm up"])
  return embedder


# -- the real model ------------------------------------------------------------


def test_a_paraphrase_ranks_closer_than_an_unrelated_norm(real):
  sims = embedding.similarity(real, [PARAPHRASE], [NORM, UNRELATED])[0]
  assert sims[0] > sims[1] + 0.3
  assert sims[0] > 0.5  # Measured 0.69 here.


def test_vectors_are_unit_norm_and_cosine_is_a_dot_product(real):
  vectors = real.encode([NORM, PARAPHRASE, UNRELATED, "Hi.", "x" * 2000])
  assert vectors.shape == (5, DIMENSION) and vectors.dtype == np.float32
  np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
  a, b = vectors[0], vectors[1]
  cosine = a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
  assert abs(a @ b - cosine) < 1e-5


def test_concordias_single_text_call_matches_encode(real):
  vector = real(NORM)
  assert vector.shape == (DIMENSION,)
  np.testing.assert_array_equal(vector, real.encode([NORM])[0])


def test_encode_is_batched_and_cached(real, monkeypatch):
  counting = CountingModel(real._load().encode)  # pylint: disable=protected-access
  monkeypatch.setattr(real, "_model", counting)
  texts = [f"Norm number {i}: keep the café tidy." for i in range(100)]
  first = real.encode(texts + texts[:10])  # Repeats are encoded once.
  assert len(counting.batches) == 1 and len(counting.batches[0]) == 100
  assert counting.kwargs[0]["batch_size"] == 64
  assert counting.kwargs[0]["normalize_embeddings"] is True
  second = real.encode(texts)
  assert len(counting.batches) == 1  # All from the cache: no model call.
  np.testing.assert_array_equal(first[:100], second)
  real.encode(texts[:5] + ["A brand new sentence."])
  assert counting.batches[1] == ["A brand new sentence."]


def test_empty_inputs(real):
  assert real.encode([]).shape == (0, DIMENSION)
  assert embedding.similarity(real, [], [NORM]).shape == (0, 1)


class CountingEmbedder(MiniLMEmbedder):
  """An embedder whose loaded model is wrapped in a CountingModel."""

  def __init__(self):
    super().__init__()
    self.counting: CountingModel | None = None
    self.loaded: list[object] = []

  def _load(self):
    model = super()._load()
    if self.counting is None:
      self.loaded.append(model)
      self.counting = CountingModel(model.encode)
    return self.counting


def test_eight_threads_share_one_model_and_one_cache(real):
  # A fresh embedder, so the threads also race to load the model.
  embedder = CountingEmbedder()
  texts = [f"Sentence {i} about the café." for i in range(40)]
  barrier = threading.Barrier(8)

  def work(k: int) -> np.ndarray:
    barrier.wait()
    rotated = texts[k:] + texts[:k]  # Overlapping, in different orders.
    return np.roll(embedder.encode(rotated), k, axis=0)

  with concurrent.futures.ThreadPoolExecutor(8) as pool:
    results = list(pool.map(work, range(8)))
  assert len(embedder.loaded) == 1
  assert sorted(embedder.counting.texts_encoded) == sorted(texts)  # Once each.
  for result in results:
    np.testing.assert_array_equal(result, results[0])
  np.testing.assert_allclose(results[0], real.encode(texts), atol=1e-5)


# -- cache logic, on a fake model ----------------------------------------------


def test_a_full_cache_still_answers_every_text():
  embedder = MiniLMEmbedder(cache_size=2)
  counting = with_model(embedder, fake_encode)
  embedder.encode(["a", "b"])
  # "a" is cached and oldest; storing "c" and "d" evicts it mid-call.
  vectors = embedder.encode(["a", "c", "d"])
  np.testing.assert_array_equal(vectors, fake_encode(["a", "c", "d"]))
  # More distinct texts in one call than the cache holds.
  many = [str(i) for i in range(10)]
  np.testing.assert_array_equal(embedder.encode(many), fake_encode(many))
  assert len(embedder._cache) == 2  # pylint: disable=protected-access
  assert counting.batches[1] == ["c", "d"]


def test_the_cache_evicts_the_least_recently_used_text():
  embedder = MiniLMEmbedder(cache_size=2)
  counting = with_model(embedder, fake_encode)
  embedder.encode(["a", "b"])
  embedder.encode(["a"])  # "a" is now the most recent.
  embedder.encode(["c"])  # Evicts "b", not "a".
  embedder.encode(["a"])
  assert counting.texts_encoded == ["a", "b", "c"]


def test_shared_embedder_is_one_per_process():
  assert shared_embedder() is shared_embedder()


def test_a_process_exits_cleanly_while_embeddings_are_still_being_warmed(
    tmp_path):
  """A run's last slot hands its norms to the background warmer and the
  process ends at once (a rerun from the response cache takes a second).
  The warmer must be waited for: ended inside torch at exit, it aborted the
  process (exit 134) after everything had been written."""
  warmer = _embedding_warmer.EmbeddingWarmer(MiniLMEmbedder())
  warmer.warm(["a text"])
  thread = warmer._worker  # pylint: disable=protected-access
  assert thread is not None and not thread.daemon
  warmer.join()
  script = tmp_path / "warm_then_exit.py"
  script.write_text(
      "from crsec_concordia.embedding import MiniLMEmbedder\n"
      "from crsec_concordia.embedding import warmer as _embedding_warmer\n"
      "embedder = MiniLMEmbedder()\n"
      "embedder.encode(['load the model first'])\n"
      "_embedding_warmer.warm(embedder, [f'sentence {i} about a guest' "
      "for i in range(2000)])\n")
  for _ in range(2):  # Before the fix, two runs in five aborted.
    done = subprocess.run([sys.executable, str(script)], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-1000:]

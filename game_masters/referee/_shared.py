"""What every step of the referee's pipeline shares: the similarity it
checks with and the shape of a failed call's record."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from crsec_concordia import embedding
from crsec_concordia.embedding import SentenceEmbedder

# (text, text) -> the cosine similarity of their embeddings.
Similarity = Callable[[str, str], float]


def similarity_of(embedder: SentenceEmbedder) -> Similarity:
  """The referee's similarity from Concordia's embedder (any text -> vector
  function): the simulation's, as the game master's prefab passes it."""
  return functools.partial(embedding.pair_similarity, embedder)


def failure_record(op: str, error: Exception) -> dict[str, Any]:
  """The record of a call that failed past its retries: visible, never
  silent (the raw answer, where the model gave one)."""
  return {"op": op, "error": str(error), "raw": getattr(error, "raw", "")}

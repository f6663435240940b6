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
  function): the simulation's, as the game master's prefab passes it.

  Through the embedder's vector cache (`embedding.cached`, the one the
  agents' components share): the gates compare every action with each
  behaviour's description, the same few texts slot after slot, and a
  user's function embedded them again at every comparison."""
  return functools.partial(embedding.pair_similarity,
                           embedding.cached(embedder))


def failure_record(op: str, error: Exception) -> dict[str, Any]:
  """The record of a call that failed past its retries: visible, never
  silent (the raw answer, where the model gave one)."""
  return {"op": op, "error": str(error), "raw": getattr(error, "raw", "")}


def combined(first: dict[str, Any] | None, second: dict[str, Any] | None
             ) -> dict[str, Any] | None:
  """One action's failure record for two of its calls that failed (the
  general call's second ask, then the second look or the doer check): both
  errors kept, the second under its op, as the doer check keeps its
  several calls' errors in one record."""
  if first is None or second is None:
    return first or second
  return {**first, "error": f"{first['error']}; {second['op']}: "
                            f"{second['error']}",
          "raw": first.get("raw") or second.get("raw", "")}

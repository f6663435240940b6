"""ListMemoryBank: Concordia's associative memory bank without pandas.

Concordia's `AssociativeMemoryBank` keeps an agent's memories in a pandas
DataFrame and embeds every memory when it is added: in a society where
every agent observes every slot, per-agent work on every slot's critical
path, under the GIL, though the CRSEC agents only ever read their recent
memories. This bank has the same interface and the same answers (memories
in the order added, newlines replaced by spaces, exact duplicates dropped
unless `allow_duplicates`; `retrieve_recent`, `scan`,
`retrieve_associative` by cosine of unit vectors, as Concordia's). It
differs in when it works: a memory is embedded only when an associative
retrieval first needs it, and its state holds the texts only. It reads
Concordia's state format too, so a checkpoint written with the stock bank
resumes. The measurements:
docs/trials/acting-and-planning.md#a-society-that-acts-at-once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from concordia.typing import entity_component

Embedder = Callable[[str], np.ndarray]


def _texts_of_concordia_state(state: entity_component.ComponentState
                              ) -> list[str]:
  """The texts of an `AssociativeMemoryBank.get_state()` (pandas JSON)."""
  frame = json.loads(str(state["memory_bank"]))
  column = frame.get("text", {}) if isinstance(frame, dict) else {}
  return [str(column[k]) for k in sorted(column, key=int)]


class ListMemoryBank:
  """A thread-safe list of memories with Concordia's memory-bank interface."""

  def __init__(self, sentence_embedder: Embedder | None = None,
               allow_duplicates: bool = False):
    """Creates an empty bank.

    Args:
      sentence_embedder: text -> unit vector; needed only for
        `retrieve_associative` (and `get_data_frame`).
      allow_duplicates: keep a text added twice (Concordia's game-master
        banks do); by default an exact repeat is dropped.
    """
    self._lock = threading.Lock()
    self._embedder = sentence_embedder
    self._allow_duplicates = allow_duplicates
    self._texts: list[str] = []
    self._seen: set[str] = set()
    self._vectors: dict[str, np.ndarray] = {}

  # -- adding -----------------------------------------------------------------

  def add(self, text: str) -> None:
    """Adds a memory (newlines become spaces; a repeat is dropped)."""
    text = text.replace("\n", " ")
    with self._lock:
      if not self._allow_duplicates and text in self._seen:
        return
      self._texts.append(text)
      self._seen.add(text)

  def extend(self, texts: Iterable[str]) -> None:
    for text in texts:
      self.add(text)

  # -- reading ----------------------------------------------------------------

  def retrieve_recent(self, k: int = 1) -> Sequence[str]:
    """The last `k` memories, oldest first."""
    if k <= 0:
      raise ValueError("Limit must be positive.")
    with self._lock:
      return list(self._texts[-k:])

  def scan(self, selector_fn: Callable[[str], bool]) -> Sequence[str]:
    """The memories `selector_fn` selects, oldest first."""
    with self._lock:
      texts = list(self._texts)
    return [t for t in texts if selector_fn(t)]

  def retrieve_associative(self, query: str, k: int = 1) -> Sequence[str]:
    """The `k` memories most similar to `query`, most similar first."""
    if self._embedder is None:
      raise ValueError("Embedder must be set before calling the "
                       "`retrieve_associative` method.")
    if k <= 0:
      raise ValueError("Limit must be positive.")
    texts, vectors = self._embedded()
    if not texts:
      return []
    scores = vectors @ np.asarray(self._embedder(query))
    order = np.argsort(-scores, kind="stable")[:k]
    return [texts[i] for i in order]

  def _embedded(self) -> tuple[list[str], np.ndarray]:
    """The memories and their vectors, embedding those not yet embedded."""
    with self._lock:
      texts = list(self._texts)
      missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
    if missing:
      assert self._embedder is not None
      encode = getattr(self._embedder, "encode", None)
      vectors = (list(encode(missing)) if callable(encode)
                 else [self._embedder(t) for t in missing])
      with self._lock:
        for text, vector in zip(missing, vectors):
          self._vectors[text] = np.asarray(vector)
    if not texts:
      return [], np.zeros((0, 0))
    return texts, np.stack([self._vectors[t] for t in texts])

  def get_data_frame(self) -> pd.DataFrame:
    """The memories as Concordia's bank shows them (text, embedding)."""
    if self._embedder is None:
      with self._lock:
        return pd.DataFrame({"text": list(self._texts)})
    texts, vectors = self._embedded()
    return pd.DataFrame({"text": texts, "embedding": list(vectors)})

  def get_all_memories_as_text(self) -> Sequence[str]:
    with self._lock:
      return list(self._texts)

  def __len__(self) -> int:
    with self._lock:
      return len(self._texts)

  def set_embedder(self, embedder: Embedder) -> None:
    self._embedder = embedder

  # -- state ------------------------------------------------------------------

  def get_state(self) -> entity_component.ComponentState:
    """The memories in order (embeddings are recomputed when needed)."""
    with self._lock:
      return {"texts": list(self._texts)}

  def set_state(self, state: entity_component.ComponentState) -> None:
    """From `get_state()`, or from Concordia's AssociativeMemoryBank's."""
    if "texts" in state:
      texts = [str(t) for t in state["texts"]]  # type: ignore[union-attr]
    else:
      texts = _texts_of_concordia_state(state)
    with self._lock:
      self._texts = texts
      self._seen = set(texts)
      self._vectors = {}

  @classmethod
  def like(cls, bank: Any) -> "ListMemoryBank":
    """A list bank holding what `bank` (any Concordia memory bank) holds.

    Keeps its embedder and its duplicates policy; `bank` itself is left
    alone.
    """
    if isinstance(bank, cls):
      return bank
    new = cls(sentence_embedder=getattr(bank, "_embedder", None),
              allow_duplicates=bool(getattr(bank, "_allow_duplicates", False)))
    if bank is not None and len(bank):
      new.extend(bank.get_all_memories_as_text())
    return new

"""Which sentence embedder a run or a report used: a name and a fingerprint.

Every threshold that reads a cosine holds for the embedder it was measured
with, so a run, a report and a measurement say which one that was. The
*name* is the user's (`named(fn, "my-onnx-model")`), else the function's
`module:qualname`; MiniLM is "all-MiniLM-L6-v2". The *fingerprint* is a
hash of what the embedder says of a fixed set of shipped sentences: their
pairwise cosines, rounded to `PRECISION` decimals, so float noise between
machines does not change it while a changed model does. Cosines rather
than raw vectors because cosines are all any decision here reads: two
embedders with the same cosines decide the same, and the dimension or a
rotation of the vectors does not matter.
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import numpy as np

from crsec_concordia.embedding import vectors

# Cosines are rounded to this many decimals before hashing.
PRECISION = 2
# Sentences of the kinds every threshold compares (deeds, norms, unrelated
# talk), so an embedder that changes on any of them changes its fingerprint.
SENTENCES = (
    "No smoking indoors.",
    "Tom lights a cigarette at the next table.",
    "Leave a tip after your meal.",
    "Maria pays the bill and leaves some coins for the waiter.",
    "Keep your voice down in the library.",
    "The weather is sunny this afternoon.",
    "Return the garden tools to the shed.",
    "Anna orders a coffee and reads a book.",
)
MINILM_NAME = "all-MiniLM-L6-v2"
# all-MiniLM-L6-v2's fingerprint (the default embedder's, the one every
# shipped threshold and the matcher's recorded error were measured with);
# tests/test_embedder_identity.py checks it against the model. Each of its
# cosines lies at least 0.0003 from a rounding boundary, a thousand times
# the float noise between machines.
MINILM_FINGERPRINT = "a75f2960e9d8"


@dataclasses.dataclass(frozen=True)
class EmbedderIdentity:
  """An embedder's name and the hash of its cosines on `SENTENCES`."""
  name: str
  fingerprint: str

  def describe(self) -> dict[str, Any]:
    return {"name": self.name, "fingerprint": self.fingerprint,
            "precision": PRECISION}

  def __str__(self) -> str:
    return f"{self.name} (fingerprint {self.fingerprint})"

  @classmethod
  def from_dict(cls, data: Any) -> EmbedderIdentity | None:
    if not isinstance(data, dict) or not data.get("fingerprint"):
      return None
    return cls(str(data.get("name") or "unnamed"), str(data["fingerprint"]))


MINILM = EmbedderIdentity(MINILM_NAME, MINILM_FINGERPRINT)


class NamedEmbedder:
  """An embedder under a name of the user's choosing (`named`)."""

  def __init__(self, embedder: vectors.SentenceEmbedder, name: str):
    self.wrapped = embedder
    self.embedder_name = name
    batched = getattr(embedder, "encode", None)
    if callable(batched):
      self.encode = batched
      self.unit_vectors = getattr(embedder, "unit_vectors", False)

  def __call__(self, text: str) -> np.ndarray:
    return self.wrapped(text)


def named(embedder: vectors.SentenceEmbedder, name: str
          ) -> vectors.SentenceEmbedder:
  """`embedder`, known as `name` in runs, reports and calibrations."""
  return NamedEmbedder(embedder, name)


def name_of(embedder: Any) -> str:
  """The embedder's given name, else what it is in the code."""
  given = getattr(embedder, "embedder_name", None)
  if isinstance(given, str) and given:
    return given
  if isinstance(embedder, vectors.MiniLMEmbedder):
    return MINILM_NAME
  if isinstance(embedder, vectors.CachedEmbedder) and embedder.wrapped:
    return name_of(embedder.wrapped)
  wrapped = getattr(embedder, "wrapped", None)
  if wrapped is not None and wrapped is not embedder:
    return name_of(wrapped)
  target = embedder if hasattr(embedder, "__qualname__") else type(embedder)
  module = getattr(target, "__module__", None) or "?"
  return f"{module}:{getattr(target, '__qualname__', repr(target))}"


def fingerprint(embedder: vectors.SentenceEmbedder) -> str:
  """The hash of the embedder's cosines on `SENTENCES`, rounded."""
  sims = np.asarray(vectors.similarity(embedder, list(SENTENCES),
                                       list(SENTENCES)), dtype=np.float64)
  upper = sims[np.triu_indices(len(SENTENCES), k=1)]
  text = ",".join(f"{round(float(x), PRECISION) + 0.0:.{PRECISION}f}"
                  for x in upper)
  return hashlib.sha256(text.encode()).hexdigest()[:12]


def is_measured_default(identity: EmbedderIdentity | None) -> bool:
  """Whether `identity` is MiniLM's, the embedder every shipped threshold
  and recorded matcher error holds for (None: a run that recorded none,
  i.e. ran on the default)."""
  return identity is None or identity.fingerprint == MINILM.fingerprint


def identity_of_run(info: dict[str, Any]) -> EmbedderIdentity:
  """The embedder a run's run.json says it ran with (none: MiniLM)."""
  return EmbedderIdentity.from_dict(info.get("embedder")) or MINILM

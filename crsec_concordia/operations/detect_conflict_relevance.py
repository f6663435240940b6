"""DetectConflict's inputs: which rule a deed is most about, and which of
its sentences says so.

Retrieval for DetectConflict (the model judges one deed against one rule;
the embedder picks the rule, and a deed near no rule is not judged at all:
`questions`, with the relevance floor). An action as agents write it is
often two or three sentences, and the deed a rule is about may be the last
of them: embedded whole, it can sit barely over the relevance gate and be
judged by its first sentence. Scored sentence by sentence, the rule is found by the
sentence that is about it, and that sentence is shown to the judge beside
the whole action (the case: docs/trials/operations.md#detectconflict).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from crsec_concordia import embedding, observations
from crsec_concordia.norms import PersonalNorm
from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.operations.detect_conflict import Observed

# Cosine below which a behaviour is taken to be about none of the agent's
# norms: low, because behaviour-to-rule similarity is low even for plain
# breaches; measured per embedder to lose no labelled breach, the model's
# judgement does the rest (docs/trials/operations.md, the relevance gate;
# docs/calibration.md). This is MiniLM's; a component reads its own
# embedder's (embedder_thresholds.py).
DEFAULT_RELEVANCE = MINILM_THRESHOLDS.relevance
Deed = TypeVar("Deed", bound=observations.ActionObservation)

# A sentence ends at . ! or ? (a closing quote may follow) before the next
# one's capital letter or opening quote; not after a title ("Mr. Smith").
_SENTENCE_END = re.compile(
    r"(?:(?<=[.!?])|(?<=[.!?][\"'\u201d\u2019]))\s+"
    r"(?=[\"'\u201c\u2018(]?[A-Z])")
_TITLE = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|St|Prof|Mt)\.$")


def sentences(text: str) -> list[str]:
  """The sentences of `text`, in order (the text itself if it is one)."""
  text = " ".join(text.split())
  parts: list[str] = []
  for piece in _SENTENCE_END.split(text):
    if parts and _TITLE.search(parts[-1]):
      parts[-1] = f"{parts[-1]} {piece}"
    elif piece.strip():
      parts.append(piece.strip())
  return parts or [text]


def pieces(text: str) -> list[str]:
  """What of `text` is scored against rules: the text, then its sentences
  if it has several (a game master embeds them ahead, while observers
  are still to read the action)."""
  split = sentences(text)
  return [text] + (split if len(split) > 1 else [])


@dataclasses.dataclass(frozen=True)
class Nearest:
  """The rule a text is most about: its index, the similarity, and the
  sentence of the text nearest it ("" if the text is one sentence)."""
  rule: int
  similarity: float
  focus: str


def nearest_rules(embedder, texts: Sequence[str], rules: Sequence[str]
                  ) -> list[Nearest | None]:
  """For each text, the rule its closest sentence is nearest (None if
  there are no rules). The whole text counts as a sentence too, so a deed
  told across two sentences is no worse off than before."""
  if not rules:
    return [None for _ in texts]
  scored = [pieces(text) for text in texts]
  flat = [p for ps in scored for p in ps]
  scores = embedding.similarity(embedder, flat, list(rules))
  found, row = [], 0
  for ps in scored:
    block = np.asarray(scores[row:row + len(ps)], dtype=float)
    i, j = np.unravel_index(int(np.argmax(block)), block.shape)
    found.append(Nearest(rule=int(j), similarity=float(block[i, j]),
                         focus=ps[i] if i > 0 else ""))
    row += len(ps)
  return found


def questions(embedder, deeds: Sequence[Deed], norms: Sequence[PersonalNorm],
              floor: float = DEFAULT_RELEVANCE) -> list[tuple[Deed, Observed]]:
  """Each deed with its DetectConflict question: the norm it is most about
  (and the sentence of it nearest that norm); a deed whose similarity to
  that norm is under `floor` is left out (0 keeps every deed)."""
  found = nearest_rules(embedder, [d.text for d in deeds],
                        [n.content for n in norms])
  return [(deed, Observed(deed.actor, deed.text, deed.place,
                          norms[near.rule], near.focus))
          for deed, near in zip(deeds, found)
          if near is not None and near.similarity >= floor]

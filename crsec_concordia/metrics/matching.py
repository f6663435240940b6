"""Deciding that a personal norm MEANS a target norm (semantic matching).

Agents word the same norm in many ways ("Smoking is not permitted inside the
cafe", "Adhere to no-smoking policies indoors"), so string equality would
miss most adoptions. The rule, calibrated on the labelled set
`matcher_labels.json` (see `calibration.py` and docs/metrics.md):

  A norm MEANS a target when the cosine similarity of their all-MiniLM-L6-v2
  embeddings is at least MATCH_THRESHOLD (0.52). A norm may mean several
  targets (a synthesised "keep the café smoke-free and quiet").

What counts as a match (the labels' standard): holding the norm commits the
holder to the target's standard of behaviour in the café: same behaviour,
same or wider scope; its type (descriptive or injunctive) does not matter.
Narrower conditions ("don't smoke near children"), other behaviours ("pay
before leaving"), permissions, opposites, and scopes that leave indoors open
do not count. In particular "Smoke only in designated areas" does NOT mean
"No smoking indoors": a designated area may be indoors, and the norm says
nothing about the café's inside. The embedder cannot see that difference
(cosine 0.69): embedding-only matching counts it, a documented false
positive; the optional LLM judge applies the rule in words.

With a judge, every pair at or above JUDGE_FLOOR (0.40, where embedding-only
recall on the labelled set is 0.975) is put to the judge and its yes/no
decides; a judge failure falls back to the embedding decision and is counted.

A looser relation, ABOUT, tells whether a conflict, conversation or thought
concerns a target at all: cosine >= RELATED_THRESHOLD (0.40) with the
target's text or the description of one of its behaviours. It feeds counts,
never belief.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from crsec_concordia.metrics.rundir import TargetNorm

_LOG = logging.getLogger(__name__)

MATCH_THRESHOLD = 0.52
JUDGE_FLOOR = 0.40
RELATED_THRESHOLD = 0.40

JUDGE_TAG = "MetricsJudge"
JUDGE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["answer"],
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
}
_JUDGE_PROMPT = """\
You check whether a person's social norm means the same as a target norm.
It does when holding the norm commits the person to the target's standard of
behaviour in a café: the same behaviour, with the same or a wider scope.
Descriptive and injunctive wording both count ("people tip after meals" means
"tip after meals"). It does not when it only shares the topic: a narrower
condition ("don't smoke near children"), a different behaviour ("pay before
leaving"), a permission or the opposite ("tipping is optional"), or a scope
that leaves the target's case open ("smoke only in designated areas" does not
mean "no smoking indoors").

Target norm: {target}
Person's norm: {norm}

Does the person's norm mean the target norm? Answer yes or no."""


class LLMJudge:
  """Schema-constrained yes/no from a StructuredLanguageModel, cached."""

  def __init__(self, model: Any, *, tag: str = JUDGE_TAG, seed: int = 0):
    self._model = model
    self._tag = tag
    self._seed = seed
    self._lock = threading.Lock()
    self._cache: dict[tuple[str, str], bool | None] = {}
    self.failures = 0

  def __call__(self, norm: str, target: str) -> bool | None:
    """True/False, or None when the model gave no valid answer."""
    key = (norm, target)
    with self._lock:
      if key in self._cache:
        return self._cache[key]
    # Imported here so that the metrics load without the model stack.
    from crsec_concordia.models.base import StructuredOutputError  # pylint: disable=import-outside-toplevel
    try:
      answer = self._model.sample_json(
          _JUDGE_PROMPT.format(target=target, norm=norm), JUDGE_SCHEMA,
          max_tokens=16, temperature=0.0, seed=self._seed, tag=self._tag)
      verdict: bool | None = answer["answer"] == "yes"
    except StructuredOutputError as e:
      _LOG.warning("LLM judge gave no valid answer for %r: %s", norm, e)
      verdict = None
    with self._lock:
      if verdict is None:
        self.failures += 1
      self._cache[key] = verdict
    return verdict


class NormMatcher:
  """MEANS and ABOUT relations between texts and a scenario's target norms."""

  def __init__(self, targets: Sequence[TargetNorm], *,
               threshold: float = MATCH_THRESHOLD,
               related_threshold: float = RELATED_THRESHOLD,
               embedder: Any = None, judge: LLMJudge | None = None,
               judge_floor: float = JUDGE_FLOOR):
    if embedder is None:
      from crsec_concordia.embedding import shared_embedder  # pylint: disable=import-outside-toplevel
      embedder = shared_embedder()
    self.targets = list(targets)
    self.threshold = threshold
    self.related_threshold = related_threshold
    self.judge = judge
    self.judge_floor = judge_floor
    self._embedder = embedder
    self._means: dict[str, frozenset[str]] = {}
    self._about: dict[str, frozenset[str]] = {}

  def describe(self) -> dict[str, Any]:
    return {"rule": "cosine(all-MiniLM-L6-v2) >= threshold",
            "threshold": self.threshold,
            "related_threshold": self.related_threshold,
            "judge": self.judge is not None,
            "judge_floor": self.judge_floor if self.judge else None,
            "judge_failures": self.judge.failures if self.judge else 0}

  def similarity(self, texts: Sequence[str]) -> np.ndarray:
    """Cosine of each text with each target's text, (len(texts), targets)."""
    return self._embedder.similarity(list(texts),
                                     [t.text for t in self.targets])

  def means_many(self, texts: Sequence[str]) -> list[frozenset[str]]:
    """For each text, the ids of the targets it means."""
    todo = [t for t in dict.fromkeys(texts) if t not in self._means]
    if todo and self.targets:
      sims = self.similarity(todo)
      for text, row in zip(todo, sims):
        ids = set()
        for target, sim in zip(self.targets, row):
          if self.judge is not None and sim >= self.judge_floor:
            verdict = self.judge(text, target.text)
            ok = sim >= self.threshold if verdict is None else verdict
          else:
            ok = sim >= self.threshold
          if ok:
            ids.add(target.id)
        self._means[text] = frozenset(ids)
    return [self._means.get(t, frozenset()) for t in texts]

  def means(self, text: str,
            target_id: str | None = None) -> bool | frozenset[str]:
    """Targets `text` means; with `target_id`, whether it means that one."""
    ids = self.means_many([text])[0]
    return ids if target_id is None else target_id in ids

  def about_many(self, texts: Sequence[str]) -> list[frozenset[str]]:
    """For each text, the ids of the targets it concerns (looser)."""
    todo = [t for t in dict.fromkeys(texts) if t and t not in self._about]
    if todo and self.targets:
      refs: list[str] = []
      owner: list[str] = []
      for target in self.targets:
        for ref in (target.text, *target.behaviour_texts):
          refs.append(ref)
          owner.append(target.id)
      sims = self._embedder.similarity(todo, refs)
      for text, row in zip(todo, sims):
        self._about[text] = frozenset(
            owner[j] for j, s in enumerate(row) if s >= self.related_threshold)
    return [self._about.get(t, frozenset()) for t in texts]

"""The optional LLM judge: MEANS decided in words by a language model.

The matcher's rule (matching.py) cannot see most of what the labels'
standard asks (a narrowed scope scores like a paraphrase); a capable model
can read it. With a judge, the matcher puts every pair scoring at least
JUDGE_FLOOR to it and its yes/no decides. Kept apart from the matcher so
that measuring needs no model stack unless a judge is used. Its question and
schema are the operations' (operations/judge_means.py).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from crsec_concordia.models.base import StructuredOutputError
from crsec_concordia.operations.judge_means import JUDGE_SCHEMA, prompt

_LOG = logging.getLogger(__name__)

JUDGE_TAG = "MetricsJudge"


class LLMJudge:
  """Schema-constrained yes/no from a StructuredLanguageModel, cached."""

  def __init__(self, model: Any, *, tag: str = JUDGE_TAG, seed: int = 0,
               identity: Any = None):
    """`identity`: the model's ModelIdentity (calibration/identity.py), by
    which a report finds the judge's measured error in its calibration."""
    self._model = model
    self.identity = identity
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
    try:
      answer = self._model.sample_json(
          prompt(target, norm), JUDGE_SCHEMA,
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

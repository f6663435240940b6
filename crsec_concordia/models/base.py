"""The language-model interface every CRSEC operation relies on.

Concordia's `LanguageModel` offers free text and multiple choice. CRSEC needs
more: every operation answers against a JSON schema, and every call is
attributed to the component that made it so that the cost of each module can
be measured. `StructuredLanguageModel` adds both; `TaggedModel` is the view a
component holds, so attribution needs no shared mutable "current caller".
"""

from __future__ import annotations

import abc
import dataclasses
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any, override

from concordia.language_model import language_model

JsonSchema = Mapping[str, Any]

DEFAULT_TAG = "other"


class StructuredOutputError(Exception):
  """The model kept answering text that does not satisfy the schema.

  Raised after the retries are spent. Callers record it (with `raw`) in the
  run's log and go on without the result: no default answer is invented.
  """

  def __init__(self, message: str, raw: str, attempts: int):
    super().__init__(message)
    self.raw = raw
    self.attempts = attempts


class EndpointError(Exception):
  """The endpoint cannot be used (unreachable, bad key, unknown model).

  Its message is one line meant for a person: what was tried, why it failed
  and how to fix it. The CLI prints it and exits with code 2.
  """


@dataclasses.dataclass
class UsageCounts:
  calls: int = 0
  cached_calls: int = 0
  failed_calls: int = 0
  prompt_tokens: int = 0
  completion_tokens: int = 0
  # Of prompt_tokens, those the server read from its prompt cache.
  reused_prompt_tokens: int = 0

  def to_dict(self) -> dict[str, int]:
    return dataclasses.asdict(self)


class UsageMeter:
  """Thread-safe counters of calls and real server tokens, per tag."""

  def __init__(self):
    self._lock = threading.Lock()
    self._by_tag: dict[str, UsageCounts] = {}

  def record(
      self,
      tag: str,
      *,
      prompt_tokens: int = 0,
      completion_tokens: int = 0,
      reused_prompt_tokens: int = 0,
      cached: bool = False,
      failed: bool = False,
  ) -> None:
    with self._lock:
      counts = self._by_tag.setdefault(tag, UsageCounts())
      if failed:
        counts.failed_calls += 1
        return
      if cached:
        counts.cached_calls += 1
      else:
        counts.calls += 1
        counts.prompt_tokens += prompt_tokens
        counts.completion_tokens += completion_tokens
        counts.reused_prompt_tokens += reused_prompt_tokens

  def by_tag(self) -> dict[str, dict[str, int]]:
    with self._lock:
      return {tag: c.to_dict() for tag, c in sorted(self._by_tag.items())}

  def totals(self) -> dict[str, int]:
    total = UsageCounts()
    with self._lock:
      for c in self._by_tag.values():
        for field in dataclasses.fields(UsageCounts):
          setattr(total, field.name,
                  getattr(total, field.name) + getattr(c, field.name))
    return total.to_dict()


def stable_seed(*parts: Any) -> int:
  """A seed derived from its parts, the same in every process and run.

  Seeding each call from the run seed and the prompt makes sampling
  independent of the order in which parallel threads reach the server.
  """
  digest = hashlib.sha256(
      json.dumps(parts, sort_keys=True, default=str).encode()).digest()
  return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class StructuredLanguageModel(language_model.LanguageModel, abc.ABC):
  """A Concordia language model with schema-constrained JSON answers."""

  usage: UsageMeter

  @abc.abstractmethod
  def sample_json(
      self,
      prompt: str,
      schema: JsonSchema,
      *,
      max_tokens: int = 512,
      temperature: float = 0.2,
      seed: int | None = None,
      tag: str = DEFAULT_TAG,
  ) -> dict[str, Any]:
    """Returns an object that validates against `schema`.

    Raises:
      StructuredOutputError: no valid answer after the retries.
    """

  @abc.abstractmethod
  def _sample_text(self, prompt: str, *, tag: str, **kwargs) -> str:
    """`sample_text` with the tag of the calling component."""

  @abc.abstractmethod
  def _sample_choice(
      self, prompt: str, responses: Sequence[str], *, tag: str,
      seed: int | None = None) -> tuple[int, str, Mapping[str, Any]]:
    """`sample_choice` with the tag of the calling component."""

  @override
  def sample_text(self, prompt: str, **kwargs) -> str:
    return self._sample_text(prompt, tag=DEFAULT_TAG, **kwargs)

  @override
  def sample_choice(
      self, prompt: str, responses: Sequence[str], *,
      seed: int | None = None) -> tuple[int, str, Mapping[str, Any]]:
    return self._sample_choice(prompt, responses, tag=DEFAULT_TAG, seed=seed)

  def tagged(self, tag: str) -> "TaggedModel":
    """A view of this model whose calls are counted under `tag`."""
    return TaggedModel(self, tag)


class TaggedModel(language_model.LanguageModel):
  """A model view that attributes every call to one component."""

  def __init__(self, base: StructuredLanguageModel, tag: str):
    self._base = base
    self.tag = tag

  @property
  def base(self) -> StructuredLanguageModel:
    return self._base

  @property
  def usage(self) -> UsageMeter:
    return self._base.usage

  @override
  def sample_text(self, prompt: str, **kwargs) -> str:
    """Concordia's `sample_text` (same keyword arguments), counted under tag."""
    return self._base._sample_text(  # pylint: disable=protected-access
        prompt, tag=self.tag, **kwargs)

  @override
  def sample_choice(
      self, prompt: str, responses: Sequence[str], *,
      seed: int | None = None) -> tuple[int, str, Mapping[str, Any]]:
    return self._base._sample_choice(  # pylint: disable=protected-access
        prompt, responses, tag=self.tag, seed=seed)

  def sample_json(self, prompt: str, schema: JsonSchema, **kwargs
                  ) -> dict[str, Any]:
    kwargs.setdefault("tag", self.tag)
    return self._base.sample_json(prompt, schema, **kwargs)

  def tagged(self, tag: str) -> "TaggedModel":
    return TaggedModel(self._base, tag)


def as_structured(model: language_model.LanguageModel) -> StructuredLanguageModel:
  """Returns the structured model behind `model` or explains why there is none."""
  if isinstance(model, TaggedModel):
    return model.base
  if isinstance(model, StructuredLanguageModel):
    return model
  raise TypeError(
      f"{type(model).__name__} has no schema-constrained output; CRSEC "
      "components need a crsec_concordia.models.StructuredLanguageModel "
      "(OpenAICompatibleModel, or ScriptedModel in tests).")

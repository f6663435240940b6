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
import logging
import re
import threading
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, override, runtime_checkable

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


# Query parameters that carry a secret (Azure's `api-key`, a signed URL's
# `sig`, a `token`), by part of their name.
_SECRET_WORDS = "key|token|secret|passw|sig|auth"
_SECRET_PARAM = re.compile(_SECRET_WORDS, re.I)
REDACTED = "***"


def _params(query: str) -> list[tuple[str, str | None]]:
  """A query's (name, value) pairs in order; value None for a bare name."""
  return [(name, value if sep else None) for name, sep, value in (
      part.partition("=") for part in query.split("&") if part)]


def redact_url(url: str | None) -> str | None:
  """`url` as it may be recorded or printed: without the credentials of a
  user part (https://user:pass@host/v1 -> https://***@host/v1) or the
  values of query parameters named like a key or token."""
  if not url:
    return url
  try:
    parts = urllib.parse.urlsplit(url)
  except ValueError:  # Unparseable (a bad IPv6 host): cut what looks secret.
    return re.sub(r"//[^/?#]*@", f"//{REDACTED}@", url.split("?")[0])
  netloc = parts.netloc
  if "@" in netloc:
    netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
  query = "&".join(
      name if value is None else
      f"{name}={REDACTED if _SECRET_PARAM.search(name) else value}"
      for name, value in _params(parts.query))
  return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query))


def redact_text(text: str, url: str | None) -> str:
  """`text` (an error message, say) with `url` and its credentials as
  redact_url shows them."""
  if not url:
    return text
  text = text.replace(url, redact_url(url) or "")
  try:
    parts = urllib.parse.urlsplit(url)
  except ValueError:
    return text
  userinfo = parts.netloc.rpartition("@")[0]
  if userinfo:
    text = text.replace(userinfo + "@", f"{REDACTED}@")
  for name, value in _params(parts.query):
    if value and len(value) >= 4 and _SECRET_PARAM.search(name):
      text = text.replace(value, REDACTED)
  return text


# In free text (a log line): a URL's user part, and the value of a query
# parameter named like a secret.
_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/?#@\s]+@", re.I)
_SECRET_VALUE = re.compile(
    rf"([?&][^=&\s]*(?:{_SECRET_WORDS})[^=&\s]*=)[^&#\s\"']+", re.I)


def scrub(value: Any) -> Any:
  """`value` with the credentials of any URL in it as `***`; a value
  without any (numbers included) is returned as it is."""
  if isinstance(value, (int, float)):
    return value
  text = str(value)
  clean = _SECRET_VALUE.sub(rf"\1{REDACTED}", _USERINFO.sub(
      rf"\1{REDACTED}@", text))
  return value if clean == text else clean


class _ScrubCredentials(logging.Filter):
  """Takes URL credentials out of a logger's records: the HTTP client logs
  every request's full URL (at INFO, shown by `crsec -v`), user part and
  all."""

  def filter(self, record: logging.LogRecord) -> bool:
    record.msg = scrub(record.msg)
    if isinstance(record.args, tuple):
      record.args = tuple(scrub(a) for a in record.args)
    return True


_CLIENT_LOGGERS = ("httpx", "httpx2", "httpcore", "openai._base_client")


def scrub_client_logs() -> None:
  """Installs the filter on the HTTP client's loggers (once)."""
  for name in _CLIENT_LOGGERS:
    logger = logging.getLogger(name)
    if not any(isinstance(f, _ScrubCredentials) for f in logger.filters):
      logger.addFilter(_ScrubCredentials())


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
  """Thread-safe counters of calls and real server tokens, per tag.

  Listeners (`listen`) hear the tag of every call as it is counted, outside
  the lock: a progress display follows a slot's calls as they return.
  """

  def __init__(self):
    self._lock = threading.Lock()
    self._by_tag: dict[str, UsageCounts] = {}
    self._listeners: list[Callable[[str], None]] = []

  def listen(self, listener: Callable[[str], None]) -> Callable[[], None]:
    """Calls `listener(tag)` after each counted call; returns the undo."""
    with self._lock:
      self._listeners.append(listener)

    def stop() -> None:
      with self._lock:
        if listener in self._listeners:
          self._listeners.remove(listener)
    return stop

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
      elif cached:
        counts.cached_calls += 1
      else:
        counts.calls += 1
        counts.prompt_tokens += prompt_tokens
        counts.completion_tokens += completion_tokens
        counts.reused_prompt_tokens += reused_prompt_tokens
      listeners = list(self._listeners)
    for listener in listeners:
      listener(tag)

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


@runtime_checkable
class StructuredModel(Protocol):
  """What a CRSEC operation calls: a JSON answer valid for a schema.

  `StructuredLanguageModel` and its tagged views are such models; any
  other Concordia LanguageModel becomes one through
  `concordia_adapter.as_structured`.
  """

  def sample_json(self, prompt: str, schema: JsonSchema, *,
                  max_tokens: int = 512, temperature: float = 0.2,
                  **kwargs: Any) -> dict[str, Any]:
    ...


class StructuredLanguageModel(language_model.LanguageModel, abc.ABC):
  """A Concordia language model with schema-constrained JSON answers."""

  usage: UsageMeter
  # The requests it sends at once at most (the endpoint's capacity), or
  # None: no bound. Thread pools are sized by it (crsec_concordia/threads.py).
  max_in_flight: int | None = None

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

  @property
  def max_in_flight(self) -> int | None:
    return self._base.max_in_flight

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

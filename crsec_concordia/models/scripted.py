"""A deterministic, rule-driven model for unit tests only (the CLI never uses it).

Rules map a regular expression on the prompt to an answer (text, a dict for
JSON answers, or a function of the prompt, or of the prompt and the schema
for answers whose shape the schema decides). Every call is recorded with its
tag, so tests can assert exactly which components called the model and how
often. Answers are validated against the schema just as a server's would be.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jsonschema

from crsec_concordia.models import base

Answer = str | Mapping[str, Any] | Callable[[str], Any]

# Calls every run makes unless told not to, by the keys their schema asks
# for (the tag is not known to a model served over HTTP), answered when no
# rule (nor the fallback) does: the stated-belief question
# (interviews/stated.py, not imported here: it loads the operations), with
# no rule stated. A test that needs the agents to state rules scripts
# them first.
UNSCRIPTED: Mapping[frozenset[str], Mapping[str, Any]] = {
    frozenset({"rules"}): {"rules": []}}


@dataclasses.dataclass
class Call:
  tag: str
  kind: str  # "text" | "choice" | "json"
  prompt: str
  schema: Mapping[str, Any] | None = None


class NoScriptedAnswer(LookupError):
  """No rule matched a prompt: the test did not script this call."""


class ScriptedModel(base.StructuredLanguageModel):
  """Answers by the first matching rule; rules may be added at any time."""

  def __init__(
      self,
      rules: Sequence[tuple[str, Answer]] = (),
      fallback: Callable[[str, Mapping[str, Any] | None], Any] | None = None,
  ):
    self.usage = base.UsageMeter()
    self.calls: list[Call] = []
    self._rules: list[tuple[re.Pattern[str], Answer]] = []
    self._fallback = fallback
    self._lock = threading.Lock()
    for pattern, answer in rules:
      self.add_rule(pattern, answer)

  def add_rule(self, pattern: str, answer: Answer, first: bool = False) -> None:
    with self._lock:
      rule = (re.compile(pattern, re.S | re.I), answer)
      if first:
        self._rules.insert(0, rule)
      else:
        self._rules.append(rule)

  def calls_by_tag(self) -> dict[str, int]:
    with self._lock:
      counts: dict[str, int] = {}
      for c in self.calls:
        counts[c.tag] = counts.get(c.tag, 0) + 1
      return counts

  def _answer(self, prompt: str, schema: Mapping[str, Any] | None) -> Any:
    with self._lock:
      rules = list(self._rules)
    for pattern, answer in rules:
      if pattern.search(prompt):
        if not callable(answer):
          return answer
        takes_schema = len(inspect.signature(answer).parameters) > 1
        return answer(prompt, schema) if takes_schema else answer(prompt)
    if self._fallback is not None:
      return self._fallback(prompt, schema)
    keys = frozenset((schema or {}).get("properties") or ())
    if keys in UNSCRIPTED:
      return dict(UNSCRIPTED[keys])
    raise NoScriptedAnswer(f"no scripted answer for: {prompt[-300:]!r}")

  def _record(self, call: Call) -> None:
    with self._lock:
      self.calls.append(call)
    self.usage.record(call.tag, prompt_tokens=len(call.prompt.split()),
                      completion_tokens=1)

  def _sample_text(self, prompt: str, *, tag: str, **kwargs) -> str:
    self._record(Call(tag, "text", prompt))
    answer = self._answer(prompt, None)
    text = answer if isinstance(answer, str) else json.dumps(answer)
    for t in kwargs.get("terminators", ()) or ():
      if t and t in text:
        text = text[:text.index(t)]
    return text

  def _sample_choice(self, prompt: str, responses: Sequence[str], *,
                     tag: str, seed: int | None = None
                     ) -> tuple[int, str, Mapping[str, Any]]:
    del seed
    self._record(Call(tag, "choice", prompt))
    answer = self._answer(prompt, None)
    if answer not in responses:
      raise NoScriptedAnswer(f"scripted choice {answer!r} not in {responses}")
    return list(responses).index(answer), answer, {}

  def sample_json(self, prompt: str, schema: base.JsonSchema, *,
                  max_tokens: int = 512, temperature: float = 0.2,
                  seed: int | None = None, tag: str = base.DEFAULT_TAG
                  ) -> dict[str, Any]:
    del max_tokens, temperature, seed
    self._record(Call(tag, "json", prompt, schema))
    answer = self._answer(prompt, schema)
    if isinstance(answer, str):
      try:
        answer = json.loads(answer)
      except json.JSONDecodeError:
        self.usage.record(tag, failed=True)
        raise base.StructuredOutputError("scripted answer is not JSON",
                                         raw=answer, attempts=1) from None
    try:
      jsonschema.validate(answer, schema)
    except jsonschema.ValidationError as e:
      self.usage.record(tag, failed=True)
      raise base.StructuredOutputError(
          f"scripted answer fails the schema: {e.message}",
          raw=json.dumps(answer), attempts=1) from None
    return dict(answer)

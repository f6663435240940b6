"""Any Concordia LanguageModel as the structured model CRSEC operations need.

Every CRSEC operation asks for a JSON answer valid for a schema
(`sample_json`). The project's own OpenAI-compatible model has the server
enforce the schema; a Concordia `LanguageModel` (one of Concordia's own
wrappers, a user's) only samples text. So the schema is stated in the
prompt, the answer's JSON object is taken from the text (code fences and
talk around it aside), validated with jsonschema, and an invalid answer is
asked for again, saying what was wrong. After the retries the call raises
StructuredOutputError with the raw text, which the operations record as a
failure: no default answer is ever made up. `as_structured` is how every
component and prefab gets there from whatever model it was given.

Calls are counted per tag, as with every model of the project; tokens are
counted only where the wrapped model reports them (a Concordia
LanguageModel does not, so they stay 0 and the usage says calls only).
"""

from __future__ import annotations

import json
import re
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema
from concordia.language_model import language_model

from crsec_concordia.models import base, stopping
from crsec_concordia.models.scripts import foreign_scripts

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def json_object_in(text: str) -> Any:
  """The first JSON value in `text` that decodes, fences aside.

  Raises:
    ValueError: there is none.
  """
  candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
  decoder = json.JSONDecoder()
  for candidate in candidates:
    for start in (i for i, c in enumerate(candidate) if c in "{["):
      try:
        value, _ = decoder.raw_decode(candidate[start:])
        return value
      except json.JSONDecodeError:
        continue
  raise ValueError("the answer holds no JSON object")


class ConcordiaModelAdapter(base.StructuredLanguageModel):
  """Serves CRSEC's structured calls with any Concordia LanguageModel."""

  def __init__(self, model: language_model.LanguageModel, *,
               retries: int = 2, seed: int | None = None):
    """Wraps `model`.

    Args:
      model: any Concordia LanguageModel (only `sample_text` and
        `sample_choice` are used).
      retries: how many more times an invalid answer is asked for.
      seed: the run seed; each call's seed derives from it and the prompt
        (passed on to the model, which may or may not honour it).
    """
    self.usage = base.UsageMeter()
    self._model = model
    self._retries = retries
    self._seed = seed

  @property
  def wrapped(self) -> language_model.LanguageModel:
    return self._model

  def _seed_for(self, prompt: str, seed: int | None) -> int | None:
    if seed is not None:
      return seed
    return None if self._seed is None else base.stable_seed(self._seed,
                                                             prompt)

  def _attempt(self, prompt: str, **kwargs) -> str:
    """One `sample_text` of the wrapped model (a subclass bounds it)."""
    stopping.refuse_if_stopping()
    return self._model.sample_text(prompt, **kwargs)

  def _record(self, tag: str, exchanges: Sequence[tuple[str, str]],
              failed: bool = False) -> None:
    """Counts one call, made of `exchanges` (prompt, answer); a Concordia
    model reports no tokens, so none are counted here."""
    del exchanges
    self.usage.record(tag, failed=failed)

  def sample_json(self, prompt: str, schema: base.JsonSchema, *,
                  max_tokens: int = 512, temperature: float = 0.2,
                  seed: int | None = None,
                  tag: str = base.DEFAULT_TAG) -> dict[str, Any]:
    stated = (f"{prompt}\n\nAnswer with one JSON object and nothing else, "
              f"valid for this JSON schema:\n{json.dumps(schema)}")
    asked, raw = stated, ""
    exchanges: list[tuple[str, str]] = []
    for _ in range(1 + self._retries):
      raw = self._attempt(
          asked, max_tokens=max_tokens, temperature=temperature,
          seed=self._seed_for(asked, seed))
      exchanges.append((asked, raw))
      try:
        answer = json_object_in(raw)
        jsonschema.validate(answer, schema)
        if foreign := foreign_scripts(answer, prompt):
          raise ValueError(f"letters of a script the question does not use: "
                           f"{', '.join(foreign)}")
      except (ValueError, jsonschema.ValidationError) as e:
        why = e.message if isinstance(e, jsonschema.ValidationError) else str(e)
        asked = (f"{stated}\n\nYour answer was not valid ({why}). Answer "
                 "again with the JSON object only.")
        continue
      self._record(tag, exchanges)
      return answer
    self._record(tag, exchanges, failed=True)
    raise base.StructuredOutputError(
        f"no answer valid for the schema after {1 + self._retries} tries",
        raw=raw, attempts=1 + self._retries)

  def _sample_text(self, prompt: str, *, tag: str, **kwargs) -> str:
    text = self._attempt(prompt, **kwargs)
    self._record(tag, [(prompt, text)])
    return text

  def _sample_choice(self, prompt: str, responses: Sequence[str], *,
                     tag: str, seed: int | None = None
                     ) -> tuple[int, str, Mapping[str, Any]]:
    stopping.refuse_if_stopping()
    result = self._model.sample_choice(prompt, responses, seed=seed)
    self._record(tag, [(prompt, result[1])])
    return result


_ADAPTERS: weakref.WeakKeyDictionary[language_model.LanguageModel,
                                     ConcordiaModelAdapter] = (
                                         weakref.WeakKeyDictionary())
_ADAPTERS_LOCK = threading.Lock()


def as_structured(model: language_model.LanguageModel
                  ) -> base.StructuredLanguageModel:
  """The structured model behind `model`.

  Any other Concordia LanguageModel (one of Concordia's own wrappers, a
  user's) is served through a ConcordiaModelAdapter: the schema stated in
  the prompt, the answer validated and asked for again. One adapter per
  model, so that every component of a simulation counts its calls in one
  place.
  """
  if isinstance(model, base.TaggedModel):
    return model.base
  if isinstance(model, base.StructuredLanguageModel):
    return model
  if not isinstance(model, language_model.LanguageModel):
    raise TypeError(f"{type(model).__name__} is not a Concordia "
                    "LanguageModel; CRSEC components need one")
  with _ADAPTERS_LOCK:
    adapter = _ADAPTERS.get(model)
    if adapter is None:
      adapter = _ADAPTERS[model] = ConcordiaModelAdapter(model)
  return adapter


def structured_view(model: language_model.LanguageModel
                    ) -> base.StructuredModel:
  """`model` if it answers `sample_json` (a structured model or a tagged
  view of one), else the adapter for it (`as_structured`): what the CRSEC
  components keep, so that any Concordia LanguageModel serves them."""
  if isinstance(model, base.StructuredModel):
    return model
  return as_structured(model)

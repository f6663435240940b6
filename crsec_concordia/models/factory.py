"""A Concordia LanguageModel of your own: `--model-factory module:function`.

The function is called with no arguments and returns any Concordia
`LanguageModel` (a lab's wrapper, one of Concordia's own, a test double).
It is served as the run's model the way an endpoint's is: through the
structured adapter (concordia_adapter.py: each operation's schema stated
in the prompt, the answer validated and asked for again, a persistent
failure recorded), with its calls counted per component and answered
from the response cache on a rerun, keyed by the factory's name. A
Concordia model reports no tokens, so they are estimated from the text
(`CHARS_PER_TOKEN`), and run.json says so. An exception the user's model
raises becomes an EndpointError naming the factory, as an endpoint's
failed request does: the referee records it as a failed judgement, and
anywhere else it stops the command with that one line (a run stops
resumable).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from concordia.language_model import language_model

from crsec_concordia import threads, user_code
from crsec_concordia.errors import UserError
from crsec_concordia.models import base
from crsec_concordia.models.cache import ResponseCache, cache_key
from crsec_concordia.models.concordia_adapter import ConcordiaModelAdapter

FACTORY_FLAG = "--model-factory"
FACTORY_FORM = "module:function (a function of your module returning a Concordia " \
    "LanguageModel)"
KIND = "factory"  # run.json's model `endpoint` for a factory's model.
# Tokens estimated per character of text: OpenAI's rule of thumb for
# English (about four characters a token), for models that report none.
CHARS_PER_TOKEN = 4
ESTIMATED = f"estimated, {CHARS_PER_TOKEN} characters a token"
_T = TypeVar("_T")


def estimate_tokens(text: str) -> int:
  return math.ceil(len(text) / CHARS_PER_TOKEN)


def load_factory(spec: str, where: str | None = None):
  """The function `spec` names (imported, not called); UserError (one
  line) when it cannot be."""
  return user_code.import_named(spec, FACTORY_FLAG, FACTORY_FORM, where)


def build(spec: str, where: str | None = None) -> language_model.LanguageModel:
  """The model the factory `spec` returns; UserError when the factory
  fails or returns something else than a Concordia LanguageModel."""
  factory = load_factory(spec, where)
  try:
    model = factory()
  except Exception as e:  # The user's factory failed.
    raise UserError(f"{FACTORY_FLAG} {spec}: calling it failed ({type(e).__name__}: "
                    f"{e}); fix the factory") from None
  if not isinstance(model, language_model.LanguageModel):
    raise UserError(f"{FACTORY_FLAG} {spec}: it returned a {type(model).__name__}, "
                    "not a Concordia LanguageModel (concordia.language_model."
                    "language_model.LanguageModel): return one")
  return model


class FactoryModel(ConcordiaModelAdapter):
  """The user's model as the run's: adapted, counted, cached, bounded."""

  def __init__(self, model: language_model.LanguageModel, name: str, *,
               seed: int | None = None, cache: ResponseCache | None = None,
               max_in_flight: int | None = None):
    """Serves `model`, the factory `name`'s.

    Args:
      model: the factory's Concordia LanguageModel.
      name: the factory's module:function, the cache's scope.
      seed: the run seed (each call's seed derives from it and the prompt).
      cache: a response cache; with it a seeded rerun replays.
      max_in_flight: calls at once at most (default: the model's own
        `max_in_flight` attribute, else no bound).
    """
    super().__init__(model, seed=seed)
    self.name = name
    self.cache = cache
    bound = max_in_flight or getattr(model, "max_in_flight", None)
    self.max_in_flight = int(bound) if bound else None
    self._in_flight = (threads.Permits(self.max_in_flight)
                       if self.max_in_flight else contextlib.nullcontext())

  def _bounded(self, call: Callable[[], _T]) -> _T:
    """One call of the user's model; its exception a lost dependency."""
    try:
      with self._in_flight:
        return call()
    except Exception as e:  # The user's model failed: as an outage.
      raise base.EndpointError(
          f"the model of {FACTORY_FLAG} {self.name} failed ({type(e).__name__}: "
          f"{e}); fix it (`crsec resume RUN_DIR` continues an interrupted "
          "run)") from e

  def _attempt(self, prompt: str, **kwargs) -> str:
    return self._bounded(lambda: self._model.sample_text(prompt, **kwargs))

  def _record(self, tag: str, exchanges: Sequence[tuple[str, str]],
              failed: bool = False) -> None:
    """Counts the call with its tokens estimated from every attempt."""
    self.usage.record(
        tag, failed=failed,
        prompt_tokens=sum(estimate_tokens(p) for p, _ in exchanges),
        completion_tokens=sum(estimate_tokens(a) for _, a in exchanges))

  def _replayed(self, tag: str, kind: str, prompt: str,
                answer: Callable[[], str], **settings: Any) -> str:
    """The cached answer to this call, else `answer()` stored; only valid
    answers are stored (a failure raises past the store)."""
    if self.cache is None:
      return answer()
    key = cache_key(scope=f"{KIND}:{self.name}", kind=kind, prompt=prompt,
                    **settings)
    hit = self.cache.get(key)
    if hit is not None:
      self.usage.record(tag, cached=True)
      return hit[0]
    text = answer()
    self.cache.put(key, text, 0, 0)
    return text

  def sample_json(self, prompt: str, schema: base.JsonSchema, *,
                  max_tokens: int = 512, temperature: float = 0.2,
                  seed: int | None = None,
                  tag: str = base.DEFAULT_TAG) -> dict[str, Any]:
    # One entry per logical call, keyed by what was asked (the adapter's
    # retries are not cached, only the valid answer they reached).
    return json.loads(self._replayed(
        tag, "json", prompt, lambda: json.dumps(super(
            FactoryModel, self).sample_json(
                prompt, schema, max_tokens=max_tokens,
                temperature=temperature, seed=seed, tag=tag)),
        schema=schema, max_tokens=max_tokens, temperature=temperature,
        seed=self._seed_for(prompt, seed)))

  def _sample_text(self, prompt: str, *, tag: str, **kwargs) -> str:
    settings = {k: sorted(v) if isinstance(v, (set, frozenset)) else v
                for k, v in kwargs.items()}
    return self._replayed(
        tag, "text", prompt,
        lambda: super(FactoryModel, self)._sample_text(prompt, tag=tag,
                                                        **kwargs),
        **settings)

  def _sample_choice(self, prompt: str, responses: Sequence[str], *,
                     tag: str, seed: int | None = None
                     ) -> tuple[int, str, Mapping[str, Any]]:
    def choose() -> str:
      _, choice, _ = self._bounded(lambda: self._model.sample_choice(
          prompt, responses, seed=seed))
      self._record(tag, [(prompt, choice)])
      return choice
    choice = self._replayed(tag, "choice", prompt, choose,
                            responses=list(responses), seed=seed)
    return list(responses).index(choice), choice, {}

"""Which model a run talks to: flags, then CRSEC_* and OPENAI_* variables.

With no base URL anywhere, the embedded llama.cpp model is started; with
`--model-factory module:function`, the user's own Concordia model
(models/factory.py) is the run's.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from crsec_concordia import user_code
from crsec_concordia.errors import UserError
from crsec_concordia.models import embedded
from crsec_concordia.models import factory as factory_lib
from crsec_concordia.models.base import (EndpointError, StructuredLanguageModel,
                                         redact_url)
from crsec_concordia.models.cache import ResponseCache
from crsec_concordia.models.call_log import CallLog
from crsec_concordia.models.openai_compatible import SCHEMA_MODES, OpenAICompatibleModel


def _env(*names: str) -> str | None:
  for name in names:
    if value := os.environ.get(name):
      return value
  return None


# Requests sent at once to an OpenAI-compatible endpoint, by default: a
# server that takes more (vLLM batches hundreds) is told so with
# --max-in-flight; one with fewer slots queues the rest with the client's
# timeout running.
DEFAULT_IN_FLIGHT = 32


def _max_in_flight(flag: int | None) -> int | None:
  """--max-in-flight, else CRSEC_MAX_IN_FLIGHT, else None (the endpoint
  kind's default); a person's typo is one line."""
  where, value = ("--max-in-flight", flag) if flag is not None else (
      "CRSEC_MAX_IN_FLIGHT", _env("CRSEC_MAX_IN_FLIGHT"))
  if value is None:
    return None
  try:
    count = int(value)
  except ValueError:
    count = 0
  if count < 1:
    raise EndpointError(
        f"{where} {value!r} is not a whole number of requests of at least 1: "
        f"use e.g. {DEFAULT_IN_FLIGHT}.")
  return count


def _timeout(flag: float | None) -> float:
  """--timeout, else CRSEC_TIMEOUT, else 180 s; a person's typo is one line."""
  where, value = ("--timeout", flag) if flag is not None else (
      "CRSEC_TIMEOUT", _env("CRSEC_TIMEOUT"))
  if value is None:
    return 180.0
  try:
    seconds = float(value)
  except ValueError:
    seconds = 0.0
  if not seconds > 0:  # Also refuses nan.
    raise EndpointError(
        f"{where} {value!r} is not a positive number of seconds: use e.g. "
        "180.")
  return seconds


@dataclasses.dataclass
class EndpointConfig:
  """An endpoint, a model factory, or None everywhere for the embedded
  model."""
  base_url: str | None = None
  api_key: str | None = None
  model: str | None = None
  schema_mode: str | None = None
  timeout: float = 180.0
  # The embedded model already serving on this loopback URL (a sweep's
  # per-node host starts one and shares it: two llama.cpp servers on the
  # same cores are about ten times slower), instead of one per process.
  embedded_base_url: str | None = None
  # Requests sent at once at most (the others wait in the client, and the
  # run's thread pools are sized by it); None: the endpoint kind's default
  # (`in_flight`).
  max_in_flight: int | None = None
  # --model-factory's module:function (models/factory.py), and the
  # directory it is imported from (a sweep's worker runs elsewhere).
  factory: str | None = None
  factory_dir: str | None = None

  @classmethod
  def resolve(cls, base_url: str | None = None, api_key: str | None = None,
              model: str | None = None, schema_mode: str | None = None,
              timeout: float | None = None,
              max_in_flight: int | None = None,
              factory: str | None = None) -> "EndpointConfig":
    """Flags win over CRSEC_* variables, which win over OPENAI_* ones; a
    model factory is checked now (imported, not called)."""
    if factory is not None:
      if base_url:
        raise UserError(f"{factory_lib.FACTORY_FLAG} and --base-url both name the "
                        "run's model: give one")
      factory_lib.load_factory(factory)
      return cls(factory=factory, factory_dir=os.getcwd(),
                 timeout=_timeout(timeout),
                 max_in_flight=_max_in_flight(max_in_flight))
    config = cls(
        base_url=base_url or _env("CRSEC_BASE_URL", "OPENAI_BASE_URL"),
        api_key=api_key or _env("CRSEC_API_KEY", "OPENAI_API_KEY"),
        model=model or _env("CRSEC_MODEL", "OPENAI_MODEL"),
        schema_mode=schema_mode or _env("CRSEC_SCHEMA_MODE"),
        timeout=_timeout(timeout),
        max_in_flight=_max_in_flight(max_in_flight),
    )
    if config.schema_mode and config.schema_mode not in SCHEMA_MODES:
      raise EndpointError(
          f"schema mode {config.schema_mode!r} is unknown: use one of "
          f"{', '.join(SCHEMA_MODES)} (CRSEC_SCHEMA_MODE or --schema-mode).")
    if config.base_url and not config.model:
      raise EndpointError(
          f"an endpoint is set ({redact_url(config.base_url)}) but no model "
          "name: pass --model or set CRSEC_MODEL (e.g. the name vLLM or "
          "Ollama serves).")
    return config

  @classmethod
  def of_run(cls, described: Any, fix: str = f"pass {factory_lib.FACTORY_FLAG}"
             ) -> "EndpointConfig | None":
    """The factory a run's model came from (run.json's `model`), to use
    again, or None: the run's model was an endpoint's or the embedded one,
    which the flags and the environment name.

    Raises:
      UserError: the factory cannot be imported here (one line naming it;
        `fix` says how to give another model).
    """
    if (not isinstance(described, Mapping)
        or described.get("endpoint") != factory_lib.KIND):
      return None
    spec = str(described.get("model"))
    user_code.import_again(spec, factory_lib.FACTORY_FLAG, factory_lib.FACTORY_FORM, fix)
    return cls(factory=spec, factory_dir=os.getcwd(),
               max_in_flight=described.get("max_in_flight"))

  @property
  def embedded(self) -> bool:
    return not self.base_url and not self.factory

  @property
  def in_flight(self) -> int | None:
    """The bound on requests at once: `max_in_flight`, else the embedded
    server's slots, else DEFAULT_IN_FLIGHT (a factory's model: its own
    `max_in_flight`, else none)."""
    if self.max_in_flight or self.factory:
      return self.max_in_flight
    return (embedded.ServerSettings().n_parallel if self.embedded
            else DEFAULT_IN_FLIGHT)

  def describe(self) -> dict[str, Any]:
    """What a run records about its model (never the key, nor credentials
    in the base URL); a factory's by its module:function, its tokens said
    to be estimated."""
    if self.factory:
      return {"endpoint": factory_lib.KIND, "model": self.factory,
              "tokens": factory_lib.ESTIMATED,
              "max_in_flight": self.max_in_flight}
    if self.embedded:
      return {"endpoint": "embedded", "model": embedded.MODEL_NAME,
              "sha256": embedded.MODEL_SHA256,
              "max_in_flight": self.in_flight}
    return {"endpoint": redact_url(self.base_url), "model": self.model,
            "schema_mode": self.schema_mode or "json_schema",
            "max_in_flight": self.in_flight}


def make_model(
    config: EndpointConfig,
    *,
    seed: int | None = None,
    cache_path: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    check: bool = True,
) -> StructuredLanguageModel:
  """Builds the model, starting the embedded server if no endpoint is set
  (with a response cache, on the first call the cache cannot answer), or
  calling the model factory.

  With `check`, the endpoint is asked for its models first, so a wrong URL
  or key fails here with one clear line rather than mid-run.
  """
  cache = ResponseCache(cache_path) if cache_path else None
  if config.factory:
    return factory_lib.FactoryModel(
        factory_lib.build(config.factory, config.factory_dir),
        config.factory, seed=seed, cache=cache,
        max_in_flight=config.max_in_flight)
  # A diagnostic log of every request (models/call_log.py), by variable
  # only: it records thread order, so it stays out of run directories.
  log_path = _env("CRSEC_CALL_LOG")
  call_log = CallLog(log_path) if log_path else None
  if config.embedded:
    # Before anything else: without the `embedded` extra, one line saying so.
    embedded.llama_cpp()
    url, connect = config.embedded_base_url, None
    if url is None and cache is not None:
      # Started on the first call the cache cannot answer; the model file
      # is checked now, so a missing chunk still fails before the run.
      embedded.ensure_model_file(progress)
      url = "embedded (started on the first uncached call)"
      connect = lambda: embedded.shared_server(progress).base_url
      check = False
    elif url is None:
      url = embedded.shared_server(progress).base_url
    model = OpenAICompatibleModel(
        url, "none", embedded.MODEL_NAME, seed=seed, cache=cache,
        # A llguidance grammar (xllamacpp is built with it): the server's
        # json_schema path ignores the one-line option.
        timeout=config.timeout, schema_mode=config.schema_mode or "grammar",
        cache_scope=f"embedded:{embedded.MODEL_SHA256}", connect=connect,
        call_log=call_log, one_line_json=True, confine_scripts=True,
        max_in_flight=config.in_flight)
  else:
    model = OpenAICompatibleModel(
        config.base_url, config.api_key or "none", config.model, seed=seed,
        cache=cache, timeout=config.timeout,
        schema_mode=config.schema_mode or "json_schema", call_log=call_log,
        max_in_flight=config.in_flight)
  if check:
    model.check()
  return model

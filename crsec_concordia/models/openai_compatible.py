"""A Concordia `LanguageModel` for any OpenAI-compatible chat endpoint.

The same class talks to the embedded llama.cpp server, vLLM, Ollama, a
llama.cpp server or OpenAI. Unlike Concordia's stock OpenAI wrapper it sends
no reasoning-model parameters, honours stop sequences, has the server enforce
choices and schemas (never string matching), retries with backoff through the
`openai` client, and counts the server's own token usage per component.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Literal, get_args

import jsonschema
import openai
from concordia.language_model import language_model

from crsec_concordia import threads
from crsec_concordia.errors import require
from crsec_concordia.models import (base, chat_post, endpoint_errors,
                                    server_progress, stopping, wire)
from crsec_concordia.models.cache import ResponseCache, cache_key
from crsec_concordia.models.call_log import CallLog
from crsec_concordia.models.outage import OutageWatch
from crsec_concordia.models.scripts import confine, foreign_scripts

_log = logging.getLogger(__name__)

SchemaMode = Literal["json_schema", "json_object", "grammar"]
SCHEMA_MODES: tuple[str, ...] = get_args(SchemaMode)

_JSON_SYSTEM = ("You answer with exactly one JSON object that follows the "
                "given schema, and nothing else.")
# llguidance's schema option (llama.cpp's grammar engine) for JSON on one
# line: without it a small model indents every key and bracket, tokens that
# say nothing (docs/trials/models.md#json-on-one-line).
_ONE_LINE_JSON = {"whitespace_flexible": False, "key_separator": ": ",
                  "item_separator": ", "}


class OpenAICompatibleModel(base.StructuredLanguageModel):
  """Chat completions over the `openai` client, thread-safe and cached."""

  def __init__(
      self,
      base_url: str,
      api_key: str,
      model_name: str,
      *,
      seed: int | None = None,
      cache: ResponseCache | None = None,
      timeout: float = 180.0,
      max_retries: int = 3,
      json_retries: int = 2,
      schema_mode: str = "json_schema",
      cache_scope: str | None = None,
      connect: Callable[[], str] | None = None,
      call_log: CallLog | None = None,
      one_line_json: bool = False,
      confine_scripts: bool = False,
      max_in_flight: int | None = None,
  ):
    """Creates the model.

    Args:
      base_url: the endpoint, e.g. http://127.0.0.1:8000/v1.
      api_key: the key; local servers accept any non-empty string.
      model_name: the model the server should use.
      seed: the run seed; each call is seeded from it and its messages, so
        answers do not depend on the order in which threads call.
      cache: a response cache; with it a rerun replays without the server.
      timeout: seconds a request waits for its answer; on a plain-HTTP
        llama.cpp server whose slots show its work moving, one more such
        wait at a time (models/server_progress.py).
      max_retries: retries (with exponential backoff, by the `openai`
        client) on connection errors, timeouts, 429 and 5xx.
      json_retries: new samples after an answer that fails its schema.
      schema_mode: how schemas reach the server: OpenAI's `json_schema`
        response format, `json_object` with a schema (llama-cpp-python), or a
        llama.cpp `grammar` compiled from the schema.
      cache_scope: what identifies the model behind the endpoint in cache
        keys; by default the base URL, so two servers that serve different
        weights under one model name never share answers. The embedded
        server, on a new port each run, passes its weights' hash.
      connect: starts the server and returns its base URL, called once, on
        the first request that the cache cannot answer (then `base_url` is
        only a name until that). A rerun answered wholly from the cache so
        never starts the embedded server (2 GB of memory, seconds).
      call_log: where each request, its answer and the tokens the server
        reused of it are logged (a diagnostic; see models/call_log.py).
      one_line_json: ask the server for JSON without layout whitespace,
        with llguidance's `x-guidance` schema option. Only for llama.cpp
        built with llguidance (the embedded server), and honoured there in
        the `grammar` schema mode only (its json_schema path drops the
        option); OpenAI's strict mode refuses keys it does not know.
      confine_scripts: in the `grammar` schema mode, hold every free-text
        string of an answer to the scripts its prompt is written in, while
        it is written: the rule `sample_json` checks afterwards
        (models/scripts.py), so it refuses no answer that check keeps,
        and saves the new samples of an answer that broke it. Its pattern
        is in the syntax of llguidance (the embedded server's grammars).
      max_in_flight: requests sent at once, the others waiting here. For a
        server with a fixed number of slots (the embedded one has 4): past
        that, requests queue in the server with the client's timeout
        running, and may be sent again with the work on them lost.
    """
    if schema_mode not in SCHEMA_MODES:
      raise ValueError(f"schema_mode must be one of {SCHEMA_MODES}")
    self.base_url = base_url
    # As it may be printed or recorded: no credentials of the URL's.
    self.shown_url = base.redact_url(base_url)
    base.scrub_client_logs()
    self.model_name = model_name
    self.cache_scope = cache_scope or base_url
    self.seed = seed
    self.cache = cache
    self.usage = base.UsageMeter()
    self._json_retries = json_retries
    self._schema_mode = schema_mode
    self._client_args = dict(api_key=api_key or "none", timeout=timeout,
                             max_retries=max_retries)
    self._connect = connect
    self.call_log = call_log
    self._one_line_json = one_line_json
    self._confine_scripts = confine_scripts and schema_mode == "grammar"
    self.max_in_flight = max_in_flight or None
    self._in_flight = (threads.Permits(max_in_flight)
                       if max_in_flight else contextlib.nullcontext())
    self._client_lock = threading.Lock()
    self._client_instance: openai.OpenAI | None = None
    self._poster_instance: chat_post.ChatPoster | None = None
    # Whether the endpoint went down during the slot in flight.
    self.outage = OutageWatch()
    if connect is None:
      self._client_instance = self._make_client(base_url)

  def _make_client(self, base_url: str) -> openai.OpenAI:
    # Proxy variables (HTTP_PROXY, ALL_PROXY) would send even loopback
    # requests to the proxy, which cannot reach a server on this machine.
    http_client = (openai.DefaultHttpxClient(trust_env=False)
                   if wire.is_loopback(base_url) else None)
    return openai.OpenAI(base_url=base_url, http_client=http_client,
                         **self._client_args)

  @property
  def _client(self) -> openai.OpenAI:
    """The client, connecting first if the server is started on demand."""
    client = self._client_instance
    if client is not None:
      return client
    with self._client_lock:
      if self._client_instance is None:
        assert self._connect is not None
        self.base_url = self._connect()
        self.shown_url = base.redact_url(self.base_url)
        self._client_instance = self._make_client(self.base_url)
      return self._client_instance

  @property
  def _poster(self) -> chat_post.ChatPoster:
    """What posts the chat requests (to the server `_client` connects)."""
    poster = self._poster_instance
    if poster is not None:
      return poster
    client = self._client  # Connects first if the server starts on demand.
    with self._client_lock:
      if self._poster_instance is None:
        self._poster_instance = chat_post.ChatPoster(
            str(client.base_url), self._client_args["api_key"],
            timeout=self._client_args["timeout"],
            max_retries=self._client_args["max_retries"],
            trust_env=not wire.is_loopback(self.base_url),
            progress=server_progress.SlotsWatch(str(client.base_url)))
      return self._poster_instance

  # -- plumbing ---------------------------------------------------------------

  def _describe_failure(self, error: Exception) -> base.EndpointError:
    return endpoint_errors.describe_failure(
        error, shown_url=self.shown_url, model_name=self.model_name,
        base_url=self.base_url, api_key=self._client_args["api_key"])

  def check(self) -> list[str]:
    """Lists the served models; raises EndpointError if that fails."""
    try:
      return [m.id for m in self._client.models.list()]
    except openai.OpenAIError as e:
      raise self._describe_failure(e) from None

  def probe(self) -> str | None:
    """One request of one token, not retried and not counted: None when
    the endpoint answers (a 4xx other than 429 is an answer too), else
    what failed, in one line. How a run finds the endpoint back after an
    outage (runs/outage.py)."""
    try:
      self._client.with_options(max_retries=0).chat.completions.create(
          model=self.model_name, max_tokens=1, temperature=0.0,
          messages=[{"role": "user", "content": "ping"}])
    except openai.OpenAIError as e:
      if endpoint_errors.is_outage(e):
        return str(self._describe_failure(e))
    return None

  def _effective_seed(self, seed: int | None, messages: Any) -> int | None:
    if seed is not None:
      return seed
    if self.seed is None:
      return None
    return base.stable_seed(self.seed, messages)

  def _cache_key(
      self,
      messages: list[dict[str, str]],
      *,
      max_tokens: int,
      temperature: float,
      top_p: float,
      stop: Sequence[str],
      seed: int | None,
      schema: Mapping[str, Any] | None,
  ) -> str:
    return cache_key(scope=self.cache_scope, model=self.model_name,
                     messages=messages,
                     max_tokens=max_tokens, temperature=temperature,
                     top_p=top_p, stop=list(stop), seed=seed,
                     schema=schema, mode=self._schema_mode if schema else None,
                     **({"one_line": True} if self._one_line_json and schema
                        else {}))

  def _complete(
      self,
      messages: list[dict[str, str]],
      *,
      tag: str,
      max_tokens: int,
      temperature: float,
      top_p: float,
      stop: Sequence[str],
      seed: int | None,
      schema: Mapping[str, Any] | None = None,
      accept: Callable[[str], bool] = lambda text: True,
      key: str | None = None,
  ) -> str | None:
    """One request (or one cache hit). Returns None if `accept` refuses it.

    `key` overrides the cache key, so that every retry of one logical call
    reads and writes the same entry (see `sample_json`).
    """
    seed = self._effective_seed(seed, messages)
    extra: dict[str, Any] = {}
    response_format = None
    if key is None and self.cache is not None:
      key = self._cache_key(messages, max_tokens=max_tokens,
                            temperature=temperature, top_p=top_p, stop=stop,
                            seed=seed, schema=schema)
    if self.cache is not None and (hit := self.cache.get(key)) is not None:
      self.usage.record(tag, cached=True)
      return hit[0]
    given = schema
    if schema is not None and self._confine_scripts:
      # After the cache key: an answer stored under it passed the same rule.
      schema = confine(schema, "".join(m["content"] for m in messages))
    if schema is not None and self._one_line_json:
      schema = {**schema, "x-guidance": _ONE_LINE_JSON}
    if schema is not None:
      if self._schema_mode == "json_schema":
        response_format = {"type": "json_schema", "json_schema": {
            "name": "answer", "schema": dict(schema), "strict": True}}
      elif self._schema_mode == "json_object":
        response_format = {"type": "json_object", "schema": dict(schema)}
      else:
        # Optional (the `embedded` extra, llama.cpp's own schema compiler):
        # imported late, only for this schema mode.
        xllamacpp = require("xllamacpp", "embedded", "the grammar schema mode")
        extra["grammar"] = xllamacpp.json_schema_to_grammar(json.dumps(schema))
    # Posted as JSON (models/chat_post.py), not through the client's
    # `create`, whose request and answer models cost CPU under the GIL
    # that the other agents' threads need.
    request: dict[str, Any] = dict(
        model=self.model_name, messages=messages, max_tokens=max_tokens,
        temperature=temperature, top_p=top_p)
    if stop:
      request["stop"] = list(stop)[:4]
    if seed is not None:
      request["seed"] = seed
    if response_format is not None:
      request["response_format"] = response_format
    request.update(extra)
    try:
      with self._in_flight:
        # Past the wait for a request slot: a call waiting there when the
        # endpoint went down, or the command is ending, is not sent.
        stopping.refuse_if_stopping()
        self.outage.refuse_if_down()
        started = time.monotonic()
        response = self._poster.post(request)
        text = chat_post.answer_text(response)
    except openai.OpenAIError as e:
      self.usage.record(tag, failed=True)
      failure = self._describe_failure(e)
      if endpoint_errors.is_outage(e):
        self.outage.saw(str(failure))
      raise failure from None
    except ValueError as e:
      # A 200 whose body is not a chat completion's JSON (chat_post raises
      # ValueError), which no retry covers. For a structured call it is
      # an invalid answer (retried, then a recorded failure).
      self.usage.record(tag, failed=True)
      if schema is None:
        raise base.EndpointError(
            f"{self.shown_url} answered with a body that is not JSON ({e}); "
            "check that it is an OpenAI-compatible endpoint") from None
      accept(f"(the response body was not JSON: {e})")
      return None
    usage = response.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    completion_tokens = int(usage.get("completion_tokens") or 0)
    reused = wire.reused_prompt_tokens(response)
    self.usage.record(tag, prompt_tokens=prompt_tokens,
                      completion_tokens=completion_tokens,
                      reused_prompt_tokens=reused)
    if self.call_log is not None:
      self.call_log.write(
          tag=tag, messages=messages, prompt_tokens=prompt_tokens,
          reused_prompt_tokens=reused, completion_tokens=completion_tokens,
          seconds=time.monotonic() - started, answer=text,
          sends=self._poster.last_sends(),
          asked={"seed": seed, "temperature": temperature, "top_p": top_p,
                 "max_tokens": max_tokens, "schema": given})
    if not accept(text):
      return None
    if self.cache is not None:
      self.cache.put(key, text, prompt_tokens, completion_tokens)
    return text

  # -- Concordia's interface --------------------------------------------------

  def _sample_text(
      self,
      prompt: str,
      *,
      tag: str,
      max_tokens: int = language_model.DEFAULT_MAX_TOKENS,
      terminators: Collection[str] = language_model.DEFAULT_TERMINATORS,
      temperature: float = language_model.DEFAULT_TEMPERATURE,
      top_p: float = language_model.DEFAULT_TOP_P,
      top_k: int = language_model.DEFAULT_TOP_K,
      timeout: float = language_model.DEFAULT_TIMEOUT_SECONDS,
      seed: int | None = None,
  ) -> str:
    del top_k, timeout  # The client's own timeout and retries apply.
    stop = wire.stop_sequences(terminators)
    text = self._complete(
        [{"role": "user", "content": prompt}], tag=tag,
        max_tokens=min(max_tokens, 1024), temperature=temperature,
        top_p=top_p, stop=stop, seed=seed)
    assert text is not None
    # Servers take at most four stop sequences; the rest are cut here.
    return wire.truncate_at_terminators(text, stop)

  def _sample_choice(
      self, prompt: str, responses: Sequence[str], *, tag: str,
      seed: int | None = None) -> tuple[int, str, Mapping[str, Any]]:
    schema = {"type": "object", "additionalProperties": False,
              "required": ["answer"],
              "properties": {"answer": {"type": "string",
                                        "enum": list(responses)}}}
    answer = self.sample_json(
        prompt + "\nAnswer with one of: " + ", ".join(responses) + ".",
        schema, max_tokens=64, temperature=0.0, seed=seed, tag=tag)
    choice = answer["answer"]
    return list(responses).index(choice), choice, {}

  def sample_json(
      self,
      prompt: str,
      schema: base.JsonSchema,
      *,
      max_tokens: int = 512,
      temperature: float = 0.2,
      seed: int | None = None,
      tag: str = base.DEFAULT_TAG,
  ) -> dict[str, Any]:
    validator = jsonschema.Draft202012Validator(schema)
    messages = [{"role": "system", "content": _JSON_SYSTEM},
                {"role": "user", "content": prompt}]
    first_seed = self._effective_seed(seed, messages)
    # One cache entry per logical call, keyed by its first attempt: only the
    # valid answer is stored, so a rerun must find it without repeating the
    # invalid attempts that preceded it (they are not cached). Without a
    # cache no key is read: hashing the messages is CPU for nothing.
    key = self._cache_key(messages, max_tokens=max_tokens,
                          temperature=temperature, top_p=0.95, stop=(),
                          seed=first_seed, schema=schema
                          ) if self.cache is not None else ""
    raw, error = "", ""
    attempts = self._json_retries + 1
    for attempt in range(attempts):
      parsed: list[Any] = []

      def accept(text: str) -> bool:
        nonlocal raw, error
        raw = text
        try:
          value = json.loads(text)
        except json.JSONDecodeError as e:
          error = f"not JSON: {e}"
          return False
        problems = sorted(validator.iter_errors(value), key=str)
        if problems:
          error = f"schema: {problems[0].message}"
          return False
        if foreign := foreign_scripts(value, prompt):
          error = f"letters of a script the prompt does not use: {foreign}"
          return False
        parsed.append(value)
        return True

      attempt_seed = None if first_seed is None else first_seed + attempt
      text = self._complete(
          messages, tag=tag, max_tokens=max_tokens,
          temperature=temperature if attempt == 0 else max(temperature, 0.7),
          top_p=0.95, stop=(), seed=attempt_seed, schema=schema,
          accept=accept, key=key)
      if text is not None:
        if not parsed:  # A cache hit: it was valid when stored.
          parsed.append(json.loads(text))
        return parsed[0]
      _log.debug("invalid structured answer (%s), attempt %d", error, attempt)
    self.usage.record(tag, failed=True)
    raise base.StructuredOutputError(
        f"no answer matching the schema after {attempts} attempts ({error})",
        raw=raw, attempts=attempts)

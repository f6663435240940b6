"""`OpenAICompatibleModel` against a fake server over real HTTP.

What is checked is what the rest of the library relies on: what goes over the
wire (stop, seed, response formats), what comes back (truncation, schema
validation, choices), and how failures surface (retries, one-line
EndpointErrors), plus the cache and the usage counters.
"""

from __future__ import annotations

import concurrent.futures
import json
import socket
import threading
import time
from collections.abc import Iterator

import openai._base_client
import pytest

from crsec_concordia.models import (
    EndpointError,
    OpenAICompatibleModel,
    StructuredOutputError,
)
from crsec_concordia.models import chat_post
from crsec_concordia.models.cache import ResponseCache
from crsec_concordia.models.wire import is_loopback
from tests.fake_openai import FakeOpenAI, Reply, error

BOOL_SCHEMA = {"type": "object", "additionalProperties": False,
               "required": ["breaks_rule"],
               "properties": {"breaks_rule": {"type": "boolean"}}}


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
  # The client waits 0.5 s, 1 s, 2 s... between retries; the retry logic is
  # the same with a shorter first wait, and the file stays fast.
  monkeypatch.setattr(openai._base_client, "INITIAL_RETRY_DELAY", 0.01,
                      raising=False)
  monkeypatch.setattr(chat_post, "FIRST_RETRY_DELAY", 0.01)


def make(server: FakeOpenAI, **kwargs) -> OpenAICompatibleModel:
  kwargs.setdefault("timeout", 5.0)
  kwargs.setdefault("max_retries", 2)
  return OpenAICompatibleModel(server.base_url, "test-key", "fake-model",
                               **kwargs)


def bodies(server: FakeOpenAI) -> list[dict]:
  return [r.body for r in server.chat_requests()]


def closed_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]  # Closed on exit: nothing listens there.


# -- free text -----------------------------------------------------------------


def test_stop_sequences_are_sent_and_the_text_cut_at_a_terminator(server):
  # A server that ignores `stop` must not leak the next speaker's line.
  server.script(Reply("Sure, I'll step outside.\nCarlos: thanks"))
  model = make(server)
  text = model.sample_text("Abigail:", terminators=("\nCarlos:", "END"),
                           max_tokens=50, temperature=0.0)
  assert text == "Sure, I'll step outside."
  (body,) = bodies(server)
  assert body["stop"] == ["\nCarlos:", "END"]
  assert body["max_tokens"] == 50
  assert body["temperature"] == 0.0
  assert body["messages"] == [{"role": "user", "content": "Abigail:"}]


def test_at_most_four_stops_are_sent_but_all_of_them_cut(server):
  server.script(Reply("one two three four five six"))
  model = make(server)
  text = model.sample_text("x", terminators=["a1", "a2", "a3", "a4", " five"])
  assert text == "one two three four"
  assert bodies(server)[0]["stop"] == ["a1", "a2", "a3", "a4"]


def test_no_terminators_sends_no_stop(server):
  model = make(server)
  assert model.sample_text("x") == "ok"
  assert "stop" not in bodies(server)[0]


# -- structured output ---------------------------------------------------------


def test_sample_json_sends_a_json_schema_response_format(server):
  server.script(Reply('{"breaks_rule": true}'))
  model = make(server)
  assert model.sample_json("Is it?", BOOL_SCHEMA) == {"breaks_rule": True}
  (body,) = bodies(server)
  assert body["response_format"] == {"type": "json_schema", "json_schema": {
      "name": "answer", "schema": BOOL_SCHEMA, "strict": True}}
  assert body["messages"][0]["role"] == "system"
  assert body["messages"][1] == {"role": "user", "content": "Is it?"}


def test_one_line_json_asks_llguidance_for_no_layout_whitespace(
    server, tmp_path):
  server.script(Reply('{"breaks_rule": true}'), Reply('{"breaks_rule": true}'))
  cache = ResponseCache(tmp_path / "responses.sqlite")
  make(server, one_line_json=True, cache=cache, seed=1).sample_json(
      "x", BOOL_SCHEMA)
  sent = bodies(server)[0]["response_format"]["json_schema"]["schema"]
  assert sent["x-guidance"]["whitespace_flexible"] is False
  assert {k: v for k, v in sent.items() if k != "x-guidance"} == BOOL_SCHEMA
  # An answer asked for on one line is not an answer to the plain request.
  make(server, cache=cache, seed=1).sample_json("x", BOOL_SCHEMA)
  assert len(bodies(server)) == 2
  assert "x-guidance" not in bodies(server)[1]["response_format"][
      "json_schema"]["schema"]


def test_json_object_mode_sends_the_schema_with_json_object(server):
  server.script(Reply('{"breaks_rule": false}'))
  model = make(server, schema_mode="json_object")
  assert model.sample_json("Is it?", BOOL_SCHEMA) == {"breaks_rule": False}
  (body,) = bodies(server)
  assert body["response_format"] == {"type": "json_object",
                                     "schema": BOOL_SCHEMA}
  assert "grammar" not in body


def test_grammar_mode_sends_a_grammar_and_no_response_format(server):
  server.script(Reply('{"breaks_rule": false}'))
  model = make(server, schema_mode="grammar")
  assert model.sample_json("Is it?", BOOL_SCHEMA) == {"breaks_rule": False}
  (body,) = bodies(server)
  assert "response_format" not in body
  assert isinstance(body["grammar"], str) and "breaks_rule" in body["grammar"]


def test_an_unknown_schema_mode_is_refused():
  with pytest.raises(ValueError):
    OpenAICompatibleModel("http://127.0.0.1:1/v1", "k", "m", schema_mode="xml")


def test_sample_json_retries_an_invalid_answer_with_a_new_sample(server):
  server.script(Reply("Sure! Here is the JSON:"),
                Reply('{"breaks_rule": "yes"}'),
                Reply('{"breaks_rule": true}'))
  model = make(server, seed=3)
  tagged = model.tagged("NormEvaluator")
  assert tagged.sample_json("Is it?", BOOL_SCHEMA,
                            temperature=0.0) == {"breaks_rule": True}
  sent = bodies(server)
  assert len(sent) == 3
  assert sent[0]["temperature"] == 0.0
  # A retry at the same seed and temperature would repeat the same answer.
  assert all(b["temperature"] >= 0.7 for b in sent[1:])
  assert len({b["seed"] for b in sent}) == 3
  usage = model.usage.by_tag()["NormEvaluator"]
  assert usage["calls"] == 3 and usage["failed_calls"] == 0


def test_an_answer_in_a_script_the_prompt_does_not_use_is_sampled_again(
    server):
  text_schema = {"type": "object", "required": ["rule"],
                 "properties": {"rule": {"type": "string"}}}
  server.script(Reply('{"rule": "Be kind and\u8003\u8651ate."}'),
                Reply('{"rule": "Be kind and considerate."}'))
  model = make(server, seed=3)
  assert model.sample_json("Read the café's rules.", text_schema) == {
      "rule": "Be kind and considerate."}
  assert len(server.chat_requests()) == 2
  # A prompt that holds the script allows it.
  server.script(Reply('{"rule": "\u5b89\u9759"}'))
  assert model.sample_json("Read: \u8bf7\u5b89\u9759", text_schema) == {
      "rule": "\u5b89\u9759"}


def test_sample_json_raises_structured_output_error_with_raw(server):
  server.responder = lambda request: Reply('{"breaks_rule": "maybe"}')
  model = make(server, json_retries=2)
  with pytest.raises(StructuredOutputError) as caught:
    model.tagged("NormEvaluator").sample_json("Is it?", BOOL_SCHEMA)
  assert caught.value.raw == '{"breaks_rule": "maybe"}'
  assert caught.value.attempts == 3
  assert "schema" in str(caught.value)
  assert len(server.chat_requests()) == 3
  usage = model.usage.by_tag()["NormEvaluator"]
  assert usage["calls"] == 3 and usage["failed_calls"] == 1


def test_invalid_answers_are_never_cached(server, tmp_path):
  server.responder = lambda request: Reply("not json")
  model = make(server, json_retries=1, seed=1,
               cache=ResponseCache(tmp_path / "cache.sqlite"))
  with pytest.raises(StructuredOutputError) as caught:
    model.sample_json("Is it?", BOOL_SCHEMA)
  assert caught.value.raw == "not json"
  assert len(model.cache) == 0


def test_sample_choice_sends_an_enum_and_returns_the_index(server):
  server.script(Reply('{"answer": "outside"}'))
  model = make(server)
  index, choice, _ = model.tagged("Planner").sample_choice(
      "Where does Carlos smoke?", ["inside", "outside", "nowhere"])
  assert (index, choice) == (1, "outside")
  (body,) = bodies(server)
  schema = body["response_format"]["json_schema"]["schema"]
  assert schema["properties"]["answer"]["enum"] == [
      "inside", "outside", "nowhere"]
  assert body["temperature"] == 0.0
  assert model.usage.by_tag()["Planner"]["calls"] == 1


def test_sample_choice_rejects_an_answer_outside_the_enum(server):
  server.responder = lambda request: Reply('{"answer": "on the roof"}')
  model = make(server, json_retries=1)
  with pytest.raises(StructuredOutputError):
    model.sample_choice("Where?", ["inside", "outside"])


# -- failures ------------------------------------------------------------------


def test_http_500_is_retried_then_succeeds(server):
  server.script(error(500, "slot busy"), error(503, "loading"),
                Reply("fine"))
  model = make(server, max_retries=3)
  assert model.tagged("X").sample_text("x") == "fine"
  assert len(server.chat_requests()) == 3
  usage = model.usage.by_tag()["X"]
  assert usage["calls"] == 1 and usage["failed_calls"] == 0


def test_http_500_after_the_retries_is_one_endpoint_error(server):
  server.responder = lambda request: error(500, "out of\nmemory")
  model = make(server, max_retries=2)
  with pytest.raises(EndpointError) as caught:
    model.tagged("X").sample_text("x")
  message = str(caught.value)
  assert "HTTP 500" in message and server.base_url in message
  assert "\n" not in message
  assert len(server.chat_requests()) == 3
  assert model.usage.by_tag()["X"]["failed_calls"] == 1


def test_a_timeout_is_retried_then_succeeds(server):
  server.script(Reply("too late", delay=3.0), Reply("in time"))
  model = make(server, timeout=0.5, max_retries=2)
  start = time.monotonic()
  assert model.sample_text("x") == "in time"
  assert time.monotonic() - start < 2.5
  assert len(server.chat_requests()) == 2


def test_timeouts_after_the_retries_are_one_endpoint_error(server):
  server.responder = lambda request: Reply(delay=3.0)
  model = make(server, timeout=0.3, max_retries=1)
  with pytest.raises(EndpointError) as caught:
    model.sample_text("x")
  assert "did not answer in time" in str(caught.value)
  assert "--timeout" in str(caught.value)


def test_401_names_the_api_key_and_is_not_retried(server):
  server.responder = lambda request: error(401, "Incorrect API key provided")
  model = make(server)
  with pytest.raises(EndpointError) as caught:
    model.sample_text("x")
  message = str(caught.value)
  assert "API key" in message and "CRSEC_API_KEY" in message
  assert "\n" not in message
  assert len(server.chat_requests()) == 1
  assert server.chat_requests()[0].headers["authorization"] == "Bearer test-key"


def test_400_suggests_another_schema_mode(server):
  server.responder = lambda request: error(400, "response_format unsupported")
  model = make(server)
  with pytest.raises(EndpointError) as caught:
    model.sample_json("x", BOOL_SCHEMA)
  assert "CRSEC_SCHEMA_MODE" in str(caught.value)
  assert len(server.chat_requests()) == 1


def test_connection_refused_is_one_line_endpoint_error():
  url = f"http://127.0.0.1:{closed_port()}/v1"
  model = OpenAICompatibleModel(url, "k", "m", timeout=2.0, max_retries=1)
  for call in (model.check, lambda: model.sample_text("x")):
    with pytest.raises(EndpointError) as caught:
      call()
    message = str(caught.value)
    assert url in message and "--base-url" in message
    assert "\n" not in message


def test_loopback_endpoints_ignore_proxy_variables(server, monkeypatch):
  # A proxy cannot reach this machine's servers (the embedded model above all).
  dead_proxy = f"http://127.0.0.1:{closed_port()}"
  for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
    monkeypatch.setenv(name, dead_proxy)
    monkeypatch.setenv(name.lower(), dead_proxy)
  monkeypatch.delenv("NO_PROXY", raising=False)
  monkeypatch.delenv("no_proxy", raising=False)
  assert make(server, max_retries=0).sample_text("x") == "ok"


@pytest.mark.parametrize("url, loopback", [
    ("http://127.0.0.1:8000/v1", True),
    ("http://localhost:11434/v1", True),
    ("http://[::1]:8000/v1", True),
    ("http://127.0.0.2/v1", True),
    ("https://api.openai.com/v1", False),
    ("http://10.0.0.5:8000/v1", False),
])
def test_is_loopback(url, loopback):
  assert is_loopback(url) is loopback


def test_check_lists_the_served_models(server):
  assert make(server).check() == ["fake-model"]


# -- usage ---------------------------------------------------------------------


def test_tokens_are_counted_per_tag_from_the_server_usage(server):
  server.script(Reply("a", prompt_tokens=100, completion_tokens=5),
                Reply("b", prompt_tokens=30, completion_tokens=2),
                Reply('{"breaks_rule": true}', prompt_tokens=40,
                      completion_tokens=8))
  model = make(server)
  model.tagged("NormIdentifier").sample_text("x")
  model.tagged("NormIdentifier").sample_text("y")
  model.tagged("NormEvaluator").sample_json("z", BOOL_SCHEMA)
  by_tag = model.usage.by_tag()
  assert by_tag["NormIdentifier"] == {
      "calls": 2, "cached_calls": 0, "failed_calls": 0,
      "prompt_tokens": 130, "completion_tokens": 7,
      "reused_prompt_tokens": 0}
  assert by_tag["NormEvaluator"]["prompt_tokens"] == 40
  assert by_tag["NormEvaluator"]["completion_tokens"] == 8
  assert model.usage.totals()["prompt_tokens"] == 170
  assert model.usage.totals()["calls"] == 3


def _completion(usage: dict, **extra) -> dict:
  return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
          "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": "ok"}}],
          "usage": {"prompt_tokens": 100, "completion_tokens": 3,
                    "total_tokens": 103, **usage}, **extra}


def test_prompt_tokens_the_server_reused_are_counted(server):
  # OpenAI's and vLLM's field, then llama.cpp's own timings, then neither.
  server.script(
      Reply(body=_completion({"prompt_tokens_details": {"cached_tokens": 64}})),
      Reply(body=_completion({}, timings={"cache_n": 40, "prompt_n": 60})),
      Reply(body=_completion({})))
  model = make(server)
  for prompt in ("x", "y", "z"):
    model.tagged("act").sample_text(prompt)
  counts = model.usage.by_tag()["act"]
  assert counts["prompt_tokens"] == 300
  assert counts["reused_prompt_tokens"] == 104


def test_the_call_log_has_each_request_its_answer_and_reuse(server, tmp_path):
  from crsec_concordia.models.call_log import CallLog, read
  server.script(
      Reply(body=_completion({"prompt_tokens_details": {"cached_tokens": 64}})),
      Reply('{"breaks_rule": false}', prompt_tokens=40, completion_tokens=8))
  cache = ResponseCache(tmp_path / "responses.sqlite")
  model = make(server, call_log=CallLog(tmp_path / "calls.jsonl"),
               cache=cache, seed=1)
  model.tagged("act").sample_text("first prompt")
  model.tagged("DetectConflict").sample_json("second prompt", BOOL_SCHEMA)
  model.tagged("act").sample_text("first prompt")  # A cache hit: no request.
  entries = read(tmp_path / "calls.jsonl")
  assert [(e["n"], e["tag"]) for e in entries] == [
      (1, "act"), (2, "DetectConflict")]
  assert entries[0]["messages"] == [{"role": "user",
                                     "content": "first prompt"}]
  assert (entries[0]["prompt_tokens"], entries[0]["reused_prompt_tokens"],
          entries[0]["answer"]) == (100, 64, "ok")
  assert entries[1]["messages"][-1]["content"] == "second prompt"
  assert entries[1]["answer"] == '{"breaks_rule": false}'
  assert entries[1]["completion_tokens"] == 8
  assert [e["sends"] for e in entries] == [1, 1]
  # How each was asked, to be asked again (bench/script_grammar.py).
  assert entries[1]["asked"]["schema"] == BOOL_SCHEMA
  assert entries[1]["asked"]["temperature"] == 0.2
  assert isinstance(entries[1]["asked"]["seed"], int)
  assert entries[0]["asked"]["schema"] is None


def test_the_call_log_counts_a_request_sent_again(server, tmp_path):
  from crsec_concordia.models.call_log import CallLog, read
  server.script(error(500, "slot busy"), Reply("late"))
  model = make(server, call_log=CallLog(tmp_path / "calls.jsonl"), seed=1)
  assert model.tagged("act").sample_text("a prompt") == "late"
  entry, = read(tmp_path / "calls.jsonl")
  assert entry["sends"] == 2 and entry["answer"] == "late"


def test_make_model_logs_calls_only_when_asked(server, tmp_path, monkeypatch):
  from crsec_concordia.models import EndpointConfig, make_model
  config = EndpointConfig(base_url=server.base_url, model="fake-model")
  assert make_model(config, check=False).call_log is None
  monkeypatch.setenv("CRSEC_CALL_LOG", str(tmp_path / "calls.jsonl"))
  model = make_model(config, check=False)
  model.tagged("act").sample_text("x")
  assert (tmp_path / "calls.jsonl").read_text().count("\n") == 1


def test_at_most_max_in_flight_requests_reach_the_server_at_once(server):
  # A server with a fixed number of slots queues the rest with the client's
  # timeout running; here they wait in the client instead.
  lock, state = threading.Lock(), {"now": 0, "most": 0}

  def responder(request):
    with lock:
      state["now"] += 1
      state["most"] = max(state["most"], state["now"])
    time.sleep(0.1)
    with lock:
      state["now"] -= 1
    return Reply("ok")

  server.responder = responder
  model = make(server, max_in_flight=2)
  with concurrent.futures.ThreadPoolExecutor(6) as pool:
    answers = list(pool.map(model.sample_text, [f"p{i}" for i in range(6)]))
  assert answers == ["ok"] * 6
  assert state["most"] == 2
  assert model.usage.totals()["calls"] == 6


def test_untagged_calls_count_under_other(server):
  make_model = make(server)
  make_model.sample_text("x")
  assert list(make_model.usage.by_tag()) == ["other"]


# -- cache and seeds -----------------------------------------------------------


def _answer_for(server: FakeOpenAI):
  """A deterministic server: valid JSON for any schema, else numbered text."""

  def respond(request) -> Reply:
    fmt = request.body.get("response_format")
    if fmt is None:
      return Reply(f"answer {len(server.requests)}")
    properties = fmt["json_schema"]["schema"]["properties"]
    if "answer" in properties:
      return Reply(json.dumps({"answer": properties["answer"]["enum"][-1]}))
    return Reply('{"breaks_rule": true}')

  return respond


def test_a_cached_rerun_with_the_same_seed_makes_no_server_call(
    server, tmp_path):
  server.responder = _answer_for(server)
  # The first run needs a retry on its first call: the rerun must still be
  # free, though invalid answers are never cached.
  server.script(Reply("garbage"))
  path = tmp_path / "cache.sqlite"

  def episode(model: OpenAICompatibleModel) -> list:
    return [model.tagged("A").sample_json("Is it?", BOOL_SCHEMA),
            model.tagged("B").sample_text("Describe the café.",
                                          terminators=("\n",)),
            model.sample_choice("Where?", ["inside", "outside"]),
            model.sample_text("Another line.")]

  first = make(server, seed=42, cache=ResponseCache(path))
  first_answers = episode(first)
  calls_first_run = len(server.chat_requests())
  assert calls_first_run == 5
  first.cache.close()

  second = make(server, seed=42, cache=ResponseCache(path))
  assert episode(second) == first_answers
  assert len(server.chat_requests()) == calls_first_run  # Zero new calls.
  assert second.usage.totals()["cached_calls"] == 4
  assert second.usage.totals()["calls"] == 0
  assert second.usage.by_tag()["A"]["cached_calls"] == 1

  other_seed = make(server, seed=43, cache=ResponseCache(path))
  other_seed.sample_text("Describe the café.", terminators=("\n",))
  assert len(server.chat_requests()) == calls_first_run + 1


def test_a_server_started_on_demand_is_started_only_on_a_cache_miss(
    server, tmp_path):
  path = tmp_path / "cache.sqlite"
  make(server, seed=7, cache=ResponseCache(path),
       cache_scope="weights").sample_text("Describe the café.")
  connects: list[int] = []

  def connect() -> str:
    connects.append(1)
    return server.base_url

  lazy = OpenAICompatibleModel(
      "not started", "test-key", "fake-model", seed=7, timeout=5.0,
      cache=ResponseCache(path), cache_scope="weights", connect=connect)
  lazy.sample_text("Describe the café.")  # Answered by the cache.
  assert connects == [] and lazy.base_url == "not started"
  with concurrent.futures.ThreadPoolExecutor(4) as pool:
    list(pool.map(lazy.sample_text, [f"Line {i}." for i in range(8)]))
  assert connects == [1]  # Once, though four threads missed at once.
  assert lazy.base_url == server.base_url
  assert len(server.chat_requests()) == 1 + 8


def test_a_set_of_terminators_gives_the_same_cache_entry(server, tmp_path):
  # Sets iterate in a per-process order; the cache key must not follow it.
  path = tmp_path / "cache.sqlite"
  make(server, seed=1, cache=ResponseCache(path)).sample_text(
      "x", terminators={"\nBob:", "\nAlice:", "END"})
  make(server, seed=1, cache=ResponseCache(path)).sample_text(
      "x", terminators=sorted(["\nBob:", "\nAlice:", "END"]))
  assert len(server.chat_requests()) == 1
  assert bodies(server)[0]["stop"] == sorted(["\nBob:", "\nAlice:", "END"])


def test_the_same_seed_gives_the_same_call_seed_in_any_order(server):
  prompts = [f"prompt {i}" for i in range(4)]

  def seeds_by_prompt(order: list[str], seed: int) -> dict[str, int]:
    server.requests.clear()
    model = make(server, seed=seed)
    for p in order:
      model.sample_text(p)
    return {b["messages"][-1]["content"]: b["seed"] for b in bodies(server)}

  forward = seeds_by_prompt(prompts, seed=7)
  backward = seeds_by_prompt(prompts[::-1], seed=7)
  assert forward == backward
  assert len(set(forward.values())) == len(prompts)  # Seeded per call.
  assert seeds_by_prompt(prompts, seed=8) != forward
  # An explicit seed wins; no run seed sends none.
  server.requests.clear()
  make(server, seed=7).sample_text("x", seed=123)
  make(server).sample_text("x")
  assert [b.get("seed") for b in bodies(server)] == [123, None]


def test_concurrent_calls_are_all_counted(server):
  server.responder = lambda request: Reply(
      request.body["messages"][-1]["content"].upper(), delay=0.1,
      prompt_tokens=10, completion_tokens=3)
  model = make(server)
  prompts = [f"call {i}" for i in range(16)]
  with concurrent.futures.ThreadPoolExecutor(16) as pool:
    results = list(pool.map(
        lambda p: model.tagged(f"T{int(p.split()[1]) % 2}").sample_text(p),
        prompts))
  assert results == [p.upper() for p in prompts]
  assert len(server.chat_requests()) == 16
  by_tag = model.usage.by_tag()
  assert by_tag["T0"]["calls"] == by_tag["T1"]["calls"] == 8
  assert model.usage.totals() == {
      "calls": 16, "cached_calls": 0, "failed_calls": 0,
      "prompt_tokens": 160, "completion_tokens": 48,
      "reused_prompt_tokens": 0}
  # They ran side by side, not one after the other.
  arrivals = [r.arrived for r in server.chat_requests()]
  assert max(arrivals) - min(arrivals) < 1.0



def test_two_endpoints_with_one_model_name_never_share_cached_answers(
    server, tmp_path):
  # Two servers may serve different weights under the same name ("local").
  path = tmp_path / "cache.sqlite"
  make(server, seed=1, cache=ResponseCache(path)).sample_text("x")
  make(server, seed=1, cache=ResponseCache(path),
       cache_scope="http://elsewhere:8000/v1").sample_text("x")
  assert len(server.chat_requests()) == 2
  make(server, seed=1, cache=ResponseCache(path)).sample_text("x")
  assert len(server.chat_requests()) == 2  # Same endpoint: a cache hit.

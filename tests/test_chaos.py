"""The fault proxy (tests/fault_proxy.py) and the chaos bench (bench/chaos.py).

Each fault must reach the client as the failure it imitates, or the bench
measures nothing; and a short chaos run must end with every agent's slot
accounted for and no answer the model did not give.
"""

from __future__ import annotations

import json

import openai
import pytest

from bench import chaos
from crsec_concordia.models.base import StructuredOutputError
from crsec_concordia.models.openai_compatible import OpenAICompatibleModel
from tests import schema_answers
from tests.fault_proxy import KINDS, FaultProxy

SCHEMA = {"type": "object", "additionalProperties": False,
          "required": ["answer"],
          "properties": {"answer": {"type": "string", "minLength": 1}}}


@pytest.fixture
def proxied(server):
  server.responder = schema_answers.responder()
  proxies = []

  def make(kind: str) -> tuple[FaultProxy, OpenAICompatibleModel]:
    proxy = FaultProxy(server.base_url, rate=1.0, kinds=[kind], hold=1.5,
                       retry_after=0).start()
    proxies.append(proxy)
    return proxy, OpenAICompatibleModel(
        proxy.base_url, "k", "fake-model", timeout=0.5, max_retries=0,
        json_retries=0)

  yield make
  for proxy in proxies:
    proxy.stop()


@pytest.mark.parametrize("kind,error", [
    ("timeout", "did not answer in time"),
    ("http_500", "HTTP 500"),
    ("http_429", "HTTP 429"),
    ("reset", "cannot reach"),
    ("schema_break", "schema"),
    ("truncated", "not JSON"),
])
def test_each_fault_reaches_the_client_as_what_it_imitates(proxied, kind,
                                                           error):
  proxy, model = proxied(kind)
  with pytest.raises(Exception, match=error):
    model.sample_json("Say something.", SCHEMA)
  assert proxy.faults() == {kind: 1}
  assert proxy.clean_contents() == []


def test_a_body_that_is_not_json_is_an_invalid_answer(proxied):
  # Retried like any invalid answer, then a failure (never a crash).
  proxy, model = proxied("invalid_json")
  with pytest.raises(StructuredOutputError, match="not JSON"):
    model.sample_json("Say something.", SCHEMA)
  assert proxy.faults() == {"invalid_json": 1}


def test_a_429_carries_retry_after(proxied):
  _, model = proxied("http_429")
  with pytest.raises(Exception):
    model.sample_json("Say something.", SCHEMA)
  client = openai.OpenAI(base_url=model.base_url, api_key="k", max_retries=0)
  with pytest.raises(openai.RateLimitError) as limited:
    client.chat.completions.create(model="m", messages=[
        {"role": "user", "content": "hi"}])
  assert limited.value.response.headers["retry-after"] == "0"


def test_without_faults_the_proxy_passes_answers_on_unaltered(server):
  server.responder = schema_answers.responder()
  proxy = FaultProxy(server.base_url, rate=0.0).start()
  try:
    model = OpenAICompatibleModel(proxy.base_url, "k", "fake-model")
    assert model.check() == ["fake-model"]
    answer = model.sample_json("Say something.", SCHEMA)
    assert [json.loads(c) for c in proxy.clean_contents()] == [answer]
    assert proxy.faults() == {kind: 0 for kind in KINDS}
  finally:
    proxy.stop()


def test_a_chaos_run_accounts_for_every_fault(capsys, embedder):
  del embedder  # Loaded once for the session; the bench uses the same.
  kinds = [k for k in KINDS if k != "invalid_json"]
  assert chaos.main(["--steps", "2", "--timeout", "1", "--rate", "0.25",
                     "--kinds", ",".join(kinds)]) == 0
  out = capsys.readouterr().out
  assert "slots played: 2 (completed)" in out
  assert ("chaos run complete, 0 invented answers, every injected failure "
          "accounted for") in out
  assert "calls retried successfully: " in out


def test_a_chaos_run_survives_bodies_that_are_not_json(embedder, tmp_path):
  figures = chaos.chaos_run(
      tmp_path, steps=2, seed=1, rate=0.25, kinds=["invalid_json"],
      timeout=1.0, base_url=None, model_name=None, api_key=None,
      embedder=embedder)
  assert figures["problems"] == []


def test_an_act_that_failed_is_a_marker_with_its_failure_not_an_answer(
    embedder, tmp_path):
  # Every answer breaks its schema: every act fails and is the act's
  # no-action marker, each with its Act failure record; none of it counts
  # as an invented answer.
  figures = chaos.chaos_run(
      tmp_path, steps=1, seed=1, rate=1.0, kinds=["schema_break"],
      timeout=1.0, base_url=None, model_name=None, api_key=None,
      embedder=embedder)
  assert figures["problems"] == [] and figures["invented"] == 0
  assert figures["failure_records"] >= 4  # At least each agent's act.

"""The fault proxy (tests/fault_proxy.py) and the chaos bench (bench/chaos.py).

Each fault must reach the client as the failure it imitates, or the bench
measures nothing; and a short chaos run must end with every agent's slot
accounted for and no answer the model did not give. A failed answer is
never speech: a conversation turn whose answer fails its schema ends the
talk with a recorded failure, and no model reads a non-answer as words.
"""

from __future__ import annotations

import json
import re

import openai
import pytest

from concordia.typing import entity as entity_lib

from bench import chaos
from crsec_concordia import observations as obs
from crsec_concordia.components import JOURNAL_KEY, NORM_MEMORY_KEY, structured_act
from crsec_concordia.models.base import EndpointError, StructuredOutputError
from crsec_concordia.models.openai_compatible import OpenAICompatibleModel
from tests import crsec_script as cs
from tests import schema_answers
from tests import test_runner
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


# -- a failed answer is never speech -------------------------------------------

BROKEN_ANSWER = {"answer": 5}  # A number where the schema wants words.


def failing_talk(name: str) -> cs.ScriptedModel:
  """The run tests' café (tests/test_runner.py), `name`'s every line of
  talk an answer that fails its schema."""
  model = test_runner.cafe()
  model.add_rule(rf"only what {name} says aloud", BROKEN_ANSWER, first=True)
  return model


def test_a_line_of_talk_that_fails_its_schema_raises_and_is_recorded():
  # An action that fails is the act's marker (the game master records no
  # action); a line of talk that fails raises: no words are made up.
  model = cs.cafe_model(**{cs.ACT: BROKEN_ANSWER})
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="ordinary")
  with pytest.raises(StructuredOutputError, match="schema"):
    agent.act(entity_lib.ActionSpec(
        call_to_action="What does Abigail say?",
        output_type=entity_lib.OutputType.FREE, tag=obs.SPEECH_TAG))
  action = agent.act(entity_lib.ActionSpec(
      call_to_action="What does Abigail do next?",
      output_type=entity_lib.OutputType.FREE, tag="action"))
  assert action == f"Abigail Chen {structured_act.NO_VALID_ACTION}"
  failures = [r for r in agent.get_component(JOURNAL_KEY).drain_records()
              if r["kind"] == "failure"]
  assert [f["op"] for f in failures] == [structured_act.TALK_TAG, "Act"]
  assert all("schema" in f["error"] for f in failures)


def test_a_line_of_talk_the_endpoint_failed_is_recorded_and_raises():
  def down(prompt):
    raise EndpointError(f"the endpoint did not answer ({len(prompt)})")
  agent = cs.build_agent("normative", cs.cafe_model(**{cs.ACT: down}),
                         name="Abigail Chen", role="ordinary")
  with pytest.raises(EndpointError):
    agent.act(entity_lib.ActionSpec(
        call_to_action="What does Abigail say?",
        output_type=entity_lib.OutputType.FREE, tag=obs.SPEECH_TAG))
  failure, = [r for r in agent.get_component(JOURNAL_KEY).drain_records()
              if r["kind"] == "failure"]
  assert failure["op"] == structured_act.TALK_TAG
  assert failure["error"].startswith("EndpointError: the endpoint did not")


def test_a_talk_whose_reply_fails_its_schema_ends_with_a_recorded_failure(
    tmp_path, embedder):
  model = failing_talk("Carlos Gomez")
  records = test_runner.records(test_runner.run(tmp_path, embedder,
                                                model=model))
  talks = [r for r in records if r["kind"] == "conversation"
           and r["partner"] == "Carlos Gomez"]
  assert talks
  for talk in talks:
    # Abigail spoke; Carlos's reply failed, and the talk ended there.
    assert [t["speaker"] for t in talk["turns"]] == [talk["initiator"]]
    assert talk["ended"].startswith("Carlos Gomez's turn failed: "
                                    "StructuredOutputError")
    assert any(r["kind"] == "failure" and r["agent"] == "Carlos Gomez"
               and r["op"] == structured_act.TALK_TAG
               and r["step"] == talk["step"] for r in records)
  # Nobody ever read a word of Carlos's, nor a marker in its place: his
  # quoted lines anywhere (the referee quotes actions so) are his actions.
  prompts = [c.prompt for c in model.calls]
  assert not any(obs.NO_ACTION_MARK in p for p in prompts)
  quoted = {m for p in prompts
            for m in re.findall(r'Carlos Gomez: "([^"]*)"', p)}
  assert quoted <= {r["action"] for r in records if r["kind"] == "action"
                    and r["actor"] == "Carlos Gomez"}
  # His partner's line reached him, as any talk's does.
  heard = [p for p in prompts if "is_rule:" in p and talks[0]["turns"][0][
      "text"] in p]
  assert heard


def test_a_talk_in_which_nothing_was_said_reaches_nobody(tmp_path, embedder):
  model = failing_talk("Abigail Chen")
  run_dir = test_runner.run(tmp_path, embedder, model=model)
  records = test_runner.records(run_dir)
  talks = [r for r in records if r["kind"] == "conversation"
           and r["initiator"] == "Abigail Chen"]
  assert talks and all(t["turns"] == [] for t in talks)
  assert all(t["ended"].startswith("Abigail Chen's turn failed")
             for t in talks)
  # No one is told of a talk that never was: no transcript, no norm looked
  # for in it, no "conversation ended" as a reason to act.
  prompts = [c.prompt for c in model.calls]
  memories = json.loads((run_dir / "log.json").read_text())[
      "entity_memories"]
  for text in [*prompts, *(m for held in memories.values() for m in held)]:
    assert "Conversation between Abigail Chen" not in text
    assert obs.NO_ACTION_MARK not in text
  assert not any("conversation ended" in r.get("act_reasons", ())
                 for r in records if r["kind"] == "action")


def test_the_bench_finds_every_non_answer_a_prompt_gave_a_model():
  records = [{"kind": "conversation", "day": 1, "clock": "09:10", "step": 2,
              "initiator": "Ana Li", "partner": "Bo Kim", "topic": "noise",
              "turns": []}]
  silent = obs.format_conversation(obs.Stamp(1, "09:10", 2), "Ana Li",
                                   "Bo Kim", "noise", [])
  calls = chaos.CallLog()
  for prompt in (f"Bo Kim {structured_act.NO_VALID_ACTION} at the counter.",
                 'Ana Li: "Hello there." Bo Kim: "Never said."',
                 f"Earlier:\n{silent}\nWhat now?",
                 'Ana Li: "Hello there."'):
    with calls._call("test") as call:  # pylint: disable=protected-access
      call["prompt"] = prompt
  problems = chaos.unread(calls, records, ["Ana Li", "Bo Kim"],
                          lambda text, speaker: text == "Hello there.",
                          {"Bo Kim": [f"[observation] {silent}"]})
  assert len(problems) == 4
  assert "no-action marker" in problems[0]
  assert "Bo Kim: 'Never said.'" in problems[1]
  assert "nothing was said" in problems[2]
  assert problems[3].startswith("Bo Kim's memory read a talk in which "
                                "nothing was said")

"""CRSEC with any Concordia LanguageModel: the adapter and the prefabs.

A Concordia `LanguageModel` only samples text. The adapter states each
operation's schema in the prompt, validates the answer, asks again for an
invalid one and records a persistent failure; the prefabs and components
take such a model wherever they take the project's own.
"""

from __future__ import annotations

import json
import re

from concordia.language_model import language_model
from concordia.typing import entity as entity_lib

from crsec_concordia import observations as obs
from crsec_concordia.components import JOURNAL_KEY, NORM_MEMORY_KEY
from crsec_concordia.models import as_structured
from crsec_concordia.models.concordia_adapter import (ConcordiaModelAdapter,
                                                      json_object_in)
from tests import crsec_script as cs


class TextOnlyModel(language_model.LanguageModel):
  """A Concordia LanguageModel answering text from the scripted café.

  The scripted café's rules give JSON; this model hands it back as text
  (inside a code fence, with words around it, as chat models do), and can
  be told to answer junk for an operation a number of times.
  """

  def __init__(self, junk: dict[str, int] | None = None):
    self._script = cs.cafe_model()
    self.prompts: list[str] = []
    self._junk = dict(junk or {})

  def sample_text(self, prompt: str, **kwargs) -> str:
    del kwargs
    self.prompts.append(prompt)
    schema = json.loads(prompt.rsplit("JSON schema:\n", 1)[1].split("\n\n")[0])
    for pattern, left in self._junk.items():
      if left and re.search(pattern, prompt, re.S | re.I):
        self._junk[pattern] = left - 1
        return "I would rather not say."
    answer = self._script.sample_json(prompt.split("\n\nAnswer with one")[0],
                                      schema)
    return f"Here you are:\n```json\n{json.dumps(answer)}\n```"

  def sample_choice(self, prompt, responses, *, seed=None):
    del prompt, seed
    return 0, responses[0], {}


def test_the_json_in_a_chatty_answer_is_found():
  assert json_object_in('Sure! ```json\n{"a": 1}\n``` ok') == {"a": 1}
  assert json_object_in('The answer: {"a": [1, 2]} as asked.') == {"a": [1, 2]}


def test_a_normative_entity_runs_every_crsec_operation_on_a_concordia_model():
  model = TextOnlyModel()
  assert not hasattr(model, "sample_json")
  agent = cs.build_agent("normative", model, role="entrepreneur",
                         reflect_every=3, synthesis_threshold=50)
  # An ordinary agent decides whether to talk (an entrepreneur always does).
  listener = cs.build_agent("normative", model, name="Tamara Rodriguez",
                            role="ordinary")
  listener.get_component(NORM_MEMORY_KEY).database.add(
      "No smoking indoors.", "injunctive", 80, origin="created",
      qualified=True)
  listener.observe(obs.format_action(obs.Stamp(1, "09:00", 1), "Tom Gomez",
                                     "indoors", "Tom smokes indoors."))
  adapter = as_structured(model)
  assert isinstance(adapter, ConcordiaModelAdapter)
  assert as_structured(model) is adapter  # One adapter, one usage meter.
  stamp = obs.Stamp(1, "09:10", 2)
  agent.observe(obs.format_action(stamp, "Tom Gomez", "indoors",
                                  "Tom lights a cigarette at the counter."))
  agent.observe(obs.format_conversation(
      obs.Stamp(1, "09:20", 3), "Abigail Chen", "Carlos Gomez", "smoking",
      [("Abigail Chen", "Smoking isn't allowed inside, please go outside."),
       ("Carlos Gomez", "Sorry, I will.")]))
  for step, text in enumerate(("Tom shouts.", "Tom naps.", "Tom sings."), 4):
    agent.observe(obs.format_action(obs.Stamp(1, "09:30", step), "Tom Gomez",
                                    "indoors", text))
  action = agent.act(entity_lib.ActionSpec(
      call_to_action="It is Day 1 09:40 at Hobbs Cafe. What does Carlos "
                     "Gomez do next?", output_type=entity_lib.OutputType.FREE))
  assert action == "sips a coffee."
  tags = set(adapter.usage.by_tag())
  assert {"CreateNorm", "DetectConflict", "DecideToTalk", "IdentifyNorm",
          "Reflect", "ImmediateEvaluation", "LongTermSynthesis",
          "NormativePlan", "DecomposePlan", "act"} <= tags
  assert agent.get_component(NORM_MEMORY_KEY).database.qualified()


def test_an_invalid_answer_is_asked_again_and_a_persistent_one_recorded():
  model = TextOnlyModel(junk={cs.IDENTIFY: 1, cs.REFLECT: 99})
  agent = cs.build_agent("normative", model, role="ordinary", reflect_every=1)
  agent.observe(obs.format_conversation(
      obs.Stamp(1, "09:20", 3), "Abigail Chen", "Carlos Gomez", "smoking",
      [("Abigail Chen", "Smoking isn't allowed inside, please go outside."),
       ("Carlos Gomez", "Sorry, I will.")]))
  # IdentifyNorm: junk once, then asked again, saying why: a candidate.
  identify = [p for p in model.prompts if re.search(cs.IDENTIFY, p)]
  assert len(identify) == 2 and "Your answer was not valid" in identify[1]
  memory = agent.get_component(NORM_MEMORY_KEY)
  assert memory.database.all()
  # Reflect: junk every time: a recorded failure, nothing made up.
  agent.observe(obs.format_action(obs.Stamp(1, "09:30", 4), "Tom Gomez",
                                  "indoors", "Tom lights a cigarette."))
  failures = [r for r in agent.get_component(JOURNAL_KEY).drain_records() if r["kind"] == "failure"]
  assert [f["op"] for f in failures] == ["Reflect"]
  assert failures[0]["raw"] == "I would rather not say."
  usage = as_structured(model).usage.by_tag()
  assert usage["Reflect"]["failed_calls"] == 1
  assert not [r for r in agent.get_component(JOURNAL_KEY).drain_records() if r["kind"] == "thought"]


class DriftingModel(language_model.LanguageModel):
  """Answers the first time with a word of another script in it."""

  def __init__(self):
    self.prompts: list[str] = []

  def sample_text(self, prompt: str, **kwargs) -> str:
    del kwargs
    self.prompts.append(prompt)
    word = "considerate" if len(self.prompts) > 1 else "\u8003\u8651ate"
    return json.dumps({"rule": f"People should be {word}."})

  def sample_choice(self, prompt, responses, *, seed=None):
    del prompt, seed
    return 0, responses[0], {}


def test_an_answer_in_a_script_the_prompt_does_not_use_is_asked_again():
  drifting = DriftingModel()
  model = ConcordiaModelAdapter(drifting)
  answer = model.sample_json(
      "Read the rules.", {"type": "object", "required": ["rule"],
                          "properties": {"rule": {"type": "string"}}})
  assert answer == {"rule": "People should be considerate."}
  assert ("letters of a script the question does not use: CJK"
          in drifting.prompts[1])


def test_concordias_own_openai_wrapper_serves_crsec_end_to_end():
  """Concordia's GptLanguageModel, pointed at the test suite's fake server,
  drives every operation an entrepreneur makes on its first slot."""
  import random  # pylint: disable=import-outside-toplevel
  from concordia.contrib.language_models.openai import gpt_model  # pylint: disable=import-outside-toplevel
  from tests import schema_answers  # pylint: disable=import-outside-toplevel
  from tests.fake_openai import FakeOpenAI, Reply  # pylint: disable=import-outside-toplevel

  def respond(request):
    # The wrapper sends no response_format: the schema is in the prompt.
    prompt = request.body["messages"][-1]["content"]
    schema = json.loads(prompt.rsplit("JSON schema:\n", 1)[1].split("\n\n")[0])
    answer = schema_answers.instance(schema, random.Random(len(prompt)))
    return Reply(f"```json\n{json.dumps(answer)}\n```")

  fake = FakeOpenAI().start()
  fake.responder = respond
  try:
    model = gpt_model.GptLanguageModel("fake-model", api_key="test",
                                       api_base=fake.base_url)
    agent = cs.build_agent("normative", model, role="entrepreneur")
    action = agent.act(entity_lib.ActionSpec(
        call_to_action="It is Day 1 09:00 at Hobbs Cafe. What does Carlos "
                       "Gomez do next?", output_type=entity_lib.OutputType.FREE))
    assert action and not obs.is_no_action(action)
    usage = as_structured(model).usage.by_tag()
    assert {"CreateNorm", "NormativePlan", "act"} <= set(usage)
    assert all(u["failed_calls"] == 0 for u in usage.values())
    assert fake.chat_requests()
  finally:
    fake.stop()


def test_a_conflict_is_detected_from_another_game_masters_free_text():
  """Under a game master that narrates in free text (Concordia's stock one
  does), ReadEvents reads who did what, once per text, and the observer's
  CRSEC components judge it as they judge the exact format."""
  model = cs.cafe_model()
  model.add_rule(r"events: each thing a person did", lambda prompt: {
      "events": [{"actor": "Tom Gomez", "deed": "lit a cigarette at the bar",
                  "place": "indoors"},
                 {"actor": "Nobody Here", "deed": "invented",
                  "place": "not said"}]}, first=True)
  agent = cs.build_agent("normative", model, name="Tamara Rodriguez",
                         role="ordinary")
  agent.get_component(NORM_MEMORY_KEY).database.add(
      "No smoking indoors.", "injunctive", 80, origin="created",
      qualified=True)
  agent.observe("The morning drags on. Tom Gomez lit a cigarette at the bar "
                "while the radio played.")
  calls = model.calls_by_tag()
  assert calls["ReadEvents"] == 1  # One read, shared by both components.
  conflicts = [r for r in agent.get_component(JOURNAL_KEY).drain_records()
               if r["kind"] == "conflict"]
  assert [(c["actor"], c["behaviour"]) for c in conflicts] == [
      ("Tom Gomez", "lit a cigarette at the bar")]


def test_the_log_says_once_when_nothing_readable_arrives(caplog):
  model = cs.cafe_model()
  model.add_rule(r"events: each thing a person did",
                 {"events": []}, first=True)
  agent = cs.build_agent("normative", model, role="ordinary")
  for i in range(8):
    agent.observe(f"The weather is fine, hour {i}.")
  warnings = [r for r in caplog.records
              if "held no behaviour this agent could read" in r.getMessage()]
  assert len(warnings) == 1

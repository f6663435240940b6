"""The game master on the slot engine, with small fake agents.

The fakes stand in for the CRSEC agents where only the game master's side of
the contract matters (docs/design.md, "Entities"): they act from a script,
log every observation, and one of them asks to talk about smoking.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import re
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from concordia.agents import entity_agent_with_logging
from concordia.components import agent as agent_components
from concordia.prefabs.simulation import generic as simulation_lib
from concordia.typing import entity as entity_lib
from concordia.typing import entity_component
from concordia.typing import prefab as prefab_lib

from crsec_concordia.components.crsec_port import CrsecPort
from crsec_concordia.components.port import PORT_KEY
from crsec_concordia import embedding, game_masters
from crsec_concordia import observations as obs
from crsec_concordia import repetition
from crsec_concordia.components import structured_act
from crsec_concordia.game_masters import action_text, adjudication
from crsec_concordia.game_masters import conversations, utterances
from crsec_concordia.game_masters import occasions as occasions_lib
from crsec_concordia.game_masters import referee as referee_lib
from crsec_concordia.game_masters.referee import general_call, tag_gate
from crsec_concordia.models import ScriptedModel
from crsec_concordia.models.base import StructuredOutputError
from crsec_concordia.operations.base import has_evidence
from crsec_concordia.runs.slot_engine import SlotEngine
from crsec_concordia.scenarios import Behaviour, Occasion, parse_scenario
from tests import crsec_script

# Every tag the embedder keeps is asked "who does it" (referee/doer_check.py).
DOER_RULE = (crsec_script.DOER, crsec_script.doer_answer)
# The second look (second_look.py) finds nothing, unless a test says.
LOOK_RULE = (crsec_script.LOOK, crsec_script.look_none)

SCENARIO_YAML = """
name: tiny_cafe
premise: A quiet morning at the Tiny Cafe.
setting: Tiny Cafe, a small café with a terrace
clock: {start: "09:00", end: "10:00", minutes_per_step: 10, days: 1}
max_steps: 6
conversation: {max_rounds: 2}
agents:
  - {name: Abigail Chen, role: entrepreneur, persona: A volunteer.}
  - {name: Carlos Gomez, role: ordinary, persona: A poet who smokes.}
  - {name: Tom Gomez, role: ordinary, persona: A loud student.}
behaviours:
  - {id: smoking_indoors, description: smokes inside the café}
  - {id: smoking_outside, description: smokes outside}
  - {id: loud, description: speaks loudly or shouts indoors}
  - {id: tipped, description: leaves a tip}
"""

ACTIONS = {
    "Abigail Chen": "Abigail pays for her tea and leaves a 15% tip.",
    "Carlos Gomez": "Carlos lights a cigarette at his table.",
    "Tom Gomez": "Tom shouts across the room to a friend.",
}
# One line per conversation turn of each speaker, in shapes small models use.
REPLIES = {
    "Abigail Chen": ['Abigail Chen says: "Carlos, would you mind smoking '
                     'outside?"', "Thank you, the air is better for all."],
    "Carlos Gomez": ["Carlos Gomez: Oh, sorry, I didn't think.",
                     '"I will finish it on the terrace."'],
}


def scenario(**changes):
  s = parse_scenario(SCENARIO_YAML)
  return s.from_dict({**s.to_dict(), **changes}) if changes else s


def constant_embedder(text: str) -> np.ndarray:
  del text
  return np.ones(8, dtype=np.float32) / np.sqrt(8)


# -- fake agents ---------------------------------------------------------------


class ObservationLog(entity_component.ContextComponent):
  """Keeps every observation, verbatim."""

  def __init__(self):
    super().__init__()
    self._lock = threading.Lock()
    self.seen: list[str] = []

  def pre_observe(self, observation: str) -> str:
    with self._lock:
      self.seen.append(observation)
    return ""

  def get_state(self):
    with self._lock:
      return {"seen": list(self.seen)}

  def set_state(self, state):
    with self._lock:
      self.seen = list(state["seen"])


class SmokeDetector(entity_component.ContextComponent):
  """Asks to talk with anyone seen smoking indoors (once per person)."""

  def __init__(self):
    super().__init__()
    self._lock = threading.Lock()
    self._requests: list[dict[str, Any]] = []
    self._raised: list[str] = []

  def pre_observe(self, observation: str) -> str:
    me = self.get_entity().name
    for event in obs.parse_all(observation):
      if not (isinstance(event, obs.ActionObservation) and event.actor != me
              and "cigarette" in event.text and event.place == "indoors"):
        continue
      with self._lock:
        if event.actor not in self._raised:
          self._raised.append(event.actor)
          self._requests.append({
              "initiator": me, "partner": event.actor,
              "topic": "No smoking indoors.", "norm": "No smoking indoors.",
              "norm_id": "n1", "behaviour": event.text})
    return ""

  def pop_conversation_requests(self):
    with self._lock:
      requests, self._requests = self._requests, []
    return requests

  def get_state(self):
    with self._lock:
      return {"requests": list(self._requests), "raised": list(self._raised)}

  def set_state(self, state):
    with self._lock:
      self._requests = list(state["requests"])
      self._raised = list(state["raised"])


class ScriptAct(entity_component.ActingComponent):
  """Acts from the script; remembers every call to action it got."""

  def __init__(self, action: str, replies: list[str]):
    super().__init__()
    self._action, self._replies = action, replies
    self.calls: list[str] = []
    self.turns: list[str] = []  # Calls to action of conversation turns.

  def get_action_attempt(self, contexts, action_spec):
    del contexts
    self.calls.append(action_spec.call_to_action)
    if action_spec.tag == obs.SPEECH_TAG:
      self.turns.append(action_spec.call_to_action)
      return self._replies[(len(self.turns) - 1) % len(self._replies)]
    return self._action

  def get_state(self):
    return {}

  def set_state(self, state):
    del state


@dataclasses.dataclass
class FakeAgent(prefab_lib.Prefab):
  description: str = "A scripted agent for game master tests."
  params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

  def build(self, model, memory_bank):
    del model
    name = self.params["name"]
    context = {"log": ObservationLog(),
               "__memory__": agent_components.memory.AssociativeMemory(
                   memory_bank=memory_bank)}
    if self.params.get("detector"):
      context["ConflictDetector"] = SmokeDetector()
      # The game master takes its requests through the agent's port.
      context[PORT_KEY] = CrsecPort()
    return entity_agent_with_logging.EntityAgentWithLogging(
        agent_name=name,
        act_component=ScriptAct(ACTIONS[name], REPLIES.get(name, ["Hm.", "Right."])),
        context_components=context)


# -- a scripted referee ----------------------------------------------------------

_ACTION_LINE = re.compile(r'^(?P<actor>[^:\n]+): "(?P<action>.*)"$', re.M)


def referee(prompt: str) -> dict[str, Any]:
  """Adjudicates like a good model would, from the action in the prompt."""
  action = _ACTION_LINE.search(prompt)["action"]
  behaviours = []
  if "cigarette" in action:
    behaviours.append("smoking_indoors")
  if "shouts" in action:
    behaviours.append("loud")
  if "tip" in action:
    behaviours.append("tipped")
  named = behaviours + ["none", "none"]
  return {"narration": action, "place": "indoors",
          "evidence": action if behaviours else "none",
          "behaviour": named[0], "also": named[1]}


def referee_model() -> ScriptedModel:
  return ScriptedModel([DOER_RULE, LOOK_RULE, (r"You are the referee", referee)])


def simulation(model, s=None, detector=("Abigail Chen",),
               embedder=constant_embedder):
  """The game master and fake agents on the slot engine; the referee's
  checks use the simulation's `embedder`, as in a run."""
  s = s or scenario()
  instances = [prefab_lib.InstanceConfig(
      prefab="fake__Entity", role=prefab_lib.Role.ENTITY,
      params={"name": a.name, "detector": a.name in detector})
               for a in s.agents]
  instances.append(prefab_lib.InstanceConfig(
      prefab="venue__GameMaster", role=prefab_lib.Role.GAME_MASTER,
      params={"name": "GM", "scenario": s.to_dict(), "seed": 3}))
  config = prefab_lib.Config(
      prefabs={"fake__Entity": FakeAgent(),
               **game_masters.GAME_MASTER_PREFABS},
      instances=instances, default_premise=s.premise,
      default_max_steps=s.total_steps)
  return simulation_lib.Simulation(config, model, embedder,
                                   engine=SlotEngine())


def agents(sim):
  return {e.name: e for e in sim.get_entities()}


def seen(entity) -> list[str]:
  return entity.get_component("log").seen


# -- tests -----------------------------------------------------------------------


def test_every_agent_acts_once_per_slot_and_each_action_is_adjudicated():
  model = referee_model()
  sim = simulation(model, detector=())
  sim.play(max_steps=3)
  gm = sim.get_game_masters()[0]
  records = game_masters.drain_records(gm)
  assert [r["kind"] for r in records] == ["action"] * 9
  s = scenario()
  names = sorted(s.agent_names)
  # Slot by slot, every agent once, in name order whatever finished first.
  assert [(r["step"], r["actor"]) for r in records] == [
      (step, name) for step in (1, 2, 3) for name in names]
  for r in records:
    assert r["time"] == s.stamp_for(r["step"]).time
    assert r["action"] == ACTIONS[r["actor"]]
    assert r["place"] == "indoors" and r["adjudicated"] is True
  by_actor = {r["actor"]: r["behaviours"] for r in records}
  assert by_actor == {"Abigail Chen": ["tipped"],
                      "Carlos Gomez": ["smoking_indoors"],
                      "Tom Gomez": ["loud"]}
  # One model call per action, counted as the game master's, and one
  # doer check per tag kept (each action here shows one); nothing else.
  assert model.calls_by_tag() == {"GM.adjudicate": 9, "GM.doer": 9}
  call = model.calls[0]
  ids = call.schema["properties"]["behaviour"]["enum"]
  assert ids == ["smoking_indoors", "smoking_outside", "loud", "tipped",
                 "talk_only", "none"]


def test_a_slot_arrives_as_one_observation_for_everyone_the_actor_too():
  model = referee_model()
  sim = simulation(model, detector=())
  sim.play(max_steps=3)
  s = scenario()
  # Each opens with the time of the slot it arrives in; then the last
  # slot's actions (slot 3's arrive with slot 4).
  slots = ["\n".join([obs.format_clock(s.stamp_for(step + 1))] + [
      obs.format_action(s.stamp_for(step), name, "indoors", ACTIONS[name])
      for name in sorted(s.agent_names)]) for step in (1, 2)]
  premise = f"{obs.format_clock(s.stamp_for(1))}\n{s.premise}"
  for entity in agents(sim).values():
    assert seen(entity) == [premise] + slots
  events = obs.parse_all(slots[0])
  assert events[0] == obs.ClockObservation(s.stamp_for(2))
  assert [e.actor for e in events[1:]] == sorted(s.agent_names)


def test_a_failed_adjudication_is_recorded_and_the_event_still_happens():
  model = ScriptedModel([DOER_RULE, LOOK_RULE, (r"You are the referee", "this is not JSON")])
  sim = simulation(model, detector=())
  sim.play(max_steps=2)
  records = game_masters.drain_records(sim.get_game_masters()[0])
  assert [r["kind"] for r in records] == ["failure", "action"] * 6
  failure, action = records[:2]
  assert failure["op"] == "GM.adjudicate" and failure["raw"] == "this is not JSON"
  assert failure["agent"] == "GM" and failure["step"] == 1
  assert action["behaviours"] == [] and action["adjudicated"] is False
  assert action["evidence"].startswith("adjudication failed")
  actor = action["actor"]
  expected = obs.format_action(scenario().stamp_for(1), actor, "indoors",
                               ACTIONS[actor])
  assert expected in seen(agents(sim)["Tom Gomez"])[1]


def test_an_agent_whose_turn_raises_gets_a_failure_record_for_the_slot(
    monkeypatch, capfd):
  model = referee_model()
  sim = simulation(model, detector=())
  tom = agents(sim)["Tom Gomez"]

  def broken(*args, **kwargs):
    raise ConnectionError("endpoint went away")

  monkeypatch.setattr(tom, "act", broken)
  sim.play(max_steps=2)
  records = game_masters.drain_records(sim.get_game_masters()[0])
  per_slot = [[(r["kind"], r.get("actor") or r.get("agent")) for r in records
               if r["step"] == step] for step in (1, 2)]
  for slot in per_slot:
    assert slot == [("action", "Abigail Chen"), ("action", "Carlos Gomez"),
                    ("failure", "Tom Gomez")]
  failure = records[2]
  assert failure["op"] == "Act" and "endpoint went away" in failure["error"]
  assert failure["error"] == "ConnectionError: endpoint went away"
  assert "Traceback" not in capfd.readouterr().err


def test_a_conversation_runs_its_rounds_and_reaches_both_sides_only():
  model = referee_model()
  sim = simulation(model)
  s = scenario()
  sim.play(max_steps=3)
  records = game_masters.drain_records(sim.get_game_masters()[0])
  talks = [r for r in records if r["kind"] == "conversation"]
  assert len(talks) == 1
  talk = talks[0]
  # Abigail sees Carlos smoke in slot 1 when slot 2 begins; the talk is held
  # at the end of slot 2, after the slot's actions.
  assert talk["step"] == 2 and talk["dropped"] == []
  assert (talk["initiator"], talk["partner"]) == ("Abigail Chen",
                                                  "Carlos Gomez")
  assert talk["norm"] == "No smoking indoors."
  assert talk["behaviour"] == ACTIONS["Carlos Gomez"]
  # Two rounds of two utterances, quotes and name prefixes stripped.
  assert talk["turns"] == [
      {"speaker": "Abigail Chen",
       "text": "Carlos, would you mind smoking outside?"},
      {"speaker": "Carlos Gomez", "text": "Oh, sorry, I didn't think."},
      {"speaker": "Abigail Chen", "text": "Thank you, the air is better for all."},
      {"speaker": "Carlos Gomez", "text": "I will finish it on the terrace."}]
  assert talk["ended"] == "rounds"
  transcript = obs.format_conversation(
      s.stamp_for(2), "Abigail Chen", "Carlos Gomez",
      talk["topic"], [(t["speaker"], t["text"]) for t in talk["turns"]])
  people = agents(sim)
  # It reaches both at the start of slot 3, after that slot's actions.
  assert seen(people["Abigail Chen"])[-1].endswith("\n" + transcript)
  assert seen(people["Carlos Gomez"])[-1].endswith("\n" + transcript)
  assert transcript not in seen(people["Tom Gomez"])[-1]
  parsed = obs.parse(transcript)
  assert isinstance(parsed, obs.ConversationObservation)
  assert len(parsed.turns) == 4
  # Each utterance was asked for with the transcript so far.
  talk_calls = people["Carlos Gomez"].get_act_component().turns
  assert len(talk_calls) == 2
  assert 'Abigail Chen: "Carlos, would you mind smoking outside?"' in (
      talk_calls[0])
  assert "{" not in talk_calls[0]
  # The initiator (only) is reminded what it saw and which norm it breaks.
  first = people["Abigail Chen"].get_act_component().turns[0]
  assert "Carlos lights a cigarette" in first and "No smoking indoors" in first
  assert "No smoking indoors" not in talk_calls[0]


@pytest.mark.parametrize("speaker", ["Carlos Gomez", "Abigail Chen"])
@pytest.mark.parametrize("failed", ["marker", "raises"])
def test_a_turn_whose_answer_failed_its_schema_ends_the_talk(
    monkeypatch, speaker, failed):
  """A failed turn is no line of talk: the act's failure marker (or its
  StructuredOutputError: StructuredAct raises for a line of talk) ends the
  talk, nobody reads it as words, and a talk that failed before a word was
  said reaches nobody."""
  model = referee_model()
  sim = simulation(model)
  person = agents(sim)[speaker]
  act = person.act

  def failing_speech(action_spec=None):
    if action_spec is not None and action_spec.tag == obs.SPEECH_TAG:
      if failed == "raises":
        raise StructuredOutputError("the answer fails the schema", raw="5",
                                    attempts=3)
      return f"{person.name} {structured_act.NO_VALID_ACTION}"
    return act(action_spec)

  monkeypatch.setattr(person, "act", failing_speech)
  sim.play(max_steps=3)
  records = game_masters.drain_records(sim.get_game_masters()[0])
  talk, = [r for r in records if r["kind"] == "conversation"]
  said = ["Abigail Chen"] if speaker == "Carlos Gomez" else []
  assert [t["speaker"] for t in talk["turns"]] == said
  assert talk["ended"].startswith(f"{speaker}'s turn failed")
  transcripts = [o for p in agents(sim).values() for o in seen(p)
                 if "Conversation between" in o]
  assert len(transcripts) == (2 if said else 0)
  for p in agents(sim).values():
    assert not any(obs.NO_ACTION_MARK in o for o in seen(p))
    assert not any(f'{speaker}: "' in o for o in seen(p))


def test_the_episode_ends_at_the_scenario_length_without_asking_a_model():
  model = referee_model()
  sim = simulation(model, detector=())
  sim.play(max_steps=100)
  gm = sim.get_game_masters()[0]
  assert gm.get_component("__terminate__").completed_steps == 6
  assert model.calls_by_tag() == {"GM.adjudicate": 18, "GM.doer": 18}
  records = game_masters.drain_records(gm)
  assert [r["step"] for r in records] == [n for n in range(1, 7)
                                          for _ in range(3)]


def test_conversations_are_one_per_agent_per_slot_and_in_a_fixed_order():
  requests = conversations.group_requests([
      {"initiator": "C", "partner": "B", "norm": "n1"},
      {"initiator": "A", "partner": "B", "norm": "n2"},
      {"initiator": "D", "partner": "E", "norm": "n3"},
      {"initiator": "E", "partner": "A", "norm": "n4"}], list("ABCDE"))
  held, dropped = conversations.schedule(requests)
  assert [(r["initiator"], r["partner"]) for r in held] == [("A", "B"),
                                                            ("D", "E")]
  assert [(r["initiator"], r["partner"]) for r in dropped] == [("C", "B"),
                                                               ("E", "A")]


def test_the_action_spec_is_fixed_free_text_naming_the_time():
  model = referee_model()
  sim = simulation(model, detector=())
  sim.play(max_steps=2)
  for name, entity in agents(sim).items():
    calls = entity.get_act_component().calls
    assert calls == [f"It is Day 1 {clock} at Tiny Cafe. What does {name} do "
                     "next? Describe one action in one sentence."
                     for clock in ("09:00", "09:10")]


@pytest.fixture
def no_tag_gate(monkeypatch):
  """The scripted referee's tags stand, near the action or not: for tests
  of what comes after the tags (the gate has its own test)."""
  monkeypatch.setattr(tag_gate, "MIN_TAG_SIMILARITY", -1.0)


@pytest.mark.usefixtures("no_tag_gate")
def test_a_behaviour_added_to_the_scenario_needs_no_python():
  s = scenario(behaviours=[
      *[b.model_dump() for b in scenario().behaviours],
      {"id": "phone_call", "description": "makes a phone call in the reading room"}])
  model = ScriptedModel([DOER_RULE, LOOK_RULE, (r"You are the referee", lambda p: {
      "narration": "Tom calls his mother.", "place": "indoors",
      "evidence": _ACTION_LINE.search(p)["action"],
      "behaviour": "phone_call", "also": "none"})])
  sim = simulation(model, s=s, detector=())
  sim.play(max_steps=1)
  assert "- phone_call: makes a phone call in the reading room" in (
      model.calls[0].prompt)
  assert "phone_call" in model.calls[0].schema["properties"]["also"]["enum"]
  records = game_masters.drain_records(sim.get_game_masters()[0])
  assert [r["behaviours"] for r in records] == [["phone_call"]] * 3


def test_game_master_state_survives_a_checkpoint():
  model = referee_model()
  sim = simulation(model)
  sim.play(max_steps=3)
  data = json.loads(json.dumps(sim.make_checkpoint_data()))
  fresh = simulation(referee_model())
  fresh.load_from_checkpoint(data)
  old_gm, new_gm = sim.get_game_masters()[0], fresh.get_game_masters()[0]
  for key in ("__terminate__", "__make_observation__", "__resolution__",
              "__next_acting__", "conversations"):
    assert (new_gm.get_component(key).get_state()
            == old_gm.get_component(key).get_state()), key
  assert new_gm.get_component("__terminate__").completed_steps == 3
  # The queue still holds step 3's event for everyone.
  assert all(new_gm.get_component("__make_observation__").pending(n)
             for n in scenario().agent_names)


def test_waiting_events_arrive_together_as_one_observation():
  model = referee_model()
  sim = simulation(model, detector=())
  gm = sim.get_game_masters()[0]
  queue = gm.get_component("__make_observation__")
  s = scenario()
  one = obs.format_action(s.stamp_for(1), "Tom Gomez", "indoors", "Tom waves.")
  two = obs.format_action(s.stamp_for(1), "Tom Gomez", "outdoors", "Tom goes.")
  queue.add("Carlos Gomez", one)
  queue.add("Carlos Gomez", two)
  spec = entity_lib.ActionSpec(
      call_to_action=("What is the current situation faced by Carlos Gomez? "
                      "What do they now observe? Only include information of "
                      "which they are aware."),
      output_type=entity_lib.OutputType.MAKE_OBSERVATION)
  assert gm.act(spec) == f"{obs.format_clock(s.stamp_for(1))}\n{one}\n{two}"
  assert seen(agents(sim)["Carlos Gomez"]) == []
  assert queue.pending("Carlos Gomez") == []


@pytest.mark.parametrize("said, words", [
    ('Abigail Chen: "Would you smoke outside?"', "Would you smoke outside?"),
    ('Abigail says, "Please, not inside." and smiles.', "Please, not inside."),
    ('"Sure."', "Sure."),
    ("Abigail Chen: Of course.", "Of course."),
    ("Abigail asks Carlos: could you step out?", "could you step out?"),
    ("I would rather not.", "I would rather not."),
    ("", ""),
    ("Abigail Chen:", ""),
    ('Line one.\nLine "two".', "two"),
    ("Abigail nods warmly, saying: 'I'm glad you're here, Carlos.'",
     "I'm glad you're here, Carlos."),
    ("Abigail Chen: 'Don't worry.", "Don't worry."),
])
def test_utterances_are_only_the_words(said, words):
  assert utterances.clean_utterance(said, "Abigail Chen") == words


def test_requests_are_grouped_per_pair_and_checked():
  requests = [
      {"initiator": "A", "partner": "B", "topic": "smoking", "norm": "n1"},
      {"initiator": "A", "partner": "B", "topic": "noise", "norm": "n2"},
      {"initiator": "A", "partner": "A", "topic": "x"},
      {"initiator": "A", "partner": "Z", "topic": "x"},
      {"initiator": "C", "partner": "B", "topic": "smoking", "norm": "n1"},
  ]
  grouped = conversations.group_requests(requests, ["A", "B", "C"])
  assert [(g["initiator"], g["partner"], g["topics"]) for g in grouped] == [
      ("A", "B", ["smoking", "noise"]), ("C", "B", ["smoking"])]


def test_two_choices_make_the_behaviour_list():
  ids = ["smoking_indoors", "loud", "none_of_the_above"]
  assert general_call.behaviours_of(
      {"behaviour": "loud", "also": "none"}, ids) == ["loud"]
  assert general_call.behaviours_of(
      {"behaviour": "loud", "also": "loud"}, ids) == ["loud"]
  assert general_call.behaviours_of(
      {"behaviour": "none", "also": "smoking_indoors"}, ids) == [
          "smoking_indoors"]
  # A scenario with a behaviour called "none" gets another "nothing" word.
  schema = general_call.adjudication_schema(["none", "loud"])
  assert schema["properties"]["behaviour"]["enum"] == [
      "none", "loud", "talk_only", "no_behaviour"]
  # The contrast choice (only talk of a behaviour) is no behaviour either,
  # and gives way in turn to a behaviour of that name.
  assert general_call.behaviours_of(
      {"behaviour": "talk_only", "also": "none"}, ids) == []
  schema = general_call.adjudication_schema(["talk_only", "loud"])
  assert schema["properties"]["also"]["enum"] == [
      "talk_only", "loud", "only_talk_of_it", "none"]


def test_the_adjudication_prompt_is_short():
  s = scenario()
  prompt = general_call.adjudication_prompt(
      place=s.setting, behaviours=[b.model_dump() for b in s.behaviours],
      actor="Carlos Gomez", action=ACTIONS["Carlos Gomez"])
  assert len(prompt.split()) < 200
  assert prompt.index("Behaviours") < prompt.index("Carlos lights")


@pytest.mark.parametrize("action, delivered", [
    ("Carlos lights a cigarette.", "Carlos lights a cigarette."),
    ("Carlos Gomez reads aloud.", "Carlos Gomez reads aloud."),
    ("I light a cigarette.", "Carlos lights a cigarette."),
    ('"Good morning, everyone!"', "Carlos lights a cigarette."),
    ("Carlotta waves.", "Carlos lights a cigarette."),
])
def test_observers_see_the_agents_own_words_when_they_tell_the_action(
    action, delivered):
  assert action_text.observed_text("Carlos Gomez", action,
                                    "Carlos lights a cigarette.") == delivered


@pytest.mark.parametrize("written, cleaned", [
    ("Carlos Gomez: Carlos Gomez lights a cigarette.",
     "Carlos Gomez lights a cigarette."),
    # The head of an event line, copied from the agent's recent events.
    ("Carlos Gomez (indoors): Carlos Gomez lights a cigarette.",
     "Carlos Gomez lights a cigarette."),
    ("Carlos Gomez (outdoors, continuing):  Carlos Gomez   smokes.",
     "Carlos Gomez smokes."),
    # Someone else's head, or a name with words after it, stays as written.
    ("Tom Gomez (indoors): Tom Gomez laughs.",
     "Tom Gomez (indoors): Tom Gomez laughs."),
    ("Carlos Gomez (the poet) lights a cigarette.",
     "Carlos Gomez (the poet) lights a cigarette."),
])
def test_an_action_loses_the_head_of_an_event_line_the_agent_copied(
    written, cleaned):
  assert action_text.clean_action(written, "Carlos Gomez") == cleaned


class _Talker:
  """An entity that says its lines in turn and keeps what it observes."""

  def __init__(self, name: str, lines: list[str]):
    self.name, self._lines, self.specs, self.seen = name, lines, [], []

  def act(self, action_spec):
    self.specs.append(action_spec)
    return self._lines[min(len(self.specs), len(self._lines)) - 1]

  def observe(self, text):
    self.seen.append(text)


def test_repeats_are_recognised_and_new_words_are_not():
  said = [("Abigail Chen", "Please smoke outside, it bothers people.")]
  assert utterances.repeats_earlier(
      "Please smoke outside, it bothers people!", said)
  assert utterances.repeats_earlier("it bothers people", said)
  assert not utterances.repeats_earlier(
      "Sorry, I will take it to the terrace.", said)


def test_a_refusal_is_not_an_utterance():
  assert utterances.out_of_character(
      "I'm sorry, but I can't participate in that discussion.")
  assert utterances.out_of_character("As an AI language model, I cannot.")
  assert utterances.out_of_character(
      "I'm sorry, but I don't know what Tom Gomez will say next.")
  assert utterances.out_of_character(
      "I'm sorry, but I'm not sure how to respond to that.")
  assert utterances.out_of_character("Abigail Chen, Tamara Rodriguez says,")
  assert not utterances.out_of_character(
      "I'm sorry, I didn't know it bothered you. Here is what he says:"
      " smoke outside.")
  assert not utterances.out_of_character(
      "Sorry, I can't stand the smoke either. I'll step outside.")


def test_a_speaker_who_only_echoes_ends_the_talk_and_nothing_is_made_up():
  line = "Carlos, would you mind smoking outside?"
  abigail = _Talker("Abigail Chen", [line])
  # Carlos echoes twice (the first try and the "something new" retry).
  carlos = _Talker("Carlos Gomez", [f"Abigail Chen: '{line}'", line])
  talk = conversations.NormConversations(
      entities=[abigail, carlos], place="Hobbs Cafe", max_rounds=2)
  record = talk.run_conversation(
      {"initiator": "Abigail Chen", "partner": "Carlos Gomez",
       "topics": ["No smoking indoors."], "norms": ["No smoking indoors."],
       "norm_ids": ["a-1"], "behaviours": ["Carlos lights a cigarette."]},
      obs.Stamp(1, "09:10", 2))
  assert record["turns"] == [{"speaker": "Abigail Chen", "text": line}]
  assert record["ended"] == "Carlos Gomez had nothing new to say in character"
  assert len(carlos.specs) == 2
  assert "something not said yet" in carlos.specs[1].call_to_action
  assert all(s.tag == obs.SPEECH_TAG for s in carlos.specs)
  # Nothing is delivered by running it (the game master queues it).
  assert abigail.seen == carlos.seen == []


def test_a_behaviour_without_evidence_is_kept_apart_not_counted():
  model = ScriptedModel([DOER_RULE, LOOK_RULE, (r"You are the referee", lambda p: {
      "narration": "Abigail packs food boxes.", "place": "indoors",
      "evidence": "none", "behaviour": "tipped", "also": "none"})])
  sim = simulation(model, detector=())
  sim.play(max_steps=1)
  record = game_masters.drain_records(sim.get_game_masters()[0])[0]
  assert record["behaviours"] == [] and record["unsupported"] == ["tipped"]
  assert has_evidence('"leaves a tip"')
  assert not has_evidence(" None. ")


@pytest.mark.parametrize("evidence", [
    "smoking_indoors",  # A behaviour's id, not the action's words.
    "She lights a cigarette by the window."])  # Words of no action here.
def test_evidence_that_is_not_the_actions_words_supports_nothing(evidence):
  model = ScriptedModel([DOER_RULE, LOOK_RULE, (r"You are the referee", lambda p: {
      "narration": "Someone reads.", "place": "indoors",
      "evidence": evidence, "behaviour": "smoking_indoors", "also": "none"})])
  sim = simulation(model, detector=())
  sim.play(max_steps=1)
  records = game_masters.drain_records(sim.get_game_masters()[0])
  actions = [r for r in records if r["kind"] == "action"]
  assert actions and all(r["behaviours"] == [] for r in actions)
  assert all(r["unsupported"] == ["smoking_indoors"] for r in actions)
  # Each was asked for once more, saying why; the answer stayed unsupported.
  referee_calls = [c.prompt for c in model.calls
                   if c.tag == "GM.adjudicate"]
  assert len(referee_calls) == 2 * len(actions)
  # With the claim dropped, each action gets the second look
  # (second_look.py), which found nothing here.
  assert model.calls_by_tag().get("GM.look") == len(actions)
  assert all(r["second_look"]["accepted"] is False for r in actions)
  assert sum(f'Your evidence "{evidence}" is not words of' in p
             for p in referee_calls) == len(actions)


@pytest.mark.usefixtures("no_tag_gate")
def test_an_answer_quoting_the_action_when_asked_again_counts():
  def referee_answer(prompt):
    action = _ACTION_LINE.search(prompt)["action"]
    quoted = "is not words of" in prompt
    return {"narration": action, "place": "indoors",
            "evidence": action if quoted else "smoking_indoors",
            "behaviour": "smoking_indoors", "also": "none"}
  model = ScriptedModel([DOER_RULE, LOOK_RULE, (r"You are the referee", referee_answer)])
  sim = simulation(model, detector=())
  sim.play(max_steps=1)
  actions = [r for r in game_masters.drain_records(sim.get_game_masters()[0])
             if r["kind"] == "action"]
  assert actions and all(r["behaviours"] == ["smoking_indoors"]
                         and "unsupported" not in r for r in actions)


def test_the_referee_judges_with_the_simulations_embedder(monkeypatch):
  """Concordia's convention: the game master's referee embeds with the
  embedder the simulation was given (it reaches the prefab through the
  memory bank), any text -> vector function, never a model of its own."""
  def no_default():
    raise AssertionError("the game master loaded the default embedder")
  monkeypatch.setattr(embedding.vectors, "shared_embedder", no_default)
  seen: set[str] = set()
  lock = threading.Lock()

  def recording(text: str) -> np.ndarray:
    with lock:
      seen.add(text)
    return constant_embedder(text)
  sim = simulation(referee_model(), detector=(), embedder=recording)
  sim.play(max_steps=1)
  described = {b.description for b in scenario().behaviours}
  assert described <= seen
  actions = [r for r in game_masters.drain_records(sim.get_game_masters()[0])
             if r["kind"] == "action"]
  # Every text is the same vector: every tag is as near as can be.
  scored = [r["tag_similarity"] for r in actions if r.get("tag_similarity")]
  assert scored and all(set(t.values()) == {1.0} for t in scored)


def test_a_tag_far_from_the_action_is_kept_apart_with_its_score(embedder):
  """The referee quotes each action truly and tags it as a tip: only the
  action that is about tipping keeps the tag (tag_gate.py, real embedder);
  the others keep it apart, visibly, with no further call."""
  def referee_answer(prompt):
    action = _ACTION_LINE.search(prompt)["action"]
    return {"narration": action, "place": "indoors", "evidence": action,
            "behaviour": "tipped", "also": "none"}
  model = ScriptedModel([DOER_RULE, LOOK_RULE, (r"You are the referee", referee_answer)])
  sim = simulation(model, detector=(), embedder=embedder)
  sim.play(max_steps=1)
  records = {r["actor"]: r for r in game_masters.drain_records(
      sim.get_game_masters()[0]) if r["kind"] == "action"}
  assert records["Abigail Chen"]["behaviours"] == ["tipped"]
  assert "far_from_action" not in records["Abigail Chen"]
  for name in ("Carlos Gomez", "Tom Gomez"):
    assert records[name]["behaviours"] == []
    assert records[name]["far_from_action"] == ["tipped"]
    assert records[name]["tag_similarity"]["tipped"] < (
        tag_gate.MIN_TAG_SIMILARITY
        <= records["Abigail Chen"]["tag_similarity"]["tipped"])
  # No second ask and no doer check for a far tag: only Abigail's near one
  # is asked who does it. Carlos's smoke and Tom's shout, left with no tag,
  # get the second look (second_look.py), which finds nothing here.
  assert model.calls_by_tag() == {"GM.adjudicate": 3, "GM.doer": 1,
                                  "GM.look": 2}
  assert all(records[name]["second_look"]["accepted"] is False
             for name in ("Carlos Gomez", "Tom Gomez"))


def test_an_action_far_from_every_behaviour_is_not_put_to_the_referee(
    embedder):
  """No tag could pass the gate (tag_gate.py, real embedder): no call, no
  behaviour, the unsaid place, and the record says the referee was not
  asked. Text that does not tell of its actor (read through the referee's
  narration) and answers to an occasion are asked all the same."""
  def referee_answer(prompt):
    action = _ACTION_LINE.search(prompt)["action"]
    return {"narration": action, "place": "outdoors", "evidence": action,
            "behaviour": "tipped", "also": "none"}
  model = ScriptedModel([DOER_RULE, LOOK_RULE, (r"You are the referee", referee_answer)])
  s = scenario()
  referee = adjudication.Adjudication(
      model.tagged(referee_lib.ADJUDICATE_TAG), place=s.setting,
      default_place="indoors", behaviours=s.behaviours,
      similarity=functools.partial(embedding.pair_similarity, embedder))
  puzzle = "Tom Gomez solves a crossword puzzle."
  event, failure = referee.adjudicate("Tom Gomez", puzzle)
  assert failure is None and not model.calls
  assert event["behaviours"] == [] and event["place"] == "indoors"
  assert event["adjudicated"] is True and event["referee_asked"] is False
  nearest, score = event["nearest_behaviour"]
  assert nearest in {b.id for b in s.behaviours}
  assert score < tag_gate.MIN_TAG_SIMILARITY
  referee.adjudicate("Tom Gomez", "I solve a crossword puzzle.")
  referee.adjudicate("Tom Gomez", puzzle, situation="The bill comes.")
  assert model.calls_by_tag()["GM.adjudicate"] == 2


def test_a_tag_resting_on_the_place_words_alone_is_kept_apart(embedder):
  """The deed, not the place (tag_gate.py, real embedder): an action that
  only happens on the terrace is near "smokes a cigarette outside, on the
  terrace" by the place words; without them it is not. Smoking there is
  near by its deed."""
  setting = ("Hobbs Cafe, a small café in Smallville with an indoor room "
             "and an outdoor terrace")
  words = tag_gate.place_words(setting)
  assert {"terrace", "outdoor", "outside", "café"} <= words
  assert not {"a", "and", "with"} & words
  assert tag_gate.without_place(
      "Tom eats his snacks at the small outdoor terrace.", words) == (
          "Tom eats his snacks at the .")
  described = {"smoking_outside": "smokes a cigarette outside, on the "
                                  "terrace or the street"}
  snack = "Francisco Lopez takes a break to eat his snacks at the small outdoor terrace."
  smoke = "Carlos Gomez steps out onto the terrace and lights a cigarette there."
  for action, counts in ((snack, False), (smoke, True)):
    ids = ["smoking_outside"]
    full = tag_gate.tag_similarities(action, ids, described,
                                     functools.partial(embedding.pair_similarity, embedder))
    deed = tag_gate.deed_similarities(action, ids, described,
                                      functools.partial(embedding.pair_similarity, embedder), words)
    assert full["smoking_outside"] >= tag_gate.MIN_TAG_SIMILARITY
    kept, far = tag_gate.split_tags(full, deed_scores=deed)
    assert (kept, far) == ((ids, []) if counts else ([], ids))


def test_a_description_made_of_place_words_alone_keeps_its_full_texts():
  seen = []

  def similarity(a: str, b: str) -> float:
    seen.append((a, b))
    return 0.5
  words = tag_gate.place_words("a garden with a shed")
  scores = tag_gate.deed_similarities(
      "Dev waters his beans in the garden.", ["out", "water"],
      {"out": "outdoors in the garden", "water": "waters plants"},
      similarity, words)
  assert scores == {"out": 0.5, "water": 0.5}
  assert seen == [("Dev waters his beans in the garden.",
                   "outdoors in the garden"),
                  ("Dev waters his beans in the .", "waters plants")]


def test_a_quote_may_drop_or_change_a_word():
  action = "Carlos Gomez lights one cigarette after another at the table."
  assert repetition.quotes("lights one cigarette after another", action)
  assert repetition.quotes("Carlos lit one cigarette after another", action,
                           names=["Carlos Gomez"])
  assert not repetition.quotes("smokes indoors", action)
  assert not repetition.quotes("Carlos Gomez", action, names=["Carlos Gomez"])


# -- occasions -------------------------------------------------------------------

BILL = {"id": "bill", "at": "09:20",
        "situation": "The server brings {actor} the bill.",
        "question": "What does {actor} do about it?"}


def test_each_agent_meets_an_occasion_once_in_the_first_slot_since_its_time():
  s = scenario(occasions=[BILL])  # Slots 1-6 are 09:00-09:50.
  model = referee_model()
  sim = simulation(model, s, detector=())
  sim.play(max_steps=6)
  records = game_masters.drain_records(sim.get_game_masters()[0])
  met = [(r["step"], r["actor"]) for r in records if r.get("occasion") == "bill"]
  assert met == [(3, name) for name in sorted(s.agent_names)]  # 09:20.
  # The agent is told the situation in that slot's question, and the
  # referee reads it just before the action; no other slot mentions it.
  for name, entity in agents(sim).items():
    calls = entity.get_act_component().calls
    told = [c for c in calls if "brings" in c]
    assert all("do next?" in c for c in calls if c not in told)
    assert told == [f"It is {s.stamp_for(3).time} at Tiny Cafe. The server "
                    f"brings {name} the bill. What does {name} do about it? "
                    "Describe one action in one sentence."]
  situations = [c.prompt for c in model.calls if "Situation:" in c.prompt]
  assert sorted(re.search(r"Situation: The server brings (.*) the bill\.\n",
                          p)[1] for p in situations) == sorted(s.agent_names)


def _replay(occasions, actor, stamps):
  return [(o.id if (o := occasions_lib.occasion_at(
      [Occasion.model_validate(o) for o in occasions], actor=actor,
      step=step,
      stamp_for=stamps.__getitem__)) else None)
          for step in range(1, len(stamps))]


def test_occasions_due_together_are_met_in_successive_slots_and_daily():
  # Slots at 09:00, 09:30, 10:00 on day 1 and day 2.
  stamps = [None] + [obs.Stamp(day, clock, 3 * (day - 1) + i + 1)
                     for day in (1, 2)
                     for i, clock in enumerate(("09:00", "09:30", "10:00"))]
  coffee = {"id": "coffee", "at": "09:00", "situation": "Coffee for {actor}."}
  bill = {"id": "bill", "at": "09:00", "situation": "A bill."}
  assert _replay([coffee, bill], "A", stamps) == [
      "coffee", "bill", None, "coffee", "bill", None]
  only_b = {**bill, "agents": ["B"]}
  assert _replay([only_b], "A", stamps) == [None] * 6


def test_an_occasion_naming_behaviours_gets_a_focused_check_verified_by_embedding(
    embedder):
  bill = {"id": "bill", "at": "09:00", "situation": "The bill comes for {actor}.",
          "behaviours": ["tipped"]}
  s = scenario(occasions=[bill])
  blind = {"narration": "x", "place": "indoors", "evidence": "none",
           "behaviour": "none", "also": "none"}
  model = ScriptedModel([
      # The focused check proposes a tip for every answer ...
      (r"Which of these does", {"evidence": "a tip", "behaviour": "tipped"}),
      # ... and the general referee sees nothing at all.
      LOOK_RULE, (r"You are the referee", lambda p: {**blind, "narration": _ACTION_LINE.search(p)["action"]})])
  sim = simulation(model, s, detector=(), embedder=embedder)
  sim.play(max_steps=1)
  records = {r["actor"]: r for r in game_masters.drain_records(sim.get_game_masters()[0])}
  assert set(records) == set(s.agent_names)  # Each met the bill once.
  abigail, tom = records["Abigail Chen"], records["Tom Gomez"]
  # Paying with a tip is about tipping; shouting is not, whatever was proposed.
  assert abigail["behaviours"] == ["tipped"]
  assert abigail["occasion_check"]["accepted"] is True
  assert tom["behaviours"] == [] and tom["occasion_check"]["behaviour"] == "tipped"
  assert tom["occasion_check"]["accepted"] is False
  assert tom["occasion_check"]["similarity"] < 0.25 <= abigail["occasion_check"]["similarity"]
  checks = [c for c in model.calls if "Which of these does" in c.prompt]
  assert len(checks) == 3 and all("Situation: The bill comes for" in c.prompt for c in checks)
  # Abigail's answer is far from every behaviour but the checked tip: the
  # general referee is spared it (tag_gate.py); Carlos's smoke and Tom's
  # shout are put to it.
  assert abigail["referee_asked"] is False
  assert "referee_asked" not in tom and "referee_asked" not in records["Carlos Gomez"]
  # Carlos's smoke and Tom's shout, which the general call named nothing
  # in, also get the second look (second_look.py), which finds nothing.
  assert model.calls_by_tag() == {"GM.adjudicate": 5, "GM.look": 2}


@pytest.mark.usefixtures("no_tag_gate")
def test_the_focused_check_decides_among_the_occasions_behaviours():
  """The general referee says "tipped", the check "refused_tip": the event
  records the check's choice only, not both; a behaviour outside the
  occasion's (smoking) stays as the general referee gave it."""
  s = scenario(behaviours=[
      *scenario().to_dict()["behaviours"],
      {"id": "refused_tip", "description": "pays without adding a tip"}],
      occasions=[{"id": "bill", "at": "09:00",
                  "situation": "The bill comes for {actor}.",
                  "behaviours": ["tipped", "refused_tip"]}])

  def general(prompt: str) -> dict:
    action = _ACTION_LINE.search(prompt)["action"]
    return {"narration": action, "place": "indoors", "evidence": action,
            "behaviour": "tipped", "also": (
                "smoking_indoors" if "cigarette" in action else "none")}

  model = ScriptedModel([
      (r"Which of these does Abigail", {"evidence": "pays for her tea",
                                        "behaviour": "refused_tip"}),
      (r"Which of these does", {"evidence": "none", "behaviour": "none"}),
      DOER_RULE, LOOK_RULE, (r"You are the referee", general)])
  sim = simulation(model, s, detector=())
  sim.play(max_steps=1)
  records = {r["actor"]: r
             for r in game_masters.drain_records(sim.get_game_masters()[0])}
  abigail, carlos = records["Abigail Chen"], records["Carlos Gomez"]
  assert abigail["occasion_check"]["accepted"] is True
  assert abigail["behaviours"] == ["refused_tip"]
  # The check found nothing: the general referee's answer stands.
  assert "tipped" in carlos["behaviours"]
  assert "smoking_indoors" in carlos["behaviours"]


def test_a_conversation_parses_as_delivered_and_as_shown_on_one_line():
  talk = obs.format_conversation(
      obs.Stamp(1, "09:20", 3), "Abigail Chen", "Carlos Gomez", "smoking",
      [("Abigail Chen", "Please: not inside."), ("Carlos Gomez", "Sorry, I will.")])
  flat = " ".join(talk.splitlines())  # As Concordia's observation component shows it.
  for text in (talk, flat):
    event = obs.parse(text)
    assert event.topic == "smoking"
    assert event.turns == (("Abigail Chen", "Please: not inside."),
                           ("Carlos Gomez", "Sorry, I will."))


def test_a_turn_without_an_action_is_recorded_without_a_referee_call(monkeypatch):
  monkeypatch.setitem(ACTIONS, "Tom Gomez",
                      f"Tom Gomez {obs.NO_ACTION_MARK}: the model failed)")
  model = referee_model()
  sim = simulation(model, detector=())
  sim.play(max_steps=3)
  records = {r["actor"]: r for r in game_masters.drain_records(sim.get_game_masters()[0])}
  tom = records["Tom Gomez"]
  assert tom["behaviours"] == [] and tom["adjudicated"] is False
  assert tom["evidence"] == referee_lib.NO_ACTION_EVIDENCE
  assert model.calls_by_tag() == {"GM.adjudicate": 6, "GM.doer": 6}


@pytest.mark.parametrize("default", ["outdoors", "indoors", None])
def test_the_referee_is_told_the_scenarios_default_place(default):
  """The place of an action that does not say where is the scenario's
  `default_place` (told to the model; given outright when nothing was
  adjudicated), else where people usually are in the setting."""
  answer = {"narration": "Gus waters his bed.", "place": "indoors",
            "evidence": "none", "behaviour": "none", "also": "none"}
  model = ScriptedModel([DOER_RULE, LOOK_RULE, (r"You are the referee", answer)])
  referee = adjudication.Adjudication(
      model, place="a garden", default_place=default,
      behaviours=[Behaviour(id="loud", description="shouts")])
  event, failure = referee.adjudicate("Gus Lindqvist",
                                      "Gus Lindqvist waters his bed.")
  assert failure is None and event["place"] == "indoors"  # The model's.
  prompt = model.calls[0].prompt
  if default:
    assert f"{default}, where the action does not say" in prompt
    assert "usually are in the setting" not in prompt
  else:
    assert "where people usually are in the setting above" in prompt
  idle, _ = referee.adjudicate("Gus Lindqvist",
                               f"Gus Lindqvist {obs.NO_ACTION_MARK}")
  assert idle["place"] == (default or "indoors")
  assert len(model.calls) == 1  # Nothing to adjudicate: no call.


def test_the_default_place_is_validated():
  with pytest.raises(ValueError, match="default_place"):
    adjudication.Adjudication(ScriptedModel([]), place="x", behaviours=[],
                              default_place="upstairs")


def test_an_action_that_says_nothing_is_no_action_whoever_wrote_it(
    monkeypatch):
  """An agent (any agent: a Concordia user's too) that answers with its
  name alone, or nothing: not put to the referee, whose narration of it
  would be a scene of its own making, and passed over by observers."""
  monkeypatch.setitem(ACTIONS, "Tom Gomez", "Tom Gomez.")
  monkeypatch.setitem(ACTIONS, "Carlos Gomez", "  ")
  model = referee_model()
  sim = simulation(model, detector=())
  sim.play(max_steps=2)
  records = {r["actor"]: r for r in game_masters.drain_records(
      sim.get_game_masters()[0]) if r["kind"] == "action" and r["step"] == 1}
  for name in ("Tom Gomez", "Carlos Gomez"):
    assert records[name]["action"] == f"{name} {obs.NO_DEED}"
    assert records[name]["adjudicated"] is False
    assert records[name]["behaviours"] == []
  assert records["Abigail Chen"]["adjudicated"] is True
  asked = [c.prompt for c in model.calls if c.tag == "GM.adjudicate"]
  assert asked and all("Abigail" in p for p in asked)
  seen_by_abigail = " ".join(seen(agents(sim)["Abigail Chen"]))
  assert "Tom Gomez." not in seen_by_abigail
  # No deed, nothing perceived: the marker reaches no observer's prompt.
  assert obs.NO_ACTION_MARK not in seen_by_abigail


def test_a_talk_turn_says_its_norm_once_to_whom_it_was_shown():
  from game_masters import conversations  # pylint: disable=import-outside-toplevel
  norm = "People should not smoke indoors."
  asked = functools.partial(
      utterances.turn_call_to_action, stamp=obs.Stamp(1, "09:10", 2),
      place="Hobbs Cafe", initiator="Ana Diaz", partner="Bo Li",
      topic=utterances.topic_of(norm), norm=norm,
      behaviour="Bo Li lights a cigarette.")
  opening = asked(speaker="Ana Diaz", turns=[])
  assert opening.count("smoke indoors") == 1
  assert "goes over to Bo Li to talk about this." in opening
  reply = asked(speaker="Bo Li", turns=[("Ana Diaz", "Please step out.")])
  # The partner was shown neither the deed nor the norm: the topic says it.
  assert ("Ana Diaz and Bo Li are talking about people should not smoke "
          "indoors.") in reply

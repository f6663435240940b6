"""The café game master on Concordia's engine, with small fake agents.

The fakes stand in for the CRSEC agents where only the game master's side of
the contract matters (docs/design.md, "Entities"): they act from a script,
log every observation, and one of them asks to talk about smoking.
"""

from __future__ import annotations

import copy
import dataclasses
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

from crsec_concordia import game_masters
from crsec_concordia import observations as obs
from crsec_concordia.game_masters import adjudication, conversations
from crsec_concordia.game_masters import turn_order
from crsec_concordia.models import ScriptedModel
from crsec_concordia.runner import _QuietSequential
from crsec_concordia.scenarios import parse_scenario

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
    event = obs.parse(observation)
    me = self.get_entity().name
    if (isinstance(event, obs.ActionObservation) and event.actor != me
        and "cigarette" in event.text and event.place == "indoors"):
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
  return ScriptedModel([(r"You are the referee", referee)])


def simulation(model, s=None, detector=("Abigail Chen",)):
  s = s or scenario()
  instances = [prefab_lib.InstanceConfig(
      prefab="fake__Entity", role=prefab_lib.Role.ENTITY,
      params={"name": a.name, "detector": a.name in detector})
               for a in s.agents]
  instances.append(prefab_lib.InstanceConfig(
      prefab="cafe__GameMaster", role=prefab_lib.Role.GAME_MASTER,
      params={"name": "GM", "scenario": s.to_dict(), "seed": 3}))
  config = prefab_lib.Config(
      prefabs={"fake__Entity": FakeAgent(), **game_masters.PREFABS},
      instances=instances, default_premise=s.premise,
      default_max_steps=s.total_steps)
  return simulation_lib.Simulation(config, model, constant_embedder,
                                   engine=_QuietSequential())


def agents(sim):
  return {e.name: e for e in sim.get_entities()}


def seen(entity) -> list[str]:
  return entity.get_component("log").seen


# -- tests -----------------------------------------------------------------------


def test_each_action_is_adjudicated_into_one_structured_event():
  model = referee_model()
  sim = simulation(model, detector=())
  sim.play(max_steps=3)
  gm = sim.get_game_masters()[0]
  records = game_masters.drain_records(gm)
  assert [r["kind"] for r in records] == ["action"] * 3
  s = scenario()
  for step, r in enumerate(records, start=1):
    assert r["step"] == step and r["time"] == s.stamp_for(step).time
    assert r["actor"] == turn_order.actor_for_step(s.agent_names, 3, step)
    assert r["action"] == ACTIONS[r["actor"]]
    assert r["place"] == "indoors" and r["adjudicated"] is True
  by_actor = {r["actor"]: r["behaviours"] for r in records}
  assert by_actor == {"Abigail Chen": ["tipped"],
                      "Carlos Gomez": ["smoking_indoors"],
                      "Tom Gomez": ["loud"]}
  # One model call per step, counted as the game master's; nothing else.
  assert model.calls_by_tag() == {"GM.adjudicate": 3}
  call = model.calls[0]
  ids = call.schema["properties"]["behaviour"]["enum"]
  assert ids == ["smoking_indoors", "smoking_outside", "loud", "tipped", "none"]


def test_observations_are_delivered_verbatim_to_everyone_the_actor_too():
  model = referee_model()
  sim = simulation(model, detector=())
  sim.play(max_steps=4)
  s = scenario()
  events = []
  for step in range(1, 4):  # Step 4's event is delivered at step 5.
    actor = turn_order.actor_for_step(s.agent_names, 3, step)
    events.append(obs.format_action(s.stamp_for(step), actor, "indoors",
                                    ACTIONS[actor]))
  for entity in agents(sim).values():
    assert seen(entity) == [s.premise] + events
  assert obs.parse(events[0]).actor == turn_order.actor_for_step(
      s.agent_names, 3, 1)


def test_a_failed_adjudication_is_recorded_and_the_event_still_happens():
  model = ScriptedModel([(r"You are the referee", "this is not JSON")])
  sim = simulation(model, detector=())
  sim.play(max_steps=2)
  records = game_masters.drain_records(sim.get_game_masters()[0])
  assert [r["kind"] for r in records] == ["failure", "action"] * 2
  failure, action = records[:2]
  assert failure["op"] == "GM.adjudicate" and failure["raw"] == "this is not JSON"
  assert failure["agent"] == "GM" and failure["step"] == 1
  assert action["behaviours"] == [] and action["adjudicated"] is False
  assert action["evidence"].startswith("adjudication failed")
  actor = action["actor"]
  expected = obs.format_action(scenario().stamp_for(1), actor, "indoors",
                               ACTIONS[actor])
  assert expected in seen(agents(sim)["Tom Gomez"])


def test_a_conversation_runs_its_rounds_and_reaches_both_sides_only():
  model = referee_model()
  sim = simulation(model)
  s = scenario()
  carlos_step = next(n for n in range(1, 7) if turn_order.actor_for_step(
      s.agent_names, 3, n) == "Carlos Gomez")
  sim.play(max_steps=carlos_step + 1)
  records = game_masters.drain_records(sim.get_game_masters()[0])
  talks = [r for r in records if r["kind"] == "conversation"]
  assert len(talks) == 1
  talk = talks[0]
  # The talk happens at the step after the smoking (when it is observed),
  # before that step's action.
  kinds = [(r["kind"], r["step"]) for r in records]
  assert kinds.index(("conversation", carlos_step + 1)) < kinds.index(
      ("action", carlos_step + 1))
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
      s.stamp_for(carlos_step + 1), "Abigail Chen", "Carlos Gomez",
      talk["topic"], [(t["speaker"], t["text"]) for t in talk["turns"]])
  people = agents(sim)
  assert transcript in seen(people["Abigail Chen"])
  assert transcript in seen(people["Carlos Gomez"])
  assert transcript not in seen(people["Tom Gomez"])
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


def test_the_episode_ends_at_the_scenario_length_without_asking_a_model():
  model = referee_model()
  sim = simulation(model, detector=())
  sim.play(max_steps=100)
  gm = sim.get_game_masters()[0]
  assert gm.get_component("__terminate__").completed_steps == 6
  assert model.calls_by_tag() == {"GM.adjudicate": 6}
  records = game_masters.drain_records(gm)
  assert [r["step"] for r in records] == [1, 2, 3, 4, 5, 6]


def test_everyone_acts_once_per_round_in_a_seeded_order():
  names = ["Abigail Chen", "Carlos Gomez", "Tom Gomez", "Tamara Rodriguez"]
  order = [turn_order.actor_for_step(names, 7, n) for n in range(1, 13)]
  for r in range(3):
    assert sorted(order[4 * r:4 * r + 4]) == sorted(names)
  assert order == [turn_order.actor_for_step(list(reversed(names)), 7, n)
                   for n in range(1, 13)]
  others = [[turn_order.actor_for_step(names, seed, n) for n in range(1, 13)]
            for seed in range(8)]
  assert any(o != order for o in others)


def test_the_action_spec_is_fixed_free_text_naming_the_time():
  model = referee_model()
  sim = simulation(model, detector=())
  sim.play(max_steps=2)
  s = scenario()
  first = turn_order.actor_for_step(s.agent_names, 3, 1)
  calls = agents(sim)[first].get_act_component().calls
  assert calls[0] == (f"It is Day 1 09:00 at Tiny Cafe. What does {first} do "
                      "next? Describe one action in one sentence.")


def test_a_behaviour_added_to_the_scenario_needs_no_python():
  s = scenario(behaviours=[
      *[b.model_dump() for b in scenario().behaviours],
      {"id": "phone_call", "description": "makes a phone call in the reading room"}])
  model = ScriptedModel([(r"You are the referee", lambda p: {
      "narration": "Tom calls his mother.", "place": "indoors",
      "evidence": "calls", "behaviour": "phone_call", "also": "none"})])
  sim = simulation(model, s=s, detector=())
  sim.play(max_steps=1)
  assert "- phone_call: makes a phone call in the reading room" in (
      model.calls[0].prompt)
  assert "phone_call" in model.calls[0].schema["properties"]["also"]["enum"]
  [record] = game_masters.drain_records(sim.get_game_masters()[0])
  assert record["behaviours"] == ["phone_call"]


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


def test_more_than_one_waiting_event_arrives_as_separate_observations():
  model = referee_model()
  sim = simulation(model, detector=())
  gm = sim.get_game_masters()[0]
  queue = gm.get_component("__make_observation__")
  s = scenario()
  one = obs.format_action(s.stamp_for(1), "Tom Gomez", "indoors", "Tom waves.")
  two = obs.format_action(s.stamp_for(1), "Tom Gomez", "outdoors", "Tom goes.")
  queue.add("Carlos Gomez", one)
  queue.add("Carlos Gomez", two)
  carlos = agents(sim)["Carlos Gomez"]
  spec = entity_lib.ActionSpec(
      call_to_action=("What is the current situation faced by Carlos Gomez? "
                      "What do they now observe? Only include information of "
                      "which they are aware."),
      output_type=entity_lib.OutputType.MAKE_OBSERVATION)
  last = gm.act(spec)
  assert seen(carlos) == [one] and last == two


@pytest.mark.parametrize("said, words", [
    ('Abigail Chen: "Would you smoke outside?"', "Would you smoke outside?"),
    ('Abigail says, "Please, not inside." and smiles.', "Please, not inside."),
    ('"Sure."', "Sure."),
    ("Abigail Chen: Of course.", "Of course."),
    ("Abigail asks Carlos: could you step out?", "could you step out?"),
    ("I would rather not.", "I would rather not."),
    ("", conversations.NO_REPLY),
    ('Line one.\nLine "two".', "two"),
    ("Abigail nods warmly, saying: 'I'm glad you're here, Carlos.'",
     "I'm glad you're here, Carlos."),
    ("Abigail Chen: 'Don't worry.", "Don't worry."),
])
def test_utterances_are_only_the_words(said, words):
  assert conversations.clean_utterance(said, "Abigail Chen") == words


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
  assert adjudication.behaviours_of(
      {"behaviour": "loud", "also": "none"}, ids) == ["loud"]
  assert adjudication.behaviours_of(
      {"behaviour": "loud", "also": "loud"}, ids) == ["loud"]
  assert adjudication.behaviours_of(
      {"behaviour": "none", "also": "smoking_indoors"}, ids) == [
          "smoking_indoors"]
  # A scenario with a behaviour called "none" gets another "nothing" word.
  schema = adjudication.adjudication_schema(["none", "loud"])
  assert schema["properties"]["behaviour"]["enum"] == [
      "none", "loud", "no_behaviour"]


def test_the_adjudication_prompt_is_short():
  s = scenario()
  prompt = adjudication.adjudication_prompt(
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
  assert adjudication.observed_text("Carlos Gomez", action,
                                    "Carlos lights a cigarette.") == delivered


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
  assert conversations.repeats_earlier(
      "Please smoke outside, it bothers people!", said)
  assert conversations.repeats_earlier("it bothers people", said)
  assert not conversations.repeats_earlier(
      "Sorry, I will take it to the terrace.", said)


def test_a_refusal_is_not_an_utterance():
  assert conversations.out_of_character(
      "I'm sorry, but I can't participate in that discussion.")
  assert conversations.out_of_character("As an AI language model, I cannot.")
  assert conversations.out_of_character(
      "I'm sorry, but I don't know what Tom Gomez will say next.")
  assert conversations.out_of_character(
      "I'm sorry, but I'm not sure how to respond to that.")
  assert conversations.out_of_character("Abigail Chen, Tamara Rodriguez says,")
  assert not conversations.out_of_character(
      "I'm sorry, I didn't know it bothered you. Here is what he says:"
      " smoke outside.")
  assert not conversations.out_of_character(
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
  # Both still receive the (short) transcript.
  assert abigail.seen == carlos.seen and len(carlos.seen) == 1


def test_a_behaviour_without_evidence_is_kept_apart_not_counted():
  model = ScriptedModel([(r"You are the referee", lambda p: {
      "narration": "Abigail packs food boxes.", "place": "indoors",
      "evidence": "none", "behaviour": "tipped", "also": "none"})])
  sim = simulation(model, detector=())
  sim.play(max_steps=1)
  [record] = game_masters.drain_records(sim.get_game_masters()[0])
  assert record["behaviours"] == [] and record["unsupported"] == ["tipped"]
  assert adjudication.has_evidence('"leaves a tip"')
  assert not adjudication.has_evidence(" None. ")


# -- occasions -------------------------------------------------------------------

BILL = {"id": "bill", "at": "09:20",
        "situation": "The server brings {actor} the bill.",
        "question": "What does {actor} do about it?"}


def test_each_agent_meets_an_occasion_once_at_their_first_turn_since_its_time():
  s = scenario(occasions=[BILL])  # Steps 1-6 are 09:00-09:50, 3 agents.
  model = referee_model()
  sim = simulation(model, s, detector=())
  sim.play(max_steps=6)
  records = game_masters.drain_records(sim.get_game_masters()[0])
  met = {r["step"]: r["actor"] for r in records if r.get("occasion") == "bill"}
  expected = {}
  for step in range(1, 7):
    actor = turn_order.actor_for_step(s.agent_names, 3, step)
    if s.stamp_for(step).clock >= "09:20" and actor not in expected.values():
      expected[step] = actor
  assert met == expected and sorted(met.values()) == sorted(s.agent_names)
  # The agent is told the situation in that turn's question, and the
  # referee reads it just before the action; no other turn mentions it.
  for name, entity in agents(sim).items():
    calls = entity.get_act_component().calls
    told = [c for c in calls if "brings" in c]
    assert all("do next?" in c for c in calls if c not in told)
    assert told == [f"It is {s.stamp_for(step).time} at Tiny Cafe. The server "
                    f"brings {name} the bill. What does {name} do about it? "
                    "Describe one action in one sentence."
                    for step, who in met.items() if who == name]
  situations = [c.prompt for c in model.calls if "Situation:" in c.prompt]
  assert [re.search(r"Situation: The server brings (.*) the bill\.\n", p)[1]
          for p in situations] == list(met.values())


def _replay(occasions, actors, stamps):
  from crsec_concordia.game_masters import occasions as occasions_lib  # pylint: disable=import-outside-toplevel
  return [(o.id if (o := occasions_lib.occasion_at(
      occasions_lib.parse(occasions), step=step, stamp_for=stamps.__getitem__,
      actor_at=actors.__getitem__)) else None)
          for step in range(1, len(stamps))]


def test_occasions_due_together_are_met_on_successive_turns_and_daily():
  # One agent, steps at 09:00, 09:30, 10:00 on day 1 and day 2.
  stamps = [None] + [obs.Stamp(day, clock, 3 * (day - 1) + i + 1)
                     for day in (1, 2)
                     for i, clock in enumerate(("09:00", "09:30", "10:00"))]
  actors = ["A"] * len(stamps)
  coffee = {"id": "coffee", "at": "09:00", "situation": "Coffee for {actor}."}
  bill = {"id": "bill", "at": "09:00", "situation": "A bill."}
  assert _replay([coffee, bill], actors, stamps) == [
      "coffee", "bill", None, "coffee", "bill", None]
  only_b = {**bill, "agents": ["B"]}
  assert _replay([only_b], actors, stamps) == [None] * 6


def test_an_occasion_naming_behaviours_gets_a_focused_check_verified_by_embedding():
  bill = {"id": "bill", "at": "09:00", "situation": "The bill comes for {actor}.",
          "behaviours": ["tipped"]}
  s = scenario(occasions=[bill])
  blind = {"narration": "x", "place": "indoors", "evidence": "none",
           "behaviour": "none", "also": "none"}
  model = ScriptedModel([
      # The focused check proposes a tip for every answer ...
      (r"Which of these does", {"evidence": "a tip", "behaviour": "tipped"}),
      # ... and the general referee sees nothing at all.
      (r"You are the referee", lambda p: {**blind, "narration": _ACTION_LINE.search(p)["action"]})])
  sim = simulation(model, s, detector=())
  sim.play(max_steps=3)
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
  assert model.calls_by_tag() == {"GM.adjudicate": 6}


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
  assert tom["evidence"] == adjudication.NO_ACTION_EVIDENCE
  assert model.calls_by_tag() == {"GM.adjudicate": 2}

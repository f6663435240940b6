"""Places: where agents are, what they perceive, who they talk with.

The scenario is tests/data/two_rooms.yaml: a reading room and a games room
with no view of each other, and a hall (capacity 2) that sees into both.
The game master runs on the slot engine with scripted agents (they act
from a script per slot and ask to talk as scripted) and a scripted referee
that places an action where its words say, else where the actor is.
"""

from __future__ import annotations

import dataclasses
import re
import threading
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from concordia.agents import entity_agent_with_logging
from concordia.components import agent as agent_components
from concordia.prefabs.simulation import generic as simulation_lib
from concordia.typing import entity_component
from concordia.typing import prefab as prefab_lib

from crsec_concordia.components.crsec_port import CrsecPort
from crsec_concordia.components.port import PORT_KEY
from crsec_concordia import embedding
from crsec_concordia.embedding import thresholds as embedder_thresholds
from crsec_concordia import game_masters
from crsec_concordia import observations as obs
from crsec_concordia.embedding import records as thresholds
from crsec_concordia.game_masters import perception as perception_lib
from crsec_concordia.game_masters import places as places_lib
from crsec_concordia.game_masters import prefab as gm_prefab
from crsec_concordia.game_masters import whereabouts as whereabouts_lib
from crsec_concordia.game_masters.referee import general_call
from crsec_concordia.models import ScriptedModel
from crsec_concordia.runs.slot_engine import SlotEngine
from crsec_concordia.scenarios import (ScenarioError, load_scenario,
                                       parse_scenario)
from tests import crsec_script

TWO_ROOMS = Path(__file__).with_name("data") / "two_rooms.yaml"
ABIGAIL, MEI, CARLOS, TOM = ("Abigail Chen", "Mei Lin", "Carlos Gomez",
                             "Tom Gomez")


def two_rooms(**changes):
  s = load_scenario(TWO_ROOMS)
  return s.from_dict({**s.to_dict(), **changes}) if changes else s


def constant_embedder(text: str) -> np.ndarray:
  del text
  return np.ones(8, dtype=np.float32) / np.sqrt(8)


# -- the scenario file ---------------------------------------------------------


def test_a_scenario_names_its_places_and_each_agent_a_home():
  s = two_rooms()
  assert s.declares_places
  assert s.place_ids == ["reading_room", "games_room", "hall"]
  hall = s.place("hall")
  assert hall.in_view == ["hall", "reading_room", "games_room"]
  assert hall.capacity == 2 and hall.indoors
  assert [s.home_of(n) for n in (ABIGAIL, MEI, CARLOS, TOM)] == [
      "reading_room", "reading_room", "games_room", "games_room"]
  assert s.perception.max_events == 12
  # What the agents' planners are given: the places by id and description.
  assert s.entity_params(MEI)["places"][2] == {
      "id": "hall", "description": "the entrance hall, with doors open to "
                                   "both rooms"}
  again = s.from_dict(s.to_dict())
  assert again.to_dict() == s.to_dict() and again.declares_places


@pytest.mark.parametrize("name", ["hobbs_cafe_mini", "hobbs_cafe",
                                  "community_garden"])
def test_a_scenario_without_places_has_indoors_and_outdoors_and_dumps_as_before(
    name):
  s = load_scenario(name)
  assert not s.declares_places
  assert [(p.id, p.in_view) for p in s.places] == [
      ("indoors", ["indoors", "outdoors"]), ("outdoors", ["outdoors", "indoors"])]
  data = s.to_dict()
  assert "places" not in data and "perception" not in data
  assert all("home" not in a for a in data["agents"])
  assert "places" not in s.entity_params(s.agent_names[0])
  assert not s.with_max_steps(2).declares_places
  assert s.start_place == s.default_place


@pytest.mark.parametrize("edit, expected", [
    (("sees: [reading_room, games_room]", "sees: [readng_room, games_room]"),
     ['places[2].sees[0]: "readng_room" is not a place of this scenario '
      '(did you mean reading_room?); use one of: reading_room, games_room, hall']),
    (("home: games_room}", "home: cellar}"),
     ['agents[2].home: "cellar" is not a place of this scenario; use one of: '
      'reading_room, games_room, hall']),
    (("default_place: reading_room", "default_place: lobby"),
     ['default_place: "lobby" is not a place of this scenario; use one of: '
      'reading_room, games_room, hall']),
    (("default_place: reading_room\n", ""),
     ["default_place: is missing, and the file declares places; add "
      "`default_place: reading_room`"]),
    (("capacity: 2", "capacity: 1\n    hears: [hall]"),
     ['places[2].hears[0]: "hall" is the place itself; remove it']),
])
def test_a_misnamed_place_is_one_line_naming_the_fix(edit, expected):
  text = TWO_ROOMS.read_text(encoding="utf-8").replace(*edit, 1)
  with pytest.raises(ScenarioError) as caught:
    parse_scenario(text, "bad.yaml")
  problems = caught.value.problems
  assert len(problems) == len(expected), problems
  for problem, want in zip(problems, expected):
    assert re.match(r"bad\.yaml:\d+: ", problem) and want in problem, problem


def test_no_place_starts_with_more_agents_than_it_holds():
  text = TWO_ROOMS.read_text(encoding="utf-8").replace(
      "home: reading_room}", "home: hall}")
  parse_scenario(text, "ok.yaml")  # Two homes in the hall: it holds 2.
  with pytest.raises(ScenarioError, match=(
      r"^full\.yaml:\d+: places\[2\]\.capacity: 2 is fewer than the 3 "
      r"agents who start there; raise it, or give some of those agents "
      r"another home$")):
    parse_scenario(text.replace("home: games_room}", "home: hall}", 1),
                   "full.yaml")


def test_a_scenario_without_places_names_only_indoors_or_outdoors():
  source = load_scenario("hobbs_cafe_mini").source_path.read_text()
  with pytest.raises(ScenarioError, match=(
      r"default_place: \"terrace\" is not a place of this scenario; use one "
      r"of: indoors, outdoors; or declare the scenario's places under")):
    parse_scenario(source.replace("default_place: indoors",
                                  "default_place: terrace"), "old.yaml")


# -- places, moves and perception, one by one ----------------------------------


def place_map(s=None) -> places_lib.PlaceMap:
  return places_lib.PlaceMap.of(s or two_rooms())


def test_what_is_perceived_from_each_place():
  places = place_map()
  assert places.perceived_from("reading_room") == {"reading_room"}
  assert places.perceived_from("hall") == {"hall", "reading_room",
                                           "games_room"}
  legacy = place_map(load_scenario("hobbs_cafe_mini"))
  assert legacy.perceived_from("indoors") == {"indoors", "outdoors"}
  assert not legacy.declared and legacy.told(MEI, "indoors") == ""
  assert places.told(MEI, "hall") == (
      "Mei Lin is at hall (the entrance hall, with doors open to both rooms).")


def test_the_places_an_action_names():
  places = place_map()
  assert places.named_in("Mei walks over to the games room.") == ["games_room"]
  assert places.named_in("Mei goes to the GAMES_ROOM") == ["games_room"]
  assert places.named_in("Mei leaves the reading room for the hall.",
                         besides="reading_room") == ["hall"]
  assert places.named_in("Mei reads in the hallway.") == []
  assert places.named_in("Mei plays games in her room.") == []


def test_moves_into_a_full_place_are_refused_in_name_order():
  """The hall holds 2: of three who go there at once, the first two by name
  get in and the third stays; a move out frees a seat for a move in,
  whichever order the names come in."""
  homes = {ABIGAIL: "reading_room", MEI: "reading_room", CARLOS: "games_room",
           TOM: "games_room"}
  where = whereabouts_lib.Whereabouts(places=place_map(), homes=homes)
  changes = where.settle(1, {TOM: "hall", ABIGAIL: "hall", CARLOS: "hall",
                             MEI: "reading_room"})
  assert changes == {
      ABIGAIL: {"moved_from": "reading_room"},
      CARLOS: {"moved_from": "games_room"},
      TOM: {"move_refused": "capacity", "refused_place": "hall"}}
  assert where.now() == {**homes, ABIGAIL: "hall", CARLOS: "hall"}
  # Abigail leaves as Tom comes in: Tom's move waits for hers.
  changes = where.settle(2, {ABIGAIL: "games_room", TOM: "hall",
                             CARLOS: "hall", MEI: "reading_room"})
  assert changes == {ABIGAIL: {"moved_from": "hall"},
                     TOM: {"moved_from": "games_room"}}
  # Talks of slot 2 take where everyone was when it began.
  assert where.at_start_of(2)[ABIGAIL] == "hall"
  assert where.at_start_of(3)[ABIGAIL] == "games_room"
  assert where.may_talk(ABIGAIL, CARLOS, 2)
  assert not where.may_talk(ABIGAIL, CARLOS, 3)


def deed(actor: str, place: str, words: str, moved_from=None):
  return perception_lib.Deed(
      actor=actor, place=place, words=words, moved_from=moved_from,
      text=obs.format_action(obs.Stamp(1, "09:00", 1), actor, place, words))


def test_an_observer_perceives_the_deeds_in_view_and_a_mover_where_it_left():
  places = place_map()
  deeds = [deed(ABIGAIL, "reading_room", "Abigail reads."),
           deed(CARLOS, "games_room", "Carlos deals the cards."),
           deed(MEI, "hall", "Mei walks out to the hall.",
                moved_from="reading_room")]
  where = {ABIGAIL: "reading_room", CARLOS: "games_room", MEI: "hall"}
  seen = perception_lib.LocalPerception(places).compose(
      deeds, where, sorted(where))
  by = {name: [obs.parse(t).actor for t in texts]
        for name, texts in seen.texts.items()}
  assert by == {ABIGAIL: [ABIGAIL, MEI], CARLOS: [CARLOS],
                MEI: [ABIGAIL, CARLOS, MEI]}
  assert seen.unseen == {}


def word_embedder(text: str) -> np.ndarray:
  """A bag of words of three letters or more: texts that share words are
  near."""
  vector = np.zeros(512, dtype=np.float32)
  for word in re.findall(r"[a-z]{3,}", text.lower()):
    vector[zlib.crc32(word.encode()) % 512] += 1.0
  return vector if vector.any() else np.ones(512, dtype=np.float32)


def test_a_crowded_place_shows_its_own_deed_then_those_near_its_norms():
  """At most max_events deeds: the observer's own, then the deeds nearest
  the norms it holds, then the rest by name; told in name order, the rest
  counted as unseen."""
  places = place_map()
  names = [f"Guest {c}" for c in "ABCDEFG"]
  words = {"Guest A": "Guest A reads a novel.",
           "Guest B": "Guest B smokes a cigarette by the shelves.",
           "Guest C": "Guest C waters a plant.",
           "Guest D": "Guest D lights a cigarette and smokes.",
           "Guest E": "Guest E folds a newspaper.",
           "Guest F": "Guest F hums.", "Guest G": "Guest G naps."}
  deeds = [deed(n, "reading_room", words[n]) for n in names]
  where = dict.fromkeys(names, "reading_room")
  norms = {"Guest G": ["No smoking a cigarette here."]}
  perception = perception_lib.LocalPerception(
      places, max_events=3, norms_of=lambda n: norms.get(n, []),
      embedder=word_embedder)
  seen = perception.compose(deeds, where, names)
  actors = {n: [obs.parse(t).actor for t in texts]
            for n, texts in seen.texts.items()}
  # Guest G holds a norm about smoking: its own deed, then the two smokers.
  assert actors["Guest G"] == ["Guest B", "Guest D", "Guest G"]
  # Without norms: its own, then the others by name.
  assert actors["Guest C"] == ["Guest A", "Guest B", "Guest C"]
  assert actors["Guest A"] == ["Guest A", "Guest B", "Guest C"]
  assert seen.unseen == dict.fromkeys(names, 4)
  # The same slot composed again, observers in another order: the same.
  again = perception.compose(deeds, where, list(reversed(names)))
  assert again.texts == seen.texts and again.unseen == seen.unseen


# -- the game master with scripted agents --------------------------------------


class Log(entity_component.ContextComponent):
  """Every observation, verbatim."""

  def __init__(self):
    super().__init__()
    self._lock = threading.Lock()
    self.seen: list[str] = []

  def pre_observe(self, observation: str) -> str:
    with self._lock:
      self.seen.append(observation)
    return ""

  def get_state(self):
    return {}

  def set_state(self, state):
    del state


class Asks(entity_component.ContextComponent):
  """Asks to talk with the partners scripted for each slot (by the slot
  it observes at the start of)."""

  def __init__(self, script: Mapping[int, list[str]]):
    super().__init__()
    self._script = script
    self._lock = threading.Lock()
    self._slot = 0
    self._requests: list[dict[str, Any]] = []

  def pre_observe(self, observation: str) -> str:
    del observation
    me = self.get_entity().name
    with self._lock:
      self._slot += 1
      self._requests = [{"initiator": me, "partner": p, "topic": "the noise",
                         "norm": "Keep quiet.", "norm_id": "n1",
                         "behaviour": "shouts"}
                        for p in self._script.get(self._slot, [])]
    return ""

  def pop_conversation_requests(self):
    with self._lock:
      requests, self._requests = self._requests, []
    return requests

  def get_state(self):
    return {}

  def set_state(self, state):
    del state


class Script(entity_component.ActingComponent):
  """Acts from a script, one action per slot (the last one repeated)."""

  def __init__(self, actions: list[str]):
    super().__init__()
    self._actions = actions
    self.calls: list[str] = []

  def get_action_attempt(self, contexts, action_spec):
    del contexts
    if action_spec.tag == obs.SPEECH_TAG:
      return "Could you keep it down?"
    self.calls.append(action_spec.call_to_action)
    return self._actions[min(len(self.calls), len(self._actions)) - 1]

  def get_state(self):
    return {}

  def set_state(self, state):
    del state


@dataclasses.dataclass
class ScriptedAgent(prefab_lib.Prefab):
  description: str = "An agent acting from a script, for the places tests."
  params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

  def build(self, model, memory_bank):
    del model
    context = {"log": Log(), "__memory__": agent_components.memory
               .AssociativeMemory(memory_bank=memory_bank)}
    if self.params.get("asks"):
      context["ConflictDetector"] = Asks(
          {int(k): v for k, v in self.params["asks"].items()})
      # The game master takes its requests through the agent's port.
      context[PORT_KEY] = CrsecPort()
    return entity_agent_with_logging.EntityAgentWithLogging(
        agent_name=self.params["name"],
        act_component=Script(list(self.params["actions"])),
        context_components=context)


_ACTION = re.compile(r'^(?P<actor>[^:\n]+): "(?P<action>.*)"$', re.M)
_HERE = re.compile(r"^(?P<actor>.+) is at (?P<place>[a-z_]+) now\.$", re.M)


def place_referee(prompt: str, schema: dict) -> dict[str, str]:
  """Places an action where its words say, else where the actor is."""
  action = _ACTION.search(prompt)["action"]
  here = _HERE.search(prompt)["place"]
  named = place_map().named_in(action, besides=here)
  place = named[0] if named else here
  assert place in schema["properties"]["place"]["enum"]
  tags = ["loud"] if "shouts" in action else []
  named_tags = tags + ["none", "none"]
  return {"narration": action, "place": place,
          "evidence": action if tags else "none",
          "behaviour": named_tags[0], "also": named_tags[1]}


def referee_model() -> ScriptedModel:
  return ScriptedModel([(crsec_script.DOER, crsec_script.doer_answer),
                        (crsec_script.LOOK, crsec_script.look_none),
                        (r"You are the referee", place_referee)])


QUIET = {ABIGAIL: ["Abigail reads by the window."],
         MEI: ["Mei reads a novel."],
         CARLOS: ["Carlos shouts at the dartboard."],
         TOM: ["Tom deals the cards."]}


def simulation(model, actions=None, asks=None, s=None, embedder=None):
  s = s or two_rooms()
  actions = {**QUIET, **(actions or {})}
  instances = [prefab_lib.InstanceConfig(
      prefab="scripted__Entity", role=prefab_lib.Role.ENTITY,
      params={"name": n, "actions": actions[n],
              "asks": (asks or {}).get(n)}) for n in s.agent_names]
  instances.append(prefab_lib.InstanceConfig(
      prefab="venue__GameMaster", role=prefab_lib.Role.GAME_MASTER,
      params={"name": "GM", "scenario": s.to_dict(), "seed": 3}))
  config = prefab_lib.Config(
      prefabs={"scripted__Entity": ScriptedAgent(),
               **game_masters.GAME_MASTER_PREFABS},
      instances=instances, default_premise=s.premise,
      default_max_steps=s.total_steps)
  return simulation_lib.Simulation(config, model, embedder or constant_embedder,
                                   engine=SlotEngine())


def play(sim, steps: int) -> list[dict[str, Any]]:
  sim.play(max_steps=steps)
  return game_masters.drain_records(sim.get_game_masters()[0])


def seen_by(sim, name: str) -> str:
  agent = {e.name: e for e in sim.get_entities()}[name]
  return "\n".join(agent.get_component("log").seen)


def actors_seen(sim, name: str) -> set[str]:
  return {e.actor for e in obs.parse_all(seen_by(sim, name))
          if isinstance(e, obs.ActionObservation)}


def test_an_agent_does_not_observe_a_deed_in_a_place_it_cannot_see_or_hear():
  sim = simulation(referee_model())
  records = play(sim, 3)
  assert {(r["actor"], r["place"]) for r in records if r["kind"] == "action"
          } == {(ABIGAIL, "reading_room"), (MEI, "reading_room"),
                (CARLOS, "games_room"), (TOM, "games_room")}
  # Carlos shouts in the games room, every slot: nobody in the reading room
  # perceives it; both rooms perceive their own.
  assert actors_seen(sim, ABIGAIL) == actors_seen(sim, MEI) == {ABIGAIL, MEI}
  assert actors_seen(sim, CARLOS) == actors_seen(sim, TOM) == {CARLOS, TOM}
  assert "shouts" not in seen_by(sim, ABIGAIL)
  # Nothing is left out: the rooms hold fewer deeds than an observation.
  assert not any("unseen" in r for r in records)


def test_the_hall_sees_both_rooms_and_a_mover_is_seen_where_it_left():
  actions = {MEI: ["Mei reads a novel.", "Mei walks out to the hall.",
                   "Mei waits by the coat stand."]}
  sim = simulation(referee_model(), actions=actions)
  records = play(sim, 4)
  mei = {r["step"]: r for r in records
         if r["kind"] == "action" and r["actor"] == MEI}
  assert [mei[s]["place"] for s in (1, 2, 3, 4)] == [
      "reading_room", "hall", "hall", "hall"]
  assert mei[2]["moved_from"] == "reading_room"
  assert not {"moved_from", "move_refused"} & (set(mei[1]) | set(mei[3]))
  abigail = seen_by(sim, ABIGAIL)
  # Abigail sees Mei go (slot 2, from the reading room), not what she does
  # in the hall afterwards (the reading room does not see the hall).
  assert "Mei Lin (hall): Mei walks out to the hall." in abigail
  assert "coat stand" not in abigail
  # From the hall, Mei perceives both rooms.
  assert "Carlos Gomez (games_room): Carlos shouts" in seen_by(sim, MEI)
  # Her question says where she is, with the place's description.
  calls = {e.name: e for e in sim.get_entities()}[MEI].get_act_component().calls
  assert calls[0] == (
      "It is Day 1 09:00 at Linden Rooms. Mei Lin is at reading_room (a quiet "
      "room of armchairs and bookshelves). What does Mei Lin do next? "
      "Describe one action in one sentence.")
  assert calls[2].startswith("It is Day 1 09:20 at Linden Rooms. Mei Lin is "
                             "at hall (")


def test_the_referee_chooses_among_the_places_knowing_where_the_actor_is():
  model = referee_model()
  sim = simulation(model)
  play(sim, 1)
  call = next(c for c in model.calls if c.tag == general_call.TAG)
  assert call.schema["properties"]["place"]["enum"] == [
      "reading_room", "games_room", "hall"]
  assert ("Places:\n- reading_room: a quiet room of armchairs and bookshelves"
          in call.prompt)
  assert "the place where the actor is now (given below)" in call.prompt
  actor = _ACTION.search(call.prompt)["actor"]
  here = two_rooms().home_of(actor)
  assert f"{actor} is at {here} now.\n{actor}: \"" in call.prompt


def test_a_full_place_refuses_the_last_who_comes_in():
  """Three go to the hall (capacity 2) in the same slot: the first two by
  name get in; Tom stays in the games room, and is seen there."""
  go = {n: [f"{n.split()[0]} walks out to the hall."]
        for n in (ABIGAIL, CARLOS, TOM)}
  sim = simulation(referee_model(), actions=go)
  records = play(sim, 2)
  first = {r["actor"]: r for r in records
           if r["kind"] == "action" and r["step"] == 1}
  assert first[ABIGAIL]["place"] == first[CARLOS]["place"] == "hall"
  assert first[TOM]["place"] == "games_room"
  assert first[TOM]["move_refused"] == "capacity"
  assert first[TOM]["refused_place"] == "hall"
  assert "Tom Gomez (games_room): Tom walks out to the hall." in seen_by(
      sim, TOM)
  second = {r["actor"]: r for r in records
            if r["kind"] == "action" and r["step"] == 2}
  # Still full in slot 2: refused again, whoever's adjudication ends first.
  assert second[TOM]["move_refused"] == "capacity"


def test_agents_in_different_places_do_not_talk():
  """Abigail asks to talk with Carlos (another room) and with Mei (hers):
  only the talk with Mei is held; the other is recorded as dropped."""
  asks = {ABIGAIL: {"2": [CARLOS, MEI]}}
  sim = simulation(referee_model(), asks=asks)
  records = play(sim, 3)
  talks = [r for r in records if r["kind"] == "conversation"]
  assert [(t["initiator"], t["partner"], t["step"], t["place"])
          for t in talks] == [(ABIGAIL, MEI, 2, "reading_room")]
  dropped, = [r for r in records if r["kind"] == "talk_dropped"]
  assert dropped["step"] == 2 and dropped["reason"] == "not in the same place"
  assert (dropped["initiator"], dropped["partner"]) == (ABIGAIL, CARLOS)
  assert dropped["places"] == {ABIGAIL: "reading_room", CARLOS: "games_room"}
  assert "Conversation between" not in seen_by(sim, CARLOS)


def test_an_observation_holds_at_most_max_events_deeds():
  s = two_rooms(perception={"max_events": 1})
  sim = simulation(referee_model(), s=s)
  records = play(sim, 2)
  for r in records:
    if r["kind"] == "action":
      assert r["unseen"] == 1  # Two in each room: its own kept.
  for name in (ABIGAIL, MEI, CARLOS, TOM):
    assert actors_seen(sim, name) == {name}


def test_a_legacy_scenario_delivers_every_deed_to_everyone_and_talks_anywhere():
  """Indoors and outdoors see each other: as before places were declared."""
  source = load_scenario("hobbs_cafe_mini")
  s = source.from_dict({**source.to_dict(), "agents": [
      {"name": n, "role": "ordinary", "persona": "Someone."}
      for n in (ABIGAIL, MEI, CARLOS, TOM)]})
  actions = {CARLOS: ["Carlos smokes a cigarette outdoors."]}

  def referee(prompt: str) -> dict[str, str]:
    action = _ACTION.search(prompt)["action"]
    assert "Places:" not in prompt and " now.\n" not in prompt
    return {"narration": action, "evidence": "none", "behaviour": "none",
            "also": "none",
            "place": "outdoors" if "outdoors" in action else "indoors"}

  model = ScriptedModel([(crsec_script.LOOK, crsec_script.look_none),
                         (r"You are the referee", referee)])
  sim = simulation(model, actions=actions, s=s,
                   asks={ABIGAIL: {"2": [CARLOS]}})
  records = play(sim, 3)
  assert {r["place"] for r in records if r.get("actor") == CARLOS
          and r["kind"] == "action"} == {"outdoors"}
  assert not any({"moved_from", "move_refused", "unseen"} & set(r)
                 for r in records)
  for name in (ABIGAIL, MEI, CARLOS, TOM):
    assert actors_seen(sim, name) == {ABIGAIL, MEI, CARLOS, TOM}
  assert [(r["initiator"], r["partner"]) for r in records
          if r["kind"] == "conversation"] == [(ABIGAIL, CARLOS)]
  assert not any("place" in r for r in records if r["kind"] == "conversation")
  calls = {e.name: e for e in sim.get_entities()}[MEI].get_act_component().calls
  assert calls[0] == ("It is Day 1 09:00 at Hobbs Cafe. What does Mei Lin do "
                      "next? Describe one action in one sentence.")


@pytest.fixture
def measured_words(monkeypatch):
  """word_embedder measured, with MiniLM's cuts, as a person's own
  `crsec calibrate --thresholds --embedder` would leave it: an embedder
  nobody measured spares no action (embedding/thresholds.py)."""
  identity = embedding.identity_for(word_embedder)
  thresholds.save_similarity(dataclasses.replace(
      embedder_thresholds.MINILM_THRESHOLDS, embedder=identity.name,
      fingerprint=identity.fingerprint))
  monkeypatch.setattr(embedder_thresholds, "_found", {})


def test_an_action_the_referee_is_spared_goes_where_its_words_name(
    measured_words):
  """An action far from every behaviour is not put to the referee
  (referee/tag_gate.py): it happens where the actor is, or in the one
  other place its words name."""
  model = referee_model()
  actions = {MEI: ["Mei walks out to the hall.", "Mei waits by the coat stand."]}
  sim = simulation(model, actions=actions, embedder=word_embedder)
  records = play(sim, 2)
  spared = {(r["step"], r["actor"]): r for r in records
            if r["kind"] == "action" and r.get("referee_asked") is False}
  assert {(1, MEI), (2, MEI), (1, ABIGAIL), (1, TOM)} <= set(spared)
  assert spared[1, MEI]["place"] == "hall"
  assert spared[1, MEI]["moved_from"] == "reading_room"
  assert spared[2, MEI]["place"] == "hall"
  assert spared[1, ABIGAIL]["place"] == "reading_room"
  assert spared[1, TOM]["place"] == "games_room"
  asked = [c.prompt for c in model.calls if c.tag == general_call.TAG]
  assert asked and all("Carlos" in p for p in asked)


def test_where_everyone_is_survives_a_checkpoint():
  homes = {ABIGAIL: "reading_room", MEI: "reading_room"}
  where = whereabouts_lib.Whereabouts(places=place_map(), homes=homes)
  where.settle(4, {MEI: "hall", ABIGAIL: "reading_room"})
  again = whereabouts_lib.Whereabouts(places=place_map(), homes=homes)
  again.set_state(where.get_state())
  assert again.now() == {ABIGAIL: "reading_room", MEI: "hall"}
  assert again.at_start_of(4) == homes and again.at_start_of(5)[MEI] == "hall"


def test_the_game_master_reads_the_norms_each_agent_holds():
  model = crsec_script.cafe_model()
  held = crsec_script.build_agent(
      "normative", model, name=ABIGAIL, role="entrepreneur",
      initial_norms=[{"content": "No smoking indoors.", "type": "injunctive",
                      "utility": 90}])
  plain = crsec_script.build_agent("baseline", model, name=TOM)
  norms = gm_prefab.norms_of([held, plain])
  assert norms(ABIGAIL) == []  # Not yet created: it holds none yet.
  held.get_component("NormMemory").ensure_created()
  assert norms(ABIGAIL) == ["No smoking indoors."]
  assert norms(TOM) == [] and norms("Nobody") == []

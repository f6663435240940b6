"""A norm crosses between places only with an agent who goes there.

Real CRSEC agents (the prefabs) answering from the scripted café
(tests/crsec_script.py), the real sentence embedder, a scripted referee
that places an action where its words say, else where the actor is. Two
rooms with no view of each other: Abigail, who holds "No smoking
indoors.", and Mei in the reading room; Carlos, who smokes, and Tom in the
games room. Abigail sees Mei smoke and talks to her; Mei takes the norm.
If Mei then goes to the games room, she sees Carlos smoke and talks to
him, and Carlos takes the norm from her; if she stays, nobody in the games
room ever holds a norm.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from crsec_concordia import runner
from crsec_concordia.scenarios import parse_scenario
from tests import crsec_script as cs
from tests.machine_down import down_in_slot
from tests.test_places import place_referee

ROOMS = """
name: two_rooms_run
premise: A morning at the Linden Rooms, a club with a reading room and a games room.
setting: Linden Rooms, a small club with two rooms
places:
  - {id: reading_room, description: a quiet room of armchairs and bookshelves, indoors: true}
  - {id: games_room, description: a room of card tables and a dartboard, indoors: true}
default_place: reading_room
clock: {start: "09:00", end: "10:00", minutes_per_step: 10, days: 1}
max_steps: 6
conversation: {max_rounds: 1}
crsec: {reflect_every: 100}
agents:
  - name: Abigail Chen
    role: entrepreneur
    persona: A volunteer who dislikes smoke.
    home: reading_room
    initial_norms: [{content: No smoking indoors., type: injunctive, utility: 90}]
  - {name: Mei Lin, role: ordinary, persona: A student., home: reading_room}
  - {name: Carlos Gomez, role: ordinary, persona: A poet who smokes., home: games_room}
  - {name: Tom Gomez, role: ordinary, persona: A quiet student., home: games_room}
behaviours:
  - {id: smoking_indoors, description: smokes a cigarette inside a room}
  - {id: loud, description: speaks loudly or shouts}
"""
ABIGAIL, MEI, CARLOS, TOM = ("Abigail Chen", "Mei Lin", "Carlos Gomez",
                             "Tom Gomez")
_ASKED = re.compile(r"It is Day 1 (\d\d:\d\d) .*What does (.+?) do next\?",
                    re.S)


def acting_model(deed):
  """The rooms' scripted club: `deed(name, clock, prompt)` is what each
  agent does when it is asked at that clock; a conversation turn asks
  the smoker to stop; the referee reads the rooms."""
  def act(prompt: str) -> dict[str, str]:
    asked = _ASKED.search(prompt)
    if asked is None:  # A conversation turn.
      return {"answer": "Please do not smoke in here, it bothers people."}
    clock, name = asked.groups()
    return {"answer": deed(name, clock, prompt)}

  scripted = cs.cafe_model()
  scripted.add_rule(cs.ACT, act, first=True)
  scripted.add_rule(r"You are the referee", place_referee, first=True)
  scripted.add_rule(cs.LOOK, cs.look_none, first=True)
  return scripted


def model(mei_moves: bool):
  """The scripted café, each agent's deeds by the time it is asked."""
  def deed(name: str, clock: str, _prompt: str) -> str:
    if name == MEI:
      if clock == "09:00":
        return "Mei lights a cigarette in her armchair."
      if clock == "09:20" and mei_moves:
        return "Mei walks over to the games room."
      return "Mei joins in a round of whist."
    return {ABIGAIL: "Abigail reads by the window.",
            CARLOS: "Carlos lights a cigarette at the card table.",
            TOM: "Tom shuffles the deck."}[name]

  return acting_model(deed)


def run(tmp_path: Path, embedder, mei_moves: bool) -> Path:
  return runner.run_episode(
      parse_scenario(ROOMS, "rooms.yaml"), arm="normative", seed=1,
      out_dir=tmp_path / f"moves_{mei_moves}", model=model(mei_moves),
      embedder=embedder, progress=False)


def records(run_dir: Path) -> list[dict]:
  with open(run_dir / "events.jsonl", encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def held(run_dir: Path, step: int) -> dict[str, list[dict]]:
  """Each agent's qualified norms after `step`."""
  snapshot = json.loads(
      (run_dir / "norms" / f"step_{step:04d}.json").read_text())
  return {name: [n for n in db["norms"] if n["activated"] and n["valid"]]
          for name, db in snapshot.items()}


@pytest.mark.parametrize("mei_moves", [True, False])
def test_a_norm_reaches_another_place_only_with_an_agent_who_goes_there(
    tmp_path, embedder, mei_moves):
  run_dir = run(tmp_path, embedder, mei_moves)
  recs = records(run_dir)
  talks = [(r["step"], r["initiator"], r["partner"]) for r in recs
           if r["kind"] == "conversation"]
  moves = [(r["step"], r["actor"], r["moved_from"], r["place"]) for r in recs
           if r["kind"] == "action" and "moved_from" in r]
  # Abigail talks with Mei in their room; nobody else in it breaks her norm.
  assert talks[0] == (2, ABIGAIL, MEI)
  assert not [t for t in talks if ABIGAIL in t and {CARLOS, TOM} & set(t)]
  assert held(run_dir, 3)[MEI], "Mei took the norm from the talk"
  if mei_moves:
    assert moves == [(3, MEI, "reading_room", "games_room")]
    # In the games room, Mei sees Carlos smoke and talks to him.
    assert (4, MEI, CARLOS) in talks
    assert not held(run_dir, 4)[CARLOS]
    carlos = held(run_dir, 5)[CARLOS]
    assert carlos and {n["source_agent"] for n in carlos} == {MEI}
  else:
    assert moves == []
    assert talks == [(2, ABIGAIL, MEI)]
  # Before Mei went there (or ever, if she did not), nobody in the games
  # room held a norm, and nobody there ever took one from anyone but Mei.
  last = len([r for r in recs if r["kind"] == "step"])
  for step in range(1, last + 1):
    norms = held(run_dir, step)
    if not mei_moves or step < 5:
      assert not norms[CARLOS] and not norms[TOM], step
    assert {n["source_agent"] for n in norms[CARLOS] + norms[TOM]} <= {MEI}


def test_a_run_resumed_after_a_move_has_everyone_where_they_were(
    tmp_path, embedder, monkeypatch):
  """Mei went to the games room in slot 3; the machine goes down in slot 4:
  the resumed run has her there, and ends as the uninterrupted one."""
  whole = run(tmp_path / "whole", embedder, True)
  with down_in_slot(monkeypatch, 4):
    run(tmp_path / "crashed", embedder, True)
  crashed = tmp_path / "crashed" / "moves_True"
  runner.resume_episode(crashed, model=model(True), embedder=embedder,
                        progress=False)
  assert records(crashed) == records(whole)
  for step in range(1, 7):
    assert held(crashed, step) == held(whole, step)

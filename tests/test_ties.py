"""Social ties: the `network:` block, its checks, and the talks it allows.

A scripted run in one room (tests/crsec_script.py, the referee of
tests/test_places.py): Abigail holds "No smoking indoors." and five others
smoke in every slot. On a ring she may talk only with her two neighbours;
without the block she talks with whoever the schedule gives her.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from crsec_concordia import runner
from crsec_concordia import observations as obs
from crsec_concordia.game_masters import perception as perception_lib
from crsec_concordia.game_masters.conversations import UNTIED
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.metrics.measure import diffusion, run_metrics, ties
from crsec_concordia.metrics.present import tables
from crsec_concordia.rundir.reading import read_run
from crsec_concordia.scenarios import Scenario, ScenarioError, parse_scenario
from crsec_concordia.scenarios.network import attend_ties, talk_ties
from crsec_concordia.scenarios.network_checks import generate
from tests import crsec_script as cs
from tests.test_places import deed, place_map, place_referee
from tests.test_population import TOWN

SMOKERS = ["Mei Lin", "Carlos Gomez", "Tom Gomez", "Ines Osei", "Kofi Abara"]
ABIGAIL = "Abigail Chen"
ROOM = """
name: ring_room
premise: A morning at the Linden Rooms, a club with a reading room and a games room.
setting: Linden Rooms, a small club with two rooms
places:
  - {id: reading_room, description: a quiet room of armchairs and bookshelves, indoors: true}
  - {id: games_room, description: a room of card tables and a dartboard, indoors: true}
default_place: reading_room
clock: {start: "09:00", end: "10:00", minutes_per_step: 10, days: 1}
max_steps: 4
conversation: {max_rounds: 1}
crsec: {reflect_every: 100}
agents:
  - name: Abigail Chen
    role: entrepreneur
    persona: A volunteer who dislikes smoke.
    initial_norms: [{content: No smoking indoors., type: injunctive, utility: 90}]
""" + "".join(f"  - {{name: {n}, role: ordinary, persona: A guest.}}\n"
              for n in SMOKERS) + """behaviours:
  - {id: smoking_indoors, description: smokes a cigarette inside a room}
  - {id: loud, description: speaks loudly or shouts}
target_norms:
  - {id: no_smoking, text: No smoking indoors., type: injunctive, violates: [smoking_indoors]}
"""
RING = "network: {generator: ring, k: 2, talk: tied}\n"
_ASKED = re.compile(r"It is Day 1 (\d\d:\d\d) .*What does (.+?) do next\?",
                    re.S)


def model():
  def act(prompt: str) -> dict[str, str]:
    asked = _ASKED.search(prompt)
    if asked is None:  # A conversation turn.
      return {"answer": "Please do not smoke in here, it bothers people."}
    name = asked.group(2)
    if name == ABIGAIL:
      return {"answer": "Abigail reads by the window."}
    return {"answer": f"{name.split()[0]} lights a cigarette in an armchair."}

  scripted = cs.cafe_model()
  scripted.add_rule(cs.ACT, act, first=True)
  scripted.add_rule(r"You are the referee", place_referee, first=True)
  scripted.add_rule(cs.LOOK, cs.look_none, first=True)
  return scripted


def records(run_dir: Path) -> list[dict]:
  with open(run_dir / "events.jsonl", encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def run(tmp_path: Path, embedder, text: str, name: str) -> Path:
  return runner.run_episode(
      parse_scenario(text, "ring.yaml"), arm="normative", seed=1,
      out_dir=tmp_path / name, model=model(), embedder=embedder,
      progress=False)


@pytest.fixture(scope="module")
def ring_run(tmp_path_factory, embedder):
  return run(tmp_path_factory.mktemp("ties"), embedder, ROOM + RING, "ring")


def test_on_a_ring_an_agent_never_starts_a_talk_with_a_non_neighbour(
    ring_run, tmp_path, embedder):
  scenario = Scenario.from_dict(json.loads(
      (ring_run / "scenario.json").read_text(encoding="utf-8")))
  ties = scenario.network.neighbours()
  assert ties[ABIGAIL] == {"Mei Lin", "Kofi Abara"}
  recs = records(ring_run)
  talks = [(r["initiator"], r["partner"]) for r in recs
           if r["kind"] == "conversation"]
  assert talks, "the entrepreneur talked with someone"
  assert all(b in ties[a] for a, b in talks), talks
  untied = [r for r in recs if r["kind"] == "talk_dropped"
            and r["reason"] == UNTIED]
  assert untied and all(r["partner"] not in ties[r["initiator"]]
                        for r in untied)
  # Without the block, the same slots give a talk with a non-neighbour.
  free = records(run(tmp_path, embedder, ROOM, "free"))
  assert any(r["kind"] == "conversation" and r["partner"] not in ties[
      r["initiator"]] for r in free)
  assert not [r for r in free if r.get("reason") == UNTIED]


def test_the_run_records_the_generated_edges(ring_run):
  recorded = json.loads((ring_run / "scenario.json").read_text(
      encoding="utf-8"))["network"]
  assert recorded["edges"] == generate("ring", [ABIGAIL, *SMOKERS], k=2)
  config = json.loads((ring_run / "config.json").read_text(encoding="utf-8"))
  assert "network" in json.dumps(config)


@pytest.mark.parametrize("generator,params", [
    ("ring", {"k": 2}), ("small_world", {"k": 2, "p": 0.3}),
    ("scale_free", {"m": 2}), ("random", {"p": 0.4})])
def test_the_same_network_seed_gives_the_same_edges(generator, params):
  text = (ROOM + f"network: {{generator: {generator}, seed: 7, "
          + ", ".join(f"{k}: {v}" for k, v in params.items()) + "}\n")
  first = parse_scenario(text, "a.yaml").network.edges
  again = parse_scenario(text, "b.yaml").network.edges
  assert first == again and first
  names = [ABIGAIL, *SMOKERS]
  assert [list(e) for e in first] == generate(generator, names, seed=7,
                                              **params)
  if generator != "ring":
    other = [generate(generator, names, seed=s, **params) for s in range(8)]
    assert any(o != [list(e) for e in first] for o in other)


def test_a_reloaded_scenario_checks_its_recorded_edges():
  data = parse_scenario(ROOM + "network: {generator: small_world, k: 2, "
                        "p: 0.5, seed: 3}\n", "x.yaml").to_dict()
  assert Scenario.from_dict(data).network.edges
  data["network"]["seed"] = 4
  with pytest.raises(ScenarioError, match="are not the 6 edges the "
                     "small_world generator gives"):
    Scenario.from_dict(data)


@pytest.mark.parametrize("block,expected", [
    ("{edges: [[Abigail Chen, Mei Ln]]}",
     ['network.edges[0][1]: "Mei Ln" is not an agent of the network '
      "(did you mean Mei Lin?); use one of: Abigail Chen, Mei Lin,"]),
    ("{edges: [[Tom Gomez, Tom Gomez]]}",
     ['network.edges[0]: ties "Tom Gomez" to itself; remove it']),
    ("{generator: lattice}",
     ['network.generator: "lattice" is not a valid generator; use one of: '
      "ring, small_world, scale_free, random"]),
    ("{generator: ring, k: 8}",
     ["network.k: 8 is not less than the 6 agents of the network; use an "
      "even number from 2 to 4"]),
    ("{generator: ring, k: 3}", ["network.k: 3 is odd"]),
    ("{generator: scale_free, m: 6}",
     ["network.m: 6 is not less than the 6 agents of the network"]),
    ("{generator: ring, p: 0.2}",
     ["network.p: does not apply to the ring generator; remove it"]),
    ("{talk: tied}", ["network: gives neither edges nor a generator; add "
                      "`generator: ring`"]),
    ("{generator: ring, talk: tie}",
     ['network.talk: "tie" is not a valid talk; use one of: place, tied']),
    ("{generator: ring, groups: [smokers]}",
     ['network.groups[0]: "smokers" is not a group of this scenario; '
      "remove `groups`"]),
])
def test_a_wrong_network_is_one_line_naming_the_fix(block, expected):
  with pytest.raises(ScenarioError) as caught:
    parse_scenario(ROOM + f"network: {block}\n", "bad.yaml")
  lines = caught.value.problems
  assert len(lines) == len(expected), lines
  for line, want in zip(lines, expected):
    assert line.startswith("bad.yaml:")
    assert want in line, (want, line)


def matcher_of(run, embedder):
  return NormMatcher(run.targets, behaviours=run.behaviours,
                     embedder=embedder)


def test_the_diffusion_tree_says_who_passed_the_norm_by_talk(ring_run,
                                                            embedder):
  run = read_run(ring_run)
  rows = diffusion.tree(run, matcher_of(run, embedder))
  assert rows[0] == {**rows[0], "target": "no_smoking", "receiver": ABIGAIL,
                     "via": "initial", "sources": [], "step": 1}
  talks = {(r["initiator"], r["partner"], r["step"])
           for r in records(ring_run) if r["kind"] == "conversation"}
  taken = [r for r in rows if r["via"] == "talk"]
  assert taken, "a neighbour took the norm from a talk"
  for row in taken:
    source, = row["sources"]
    # The receiver talked with its source in an earlier slot.
    assert any({source, row["receiver"]} == {a, b} and step < row["step"]
               for a, b, step in talks), (row, talks)
  # Distance from the entrepreneur: she is at 0, her takers at 1.
  by = {r["distance"]: r for r in ties.by_distance(run, matcher_of(run,
                                                                   embedder))}
  assert by[0]["agents"] == 1 and by[0]["held_end"] == 1.0
  assert by[1]["agents"] == 2 and by[1]["ever"] > 0
  assert sum(r["agents"] for r in by.values()) == 1 + len(SMOKERS)
  assert by[3]["ever"] == 0.0


def test_a_norm_drawn_from_observation_names_whose_deeds_were_read(
    ring_run, embedder):
  run = read_run(ring_run)
  def db(owner, *norms):
    return {"owner": owner, "norms": [
        {"id": f"{owner[:3]}-{i}", "content": content, "origin": origin,
         "source_agent": None, "step": step, "time": f"t{step}",
         "status": "qualified"}
        for i, (content, origin, step) in enumerate(norms)]}
  run.snapshots = {
      1: {ABIGAIL: db(ABIGAIL, ("No smoking indoors.", "created", 1))},
      3: {ABIGAIL: db(ABIGAIL, ("No smoking indoors.", "created", 1)),
          "Mei Lin": db("Mei Lin", ("No smoking indoors.", "observation", 3))}}
  run.records = [{"kind": "thought", "agent": "Mei Lin", "step": 3,
                  "observed": [f"{ABIGAIL} (reading_room): reads.",
                               "Tom Gomez (reading_room): smokes.",
                               "Mei Lin (reading_room): reads."]}]
  rows = diffusion.tree(run, matcher_of(run, embedder))
  mei = next(r for r in rows if r["receiver"] == "Mei Lin")
  # Of the two whose deeds she read, only Abigail held the norm before.
  assert mei["via"] == "observation" and mei["sources"] == [ABIGAIL]
  assert mei["step"] == 3


def test_distances_count_ties_from_the_nearest_entrepreneur():
  ring = generate("ring", list("abcdef"), k=2)
  assert ties.distances([tuple(e) for e in ring], ["a"], list("abcdefg")) == {
      "a": 0, "b": 1, "f": 1, "c": 2, "e": 2, "d": 3, "g": None}


def test_a_network_over_a_population_s_groups():
  text = TOWN + ("network: {generator: small_world, k: 4, p: 0.2, seed: 5, "
                 "groups: [zealots], talk: tied}\n")
  scenario = parse_scenario(text, "town.yaml")
  zealots = [a.name for a in scenario.agents if a.group == "zealots"]
  assert len(zealots) == 8
  tied = {name for edge in scenario.network.edges for name in edge}
  assert tied == set(zealots)
  assert [list(e) for e in scenario.network.edges] == generate(
      "small_world", zealots, k=4, p=0.2, seed=5)
  # A dump reads back with the same edges, checked against the generator.
  again = Scenario.from_dict(scenario.to_dict())
  assert again.network == scenario.network


def test_attend_tied_first_puts_neighbours_deeds_before_the_others():
  names = [f"Guest {c}" for c in "ABCDEFG"]
  deeds = [deed(n, "reading_room", f"{n} reads a novel.") for n in names]
  where = dict.fromkeys(names, "reading_room")
  ties_of = {"Guest A": frozenset({"Guest F", "Guest G"})}
  def seen(ties_given):
    composed = perception_lib.LocalPerception(
        place_map(), max_events=3, ties=ties_given).compose(
            deeds, where, ["Guest A", "Guest B"])
    return {n: [obs.parse(t).actor for t in texts]
            for n, texts in composed.texts.items()}
  # Without ties: its own deed, then the others by name.
  assert seen(None)["Guest A"] == ["Guest A", "Guest B", "Guest C"]
  # Tied first: its own, then its neighbours'; one without ties as before.
  tied = seen(ties_of)
  assert tied["Guest A"] == ["Guest A", "Guest F", "Guest G"]
  assert tied["Guest B"] == ["Guest A", "Guest B", "Guest C"]
  scenario = parse_scenario(ROOM + "network: {generator: ring, attend: "
                            "tied_first}\n", "a.yaml")
  assert attend_ties(scenario.network)[ABIGAIL] == {"Mei Lin", "Kofi Abara"}
  assert talk_ties(scenario.network) is None


def test_a_run_with_ties_reports_its_tree_and_adoption_by_distance(
    ring_run, tmp_path, embedder):
  metrics = run_metrics.compute(read_run(ring_run), matcher_of(
      read_run(ring_run), embedder))
  out = tables.write_run(metrics, tmp_path / "metrics")
  tree = pd.read_csv(out / "diffusion_tree.csv")
  assert {"target", "receiver", "via", "sources", "step"} <= set(tree.columns)
  assert "talk" in set(tree["via"])
  by = pd.read_csv(out / "by_distance.csv")
  assert list(by["distance"].fillna(-1)) == [0, 1, 2, 3]

"""The population block (scenarios/population.py, population_draw.py).

The same seed gives the same agents byte for byte, another seed others;
shares, prevalences and capacities hold exactly; names are unique; a bad
block is one line per problem; the dump reads back as it was and a sweep
may change a group's share.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from fractions import Fraction

import pytest

from crsec_concordia import runner
from crsec_concordia.scenarios import (Scenario, ScenarioError, load_scenario,
                                       parse_scenario)
from crsec_concordia.scenarios.population_draw import apportion
from crsec_concordia.sweeps.spec import merge
from tests import crsec_script

TOWN = """\
name: small_town
premise: A day in a small town.
setting: a small town with a café and a square
places:
  - {id: cafe, description: a café, indoors: true, capacity: 6}
  - {id: square, description: the square, indoors: false, sees: [cafe]}
  - {id: library, description: the library, indoors: true, capacity: 9}
default_place: square
clock: {start: "09:00", end: "11:00", minutes_per_step: 60}
agents:
  - {name: Hannah Brightwater, role: entrepreneur, persona: Runs the café., home: cafe}
  - {name: Mei Lin, role: ordinary, persona: A student., group: locals}
population:
  seed: 7
  count: 40
  entrepreneurs: 0.1
  names: {first: [Mei, Omar, Ruth, Tariq, Ines, Kofi, Olga], last: [Lin, Haddad, Okafor, Novak, Sato, Weber, Iyer]}
  templates:
    - {weight: 3, occupation: student, ages: [18, 24], persona: "{name} is a {age}-year-old {occupation}."}
    - {weight: 1, occupation: baker, ages: [30, 60], persona: "{name} is a {age}-year-old {occupation}.", goal: "{first_name} bakes bread."}
  habits:
    smoking_indoors: {prevalence: 0.25, text: "{first_name} smokes wherever they sit."}
    loud: {prevalence: "15%", text: "{first_name} talks loudly."}
  groups:
    locals:
      initial_norms: [{content: No smoking indoors., type: injunctive, utility: 80}]
    zealots:
      share: 0.2
      committed: true
      initial_norms: [{content: Smoke where you like., type: injunctive, utility: 90}]
      home: {library: 1}
  home: {cafe: 1, square: 1}
behaviours:
  - {id: smoking_indoors, description: smokes inside}
  - {id: loud, description: speaks loudly}
"""


_HERE = re.compile(r"^(?P<actor>.+) is at (?P<place>[a-z_]+) now\.$", re.M)
_ACTION = re.compile(r'^(?P<actor>[^:\n]+): "(?P<action>.*)"$', re.M)


def referee_here(prompt: str, schema: dict) -> dict[str, str]:
  """The referee: every action happens where its actor is, and is none
  of the behaviours (an occasion's focused check too)."""
  props = schema["properties"]
  if "narration" not in props:
    return crsec_script.look_none(prompt, schema)
  answer = {"narration": _ACTION.search(prompt)["action"],
            "place": _HERE.search(prompt)["place"], "evidence": "none",
            "behaviour": "none", "also": "none"}
  return {k: v for k, v in answer.items() if k in props}


def drawn(text: str = TOWN) -> Scenario:
  return parse_scenario(text, "town.yaml")


def dump(scenario: Scenario) -> str:
  return json.dumps(scenario.to_dict(), sort_keys=True)


def test_largest_remainder_adds_up_and_breaks_ties_in_order():
  third = Fraction(1, 3)
  assert apportion(10, [third, third, third]) == [4, 3, 3]
  assert apportion(5, [Fraction(1, 2), Fraction(1, 2)]) == [3, 2]
  assert apportion(40, [Fraction(1, 10), Fraction(9, 10)]) == [4, 36]
  assert apportion(7, [Fraction(0), Fraction(1)]) == [0, 7]
  assert apportion(0, [Fraction(1)]) == [0]


def test_the_same_seed_gives_the_same_agents_byte_for_byte():
  first, again = drawn(), drawn()
  assert dump(first) == dump(again)
  other = drawn(TOWN.replace("seed: 7", "seed: 8"))
  assert dump(other) != dump(first)
  names = lambda s: [a.name for a in s.agents]  # pylint: disable=unnecessary-lambda-assignment
  assert names(other) != names(first)
  # The hand-written agents come first, unchanged.
  assert names(first)[:2] == ["Hannah Brightwater", "Mei Lin"]
  assert len(first.agents) == 42


def test_shares_and_prevalences_hold_exactly():
  s = drawn()
  generated = s.agents[2:]
  assert len(generated) == 40
  assert sum(a.role == "entrepreneur" for a in generated) == 4
  assert Counter(a.group for a in generated) == {"locals": 32, "zealots": 8}
  assert all(a.committed == (a.group == "zealots") for a in generated)
  assert all(a.initial_norms and a.initial_norms[0].content ==
             ("Smoke where you like." if a.committed else "No smoking indoors.")
             for a in generated)
  assert sum("smokes wherever" in a.persona for a in generated) == 10
  assert sum("talks loudly" in a.persona for a in generated) == 6
  assert Counter(a.persona.split(" is a ")[1].split(".")[0].split("-old ")[1]
                 for a in generated) == {"student": 30, "baker": 10}
  for a in generated:
    age = int(a.persona.split(" is a ")[1].split("-year")[0])
    assert (18 <= age <= 24) if "student" in a.persona else (30 <= age <= 60)
    assert a.persona.startswith(a.name)
    assert (a.goal == f"{a.name.split()[0]} bakes bread.") == ("baker" in a.persona)
  assert s.groups == ["locals", "zealots"]


def test_homes_follow_the_weights_and_never_pass_a_capacity():
  s = drawn()
  homes = Counter(s.home_of(a.name) for a in s.agents)
  assert homes["cafe"] <= 6 and homes["library"] <= 9
  # The zealots live in the library; the locals half in the café (5 seats
  # left by Hannah), the rest on the square.
  assert {s.home_of(a.name) for a in s.agents if a.group == "zealots"} == {"library"}
  assert homes == {"cafe": 6, "square": 28, "library": 8}


def test_names_are_unique_also_against_the_hand_written_agents():
  s = drawn()
  folded = [a.name.casefold() for a in s.agents]
  assert len(set(folded)) == len(folded)
  assert folded.count("mei lin") == 1
  tight = TOWN.replace("count: 40", "count: 49")
  with pytest.raises(ScenarioError) as info:
    drawn(tight)
  assert info.value.problems == [
      "town.yaml:15: population.count: 49 agents need 49 names, but the "
      "names give 48 not already used; add first or last names under "
      "names:, or lower count"]


def test_the_dump_reads_back_the_same_and_a_sweep_redraws_a_share():
  s = drawn()
  data = s.to_dict()
  assert data["population"]["drawn"] is True
  again = Scenario.from_dict(json.loads(json.dumps(data)))
  assert again.to_dict() == data
  assert again.with_max_steps(1).agents == s.agents
  # A condition changing the minority's share: the same people, regrouped.
  for share, zealots in [(0, 0), (0.1, 4), (0.225, 9)]:
    patch = {"population": {"groups": {"zealots": {"share": share}}}}
    swept = Scenario.from_dict(merge(s.model_dump(mode="json"), patch))
    assert [a.name for a in swept.agents] == [a.name for a in s.agents]
    assert sum(a.committed for a in swept.agents) == zealots
  # The dump holds the contract's fields, and no empty ones.
  agents = data["agents"]
  assert "group" not in agents[0] and "committed" not in agents[0]
  assert agents[1]["group"] == "locals" and "committed" not in agents[1]
  assert any(a.get("committed") is True for a in agents)


def test_a_scenario_without_a_block_dumps_as_before():
  s = load_scenario("hobbs_cafe_mini")
  data = s.to_dict()
  assert "population" not in data
  assert all(set(a) == {"name", "role", "persona", "preferences",
                        "initial_norms", "goal"} for a in data["agents"])


def test_the_shipped_population_scenarios_load_and_dump():
  town = load_scenario("town")
  assert len(town.agents) >= 41 and len(town.population.templates) >= 5
  assert 3 <= len(town.places) <= 5 and "cafe" in town.place_ids
  assert len({town.home_of(a.name) for a in town.agents}) == len(town.places)
  minority = load_scenario("committed_minority")
  committed = [a for a in minority.agents if a.committed]
  assert len(committed) == 5 and {a.group for a in committed} == {"committed"}
  assert {t.id for t in minority.target_norms} == {"greet_handshake", "greet_bow"}
  for s in (town, minority):
    assert Scenario.from_dict(s.to_dict()).to_dict() == s.to_dict()


BAD = [
    ("seed: 7", "seed: -7",
     "town.yaml:14: population.seed: -7 is out of range; use a whole number of at least 0"),
    ("count: 40", "count: 0",
     "town.yaml:15: population.count: 0 is out of range; use a whole number from 1 to 10000"),
    ("entrepreneurs: 0.1", "entrepreneurs: 1.5",
     'town.yaml:16: population.entrepreneurs: 1.5 is not a share; use a number from 0 to 1, e.g. 0.25 (or "25%")'),
    ("ages: [18, 24]", "ages: [24, 18]",
     "town.yaml:19: population.templates[0].ages: [24, 18] is not a range of ages; "
     "write [youngest, oldest], whole years from 0 to 120, e.g. [25, 60]"),
    ("{first_name} bakes", "{firstname} bakes",
     "town.yaml:20: population.templates[1].goal: {firstname} is not a field; "
     "name only {name}, {first_name}, {age} or {occupation}; no other braces"),
    ("{first_name} bakes", "{age:>99999999} bakes",
     "town.yaml:20: population.templates[1].goal: {age:>99999999} is a field with "
     "a format; write the field alone, e.g. {age}, and a brace itself as {{ or }}"),
    ("{first_name} smokes", "{first_name smokes",
     "town.yaml:22: population.habits.smoking_indoors.text: a lone brace is not a "
     "field; name only {name}, {first_name}, {age} or {occupation}; no other braces"),
    ("weight: 3,", "weight: 0,",
     "town.yaml:19: population.templates[0].weight: 0 is not a positive number; use a number above 0, e.g. 1 or 2.5"),
    ("    loud: {prev", "    lowd: {prev",
     'town.yaml:23: population.habits.lowd: "lowd" is not a behaviour id (did you mean loud?); '
     "use one of the behaviours: smoking_indoors, loud"),
    ("home: {library: 1}", "home: {libary: 1}",
     'town.yaml:31: population.groups.zealots.home.libary: "libary" is not a place of this '
     "scenario (did you mean library?); use one of its places: cafe, square, library"),
    ("share: 0.2\n", "share: 0.2\n      colour: red\n",
     "town.yaml:29: population.groups.zealots.colour: unknown key 'colour'; remove it or "
     "use one of the allowed keys: share, committed, initial_norms, home"),
    ("    locals:\n", "    locals:\n      share: 0.9\n",
     "town.yaml:24: population.groups: the shares add up to 1.1, more than 1; lower them "
     "so that they add up to at most 1 (the rest belongs to no group)"),
    ("      share: 0.2\n", "",
     "town.yaml:27: population.groups.zealots: gives no share, as locals does; give it "
     "a share: only one group takes the share the others leave"),
    ("      initial_norms: [{content: Smoke", "      initial_normz: [{content: Smoke",
     "town.yaml:30: population.groups.zealots.initial_normz: unknown key 'initial_normz' "
     "(did you mean initial_norms?); remove it or use one of the allowed keys: share, "
     "committed, initial_norms, home"),
    ("capacity: 9", "capacity: 3",
     "town.yaml:31: population.groups.zealots.home: 5 of the 8 agents of group zealots "
     "find no room in library; raise those places' capacity, add places to home, or "
     "lower count or the group's share"),
    ("  templates:\n", "  templatez:\n",
     "town.yaml:13: population.templates: required key is missing; add "
     "`templates:` with items like `- {weight: 1, occupation: baker, ages: "
     '[25, 60], persona: "{name} is a {age}-year-old {occupation}."}`',
     "town.yaml:18: population.templatez: unknown key 'templatez' (did you mean "
     "templates?); remove it or use one of the allowed keys: seed, count, "
     "entrepreneurs, names, templates, habits, groups, home, drawn"),
]


@pytest.mark.parametrize("old,new,lines", [(b[0], b[1], list(b[2:])) for b in BAD],
                         ids=[b[1][:24] for b in BAD])
def test_a_bad_block_is_one_line_per_problem_naming_the_fix(old, new, lines):
  assert old in TOWN
  with pytest.raises(ScenarioError) as info:
    drawn(TOWN.replace(old, new, 1))
  assert info.value.problems == lines


def test_a_block_that_is_no_mapping_is_one_line():
  text = TOWN[:TOWN.index("population:")] + "population: 40\n" + TOWN[TOWN.index("behaviours:"):]
  with pytest.raises(ScenarioError) as info:
    drawn(text)
  assert info.value.problems == [
      "town.yaml:13: population: expected a mapping but found 40; write the "
      "keys seed, count, entrepreneurs, names, templates, habits, groups, "
      "home, drawn (docs/design.md, 'Populations')"]


def test_a_committed_agent_needs_norms_to_hold():
  text = TOWN.replace("{name: Mei Lin, role: ordinary, persona: A student., group: locals}",
                      "{name: Mei Lin, role: ordinary, persona: A student., committed: true}")
  with pytest.raises(ScenarioError) as info:
    drawn(text)
  assert info.value.problems == [
      "town.yaml:12: agents[1].committed: is true, but the agent starts with "
      "no norms to hold; give it initial_norms (or make it an entrepreneur, "
      "whose norms CreateNorm writes, or set committed: false)"]
  no_norms = TOWN.replace(
      "      committed: true\n      initial_norms: [{content: Smoke where you "
      "like., type: injunctive, utility: 90}]\n", "      committed: true\n")
  with pytest.raises(ScenarioError, match="zealots.committed: is true, but "
                     "the group starts with no norms to hold"):
    drawn(no_norms)


def test_the_town_runs_two_slots_with_agents_in_every_place(tmp_path, embedder):
  """The shipped town on the scripted café: 41 agents act in two slots,
  each where the draw put it."""
  town = load_scenario("town").with_max_steps(2)
  scripted = crsec_script.cafe_model()
  scripted.add_rule(r"You are the referee", referee_here, first=True)
  # The second look's prompt opens as the referee's: its rule goes first.
  scripted.add_rule(crsec_script.LOOK, crsec_script.look_none, first=True)
  run_dir = runner.run_episode(town, arm="normative", seed=1,
                               out_dir=tmp_path / "town", model=scripted,
                               embedder=embedder, progress=False)
  with open(run_dir / "events.jsonl", encoding="utf-8") as f:
    records = [json.loads(line) for line in f]
  actions = [r for r in records if r["kind"] == "action"]
  assert len(actions) == 2 * len(town.agents)
  assert {r["place"] for r in actions} == set(town.place_ids)
  assert all(r["place"] == town.home_of(r["actor"]) for r in actions)
  written = json.loads((run_dir / "scenario.json").read_text(encoding="utf-8"))
  assert Scenario.from_dict(written).agents == town.agents


def test_the_committed_minority_starts_as_its_groups_say(tmp_path, embedder):
  """Two slots of the shipped experiment: the minority holds the bow,
  committed, the rest the handshake, and everyone's norms are recorded."""
  scenario = load_scenario("committed_minority").with_max_steps(2)
  scripted = crsec_script.cafe_model()
  scripted.add_rule(r"You are the referee", referee_here, first=True)
  scripted.add_rule(crsec_script.LOOK, crsec_script.look_none, first=True)
  run_dir = runner.run_episode(scenario, arm="normative", seed=1,
                               out_dir=tmp_path / "minority", model=scripted,
                               embedder=embedder, progress=False)
  last = sorted((run_dir / "norms").glob("step_*.json"))[-1]
  held = json.loads(last.read_text(encoding="utf-8"))
  for agent in scenario.agents:
    start = [(n["content"], n.get("committed", False))
             for n in held[agent.name]["norms"] if n["origin"] == "created"]
    assert start == ([("Greet people with a bow.", True)] if agent.committed
                     else [("Greet people with a handshake.", False)])

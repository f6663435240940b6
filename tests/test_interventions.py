"""The `interventions:` block: its checks, its times, and taught norms
against synthesis (tests/test_interventions_run.py plays them in a run)."""

from __future__ import annotations

import pytest

from crsec_concordia import observations as obs
from crsec_concordia.components.port import port_of
from crsec_concordia.game_masters.interventions import absent_and_closed
from crsec_concordia.norms import LifecycleError
from crsec_concordia.scenarios import ScenarioError, parse_scenario
from crsec_concordia.scenarios.loader import builtin_path
from tests import crsec_script as cs

STAMP = obs.Stamp(1, "09:10", 2)


def minority(block: str):
  return parse_scenario(builtin_path("committed_minority").read_text()
                        + "\ninterventions:\n" + block, "m.yaml")


def test_each_mistake_is_one_line_naming_its_fix():
  with pytest.raises(ScenarioError) as e:
    minority("""\
  - {kind: announce, at: 2, places: [kitchen]}
  - {kind: teach, at: 3, agents: [Nobody]}
  - {kind: leave, at: 40, share: 0}
  - {kind: arrive, at: "23:00"}
  - {kind: leave, at: 1, group: ghosts}
  - {kind: close, at: 1}
  - {kind: explode, at: 1}
""")
  lines = e.value.problems
  expected = [
      "interventions[0]: an announce needs `text`",
      'interventions[0].places[0]: no place "kitchen"; name a place of '
      "`places:` (courtyard, hall)",
      'interventions[1].agents[0]: no agent "Nobody"',
      "interventions[1]: a teach needs `norm`",
      "interventions[2].share: 0 is not a share of leavers",
      'interventions[2].at: 40 is outside the episode',
      "interventions[3]: an arrive names nobody",
      'interventions[3].at: "23:00" is outside the episode',
      'interventions[4].group: no group "ghosts"',
      "interventions[5]: a close needs `places`",
      'interventions[6].kind: "explode" is not a valid kind; use one of: '
      "announce, arrive, leave, teach, close, open"]
  for text in expected:
    assert [line for line in lines if text in line], text
  assert all(line.startswith("m.yaml:") for line in lines)
  assert len(lines) == len(expected)


def test_times_are_slots_or_clock_times_and_a_share_is_drawn_by_the_seed():
  scenario = minority("""\
  - {kind: announce, at: "10:00", text: "A sign: bow here.", places: [hall]}
  - {kind: close, at: 2, places: [courtyard]}
  - {kind: leave, at: 3, share: 0.5, group: convention}
  - {kind: open, at: 5, places: [courtyard]}
""")
  assert [scenario.intervention_slot(i) for i in scenario.interventions] == [
      3, 2, 3, 5]
  convention = [a.name for a in scenario.agents if a.group == "convention"]
  absent, closed = absent_and_closed(scenario, 1, 4)
  assert len(absent) == round(len(convention) / 2) and absent <= set(convention)
  assert closed == {"courtyard"}
  assert absent_and_closed(scenario, 1, 4) == (absent, closed)  # Replayed.
  assert absent_and_closed(scenario, 1, 2)[0] == frozenset()
  assert absent_and_closed(scenario, 1, 5)[1] == frozenset()
  # Dumped with the scenario, and a scenario without the block as before.
  assert scenario.to_dict()["interventions"][0]["at"] == "10:00"
  plain = parse_scenario(builtin_path("committed_minority").read_text())
  assert "interventions" not in plain.to_dict()


def test_a_taught_norm_is_revisable_by_synthesis_unless_committed():
  agent = cs.build_agent("normative", cs.cafe_model())
  port = port_of(agent)
  free = port.receive_norm("Keep your voice down.", "injunctive", 60,
                           stamp=STAMP)
  kept = port.receive_norm("No smoking indoors.", "injunctive", 90,
                           committed=True, stamp=STAMP)
  database = agent.get_component("NormMemory").database
  assert [n.id for n in database.revisable()] == [free]
  abstract = database.add("Be considerate of others.", "injunctive", 70,
                          origin="synthesis", qualified=True)
  with pytest.raises(LifecycleError, match="committed"):
    database.replace([kept, free], abstract.id)
  database.replace([free], abstract.id)
  assert not database.get(free).qualified and database.get(kept).qualified


def test_a_group_drawn_from_the_population_arrives_at_its_slot():
  """Newcomers drawn from the population block's templates into a group
  take no part before their slot; a share leaves later, drawn from those
  present then."""
  text = builtin_path("committed_minority").read_text().replace(
      "    committed:\n      share: 0.25", "    newcomers:\n      share: 0.2\n"
      "    committed:\n      share: 0.25")
  scenario = parse_scenario(text + """
interventions:
  - {kind: arrive, at: 3, group: newcomers}
  - {kind: leave, at: 5, share: 0.5, group: newcomers}
""", "m.yaml")
  newcomers = {a.name for a in scenario.agents if a.group == "newcomers"}
  assert len(newcomers) == 4
  assert absent_and_closed(scenario, 7, 2)[0] == newcomers
  assert absent_and_closed(scenario, 7, 3)[0] == frozenset()
  gone = absent_and_closed(scenario, 7, 5)[0]
  assert len(gone) == 2 and gone <= newcomers
  assert absent_and_closed(scenario, 7, 6)[0] == gone  # For good.


@pytest.mark.parametrize("at,line", [
    (".inf", 'interventions[0].at: inf is neither a slot nor a time of day; '
     'give a slot, a whole number from 1 (the first slot), or a time "HH:MM"'),
    ("0", "interventions[0].at: 0 is neither a slot nor a time of day"),
    ("true", "interventions[0].at: true is neither a slot nor a time of day"),
    ('"25:99"', 'interventions[0].at: "25:99" is not a time of day; write it '
     'as "HH:MM"')])
def test_a_time_neither_slot_nor_clock_is_one_line_in_the_users_terms(
    at, line):
  with pytest.raises(ScenarioError) as e:
    minority(f"  - {{kind: close, at: {at}, places: [courtyard]}}\n")
  [problem] = e.value.problems
  assert line in problem
  assert "function-before" not in problem and "<lambda>" not in problem


def test_places_written_as_text_is_one_line_not_one_per_letter():
  with pytest.raises(ScenarioError) as e:
    minority("  - {kind: announce, at: 2, text: Bow., places: hall}\n"
             "  - {kind: teach, at: 2, agents: Ann Lee,\n"
             "     norm: {content: Bow., type: injunctive, utility: 80}}\n")
  assert [p.split(": ", 1)[1] for p in e.value.problems] == [
      'interventions[0].places: expected a list but found "hall"; write one '
      "item per line starting with `- `, or [a, b] on one line",
      'interventions[1].agents: expected a list but found "Ann Lee"; write '
      "one item per line starting with `- `, or [a, b] on one line"]


def test_a_population_problem_adds_no_knock_on_line():
  text = builtin_path("entrepreneur_ties").read_text().replace(
      "  count: 20", "  count: -20", 1)
  with pytest.raises(ScenarioError) as e:
    parse_scenario(text, "t.yaml")
  [problem] = e.value.problems
  assert "population.count: -20 is out of range" in problem
  assert "network" not in problem


NO_PLACES = """\
name: plain
premise: A morning.
setting: A café
clock: {start: "09:00", end: "10:00", minutes_per_step: 15}
agents:
  - {name: Ann Lee, role: ordinary, persona: A.}
  - {name: Bo Chen, role: ordinary, persona: B.}
behaviours:
  - {id: loud, description: shouts}
interventions:
"""


def test_indoors_and_outdoors_name_the_places_of_a_file_that_declares_none():
  scenario = parse_scenario(NO_PLACES + (
      '  - {kind: announce, at: 2, text: "A sign: speak softly.", '
      "places: [indoors]}\n"
      "  - {kind: close, at: 3, places: [outdoors]}\n"
      "  - {kind: open, at: 4, places: [outdoors]}\n"), "plain.yaml")
  assert not scenario.declares_places
  assert absent_and_closed(scenario, 1, 3)[1] == {"outdoors"}
  with pytest.raises(ScenarioError) as e:
    parse_scenario(NO_PLACES + "  - {kind: close, at: 3, places: [hall]}\n",
                   "plain.yaml")
  [problem] = e.value.problems
  assert ('no place "hall"; name indoors or outdoors, the places of a file '
          "that declares none, or declare them under `places:`") in problem

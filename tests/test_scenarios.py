"""The scenario files and their loader: the shipped files, the clock, and one
clear `FILE:LINE: field.path: what; fix` line for each kind of mistake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsec_concordia.errors import UserError
from crsec_concordia.observations import Stamp
from crsec_concordia.scenarios import (
    Scenario,
    ScenarioError,
    builtin_names,
    builtin_path,
    load_scenario,
)

# The agents table of the paper's public data (docs: shared/reference/crsec.md).
PAPER_AGENTS = {
    "Abigail Chen": ("entrepreneur", "against", "quiet", "for"),
    "Bob Johnson": ("entrepreneur", "against", "quiet", "against"),
    "Francisco Lopez": ("entrepreneur", "against", "quiet", "for"),
    "Carlos Gomez": ("ordinary", "smoker", "loud", "against"),
    "Isabella Rodriguez": ("ordinary", "against", "quiet", "for"),
    "Jennifer Moore": ("ordinary", "against", "loud", "against"),
    "Sam Moore": ("ordinary", "smoker", "loud", "for"),
    "Tamara Rodriguez": ("ordinary", "against", "quiet", "against"),
    "Tom Gomez": ("ordinary", "against", "loud", "against"),
    "Wolfgang Schulz": ("ordinary", "smoker", "loud", "for"),
}

BEHAVIOURS = ["smoking_indoors", "smoking_outside", "loud", "quiet", "tipped",
              "refused_tip"]

VALID = """\
name: tiny
premise: A morning at the café.
setting: Hobbs Cafe
clock: {start: "09:00", end: "10:00", minutes_per_step: 15, days: 2}
agents:
  - name: Abigail Chen
    role: entrepreneur
    persona: A volunteer.
    preferences: {smoking: against}
    initial_norms:
      - {content: No smoking indoors., type: injunctive, utility: 90}
  - name: Carlos Gomez
    role: ordinary
    persona: A poet who smokes.
behaviours:
  - {id: smoking_indoors, description: smokes inside}
  - {id: smoking_outside, description: smokes outside}
target_norms:
  - id: no_smoking_indoors
    text: No smoking indoors.
    type: injunctive
    complies: [smoking_outside]
    violates: [smoking_indoors]
"""


def _write(tmp_path: Path, text: str, name: str = "bad.yaml") -> Path:
  path = tmp_path / name
  path.write_text(text, encoding="utf-8")
  return path


def _variant(old: str, new: str) -> str:
  assert old in VALID, old
  return VALID.replace(old, new, 1)


def _line_of(text: str, needle: str) -> int:
  for number, line in enumerate(text.splitlines(), start=1):
    if needle in line:
      return number
  raise AssertionError(f"{needle!r} not in the text")


def _problems(path: Path) -> list[str]:
  with pytest.raises(ScenarioError) as info:
    load_scenario(path)
  return info.value.problems


# -- the shipped files ---------------------------------------------------------


def test_builtin_names():
  assert builtin_names() == ["committed_minority", "community_garden",
                             "entrepreneur_share", "entrepreneur_ties",
                             "hobbs_cafe", "hobbs_cafe_mini", "open_day",
                             "posted_rule", "tea_crates", "town"]
  assert builtin_path("hobbs_cafe").name == "hobbs_cafe.yaml"


@pytest.mark.parametrize("name", ["hobbs_cafe", "hobbs_cafe_mini"])
def test_builtin_loads_by_name_and_path(name):
  by_name = load_scenario(name)
  by_path = load_scenario(builtin_path(name))
  assert by_name == by_path
  assert by_name.name == name
  assert by_name.source_path == builtin_path(name).resolve()
  assert by_name.behaviour_ids == BEHAVIOURS
  assert [t.id for t in by_name.target_norms] == [
      "no_smoking_indoors", "quiet_in_public", "tip_after_meals"]
  assert by_name.target_norm("tip_after_meals").type == "descriptive"
  assert by_name.target_norm("quiet_in_public").text == "Be quiet in public places."
  for agent in by_name.agents:
    role, smoking, noise, tipping = PAPER_AGENTS[agent.name]
    assert agent.role == role
    assert agent.preferences == {"smoking": smoking, "noise": noise,
                                 "tipping": tipping}
    sentences = agent.persona.count(". ") + 1
    assert 2 <= sentences <= 3, agent.name
  assert all(a.initial_norms is None for a in by_name.entrepreneurs)


def test_hobbs_cafe_is_the_papers_setting():
  s = load_scenario("hobbs_cafe")
  assert s.agent_names == list(PAPER_AGENTS)
  assert len(s.entrepreneurs) == 3
  assert (s.clock.start, s.clock.end, s.clock.minutes_per_step, s.clock.days) == (
      "09:00", "16:00", 10, 2)
  assert s.total_steps == 84
  assert s.crsec.initial_norm_count == 5 and s.crsec.synthesis_threshold == 350


def test_hobbs_cafe_mini_is_small():
  s = load_scenario("hobbs_cafe_mini")
  assert s.agent_names == ["Abigail Chen", "Carlos Gomez", "Tom Gomez",
                           "Tamara Rodriguez"]
  assert [a.name for a in s.entrepreneurs] == ["Abigail Chen"]
  assert s.total_steps == 5  # Every agent acts in every one of them.
  assert s.conversation.max_rounds == 2
  assert s.stamp_for(5) == Stamp(day=1, clock="10:00", step=5)


def test_community_garden_is_a_venue_of_another_kind_in_the_minis_shape():
  # The path the issue names; the ids and texts are those the labelled
  # matcher set for this venue is built on.
  s = load_scenario("scenarios/community_garden.yaml")
  assert s == load_scenario("community_garden")
  assert s.name == "community_garden"
  assert [a.role for a in s.agents] == ["entrepreneur"] + ["ordinary"] * 3
  assert all(a.initial_norms is None for a in s.agents)
  assert (s.clock.start, s.clock.end, s.clock.minutes_per_step, s.clock.days) == (
      "09:00", "10:15", 15, 1)
  assert s.total_steps == 5  # As the mini café: every agent acts every slot.
  assert [(t.id, t.text, t.type, t.complies, t.violates) for t in s.target_norms] == [
      ("return_tools", "Return shared tools to the shed after use.", "injunctive",
       ["returned_tools"], ["left_tools_out"]),
      ("own_plot_only", "Do not pick from other gardeners' plots.", "injunctive",
       ["picked_own_plot"], ["picked_from_others"]),
      ("share_surplus", "People usually share their surplus harvest with neighbours.",
       "descriptive", ["shared_harvest"], ["kept_surplus"])]
  [harvest] = s.occasions
  assert (harvest.id, harvest.behaviours) == ("harvest", ["shared_harvest", "kept_surplus"])
  assert "{actor}" in harvest.situation and "{actor}" in harvest.question
  # Each ordinary gardener breaks one target norm by habit, a different one.
  habits = {"leaves_out", "takes_from_others", "keeps"}
  broken = [set(a.preferences.values()) & habits for a in s.agents[1:]]
  assert sorted(b.pop() for b in broken) == sorted(habits)
  assert not set(s.agents[0].preferences.values()) & habits


def test_mini_personas_are_those_of_the_full_cafe():
  full, mini = load_scenario("hobbs_cafe"), load_scenario("hobbs_cafe_mini")
  for agent in mini.agents:
    assert agent == full.agent(agent.name)


# -- the clock -----------------------------------------------------------------


def test_derived_steps_and_stamps_roll_over_to_the_next_day(tmp_path):
  s = load_scenario(_write(tmp_path, VALID, "tiny.yaml"))
  assert s.steps_per_day == 4 and s.total_steps == 8
  assert [s.stamp_for(i).time for i in range(1, 10)] == [
      "Day 1 09:00", "Day 1 09:15", "Day 1 09:30", "Day 1 09:45",
      "Day 2 09:00", "Day 2 09:15", "Day 2 09:30", "Day 2 09:45",
      "Day 3 09:00"]
  assert s.stamp_for(5) == Stamp(day=2, clock="09:00", step=5)
  assert [i for i in range(1, 9) if s.is_day_start(i)] == [1, 5]
  with pytest.raises(ValueError):
    s.stamp_for(0)


def test_full_cafe_rolls_over_after_42_steps():
  s = load_scenario("hobbs_cafe")
  assert s.stamp_for(1) == Stamp(1, "09:00", 1)
  assert s.stamp_for(7) == Stamp(1, "10:00", 7)
  assert s.stamp_for(42) == Stamp(1, "15:50", 42)
  assert s.stamp_for(43) == Stamp(2, "09:00", 43)
  assert s.stamp_for(84) == Stamp(2, "15:50", 84)


def test_max_steps_overrides_the_derived_count(tmp_path):
  s = load_scenario(_write(tmp_path, VALID.replace("agents:", "max_steps: 3\nagents:")))
  assert s.total_steps == 3
  assert s.with_max_steps(6).total_steps == 6
  with pytest.raises(ScenarioError, match="max_steps: 9 is more than the 8 steps"):
    s.with_max_steps(9)


def test_a_span_not_divisible_by_the_step_still_starts_every_step_before_end(tmp_path):
  s = load_scenario(_write(tmp_path, _variant("minutes_per_step: 15", "minutes_per_step: 25")))
  assert s.steps_per_day == 3  # 09:00, 09:25, 09:50
  assert s.stamp_for(3).clock == "09:50" and s.stamp_for(4).time == "Day 2 09:00"


# -- the API the runner and game master use ------------------------------------


def test_to_dict_is_json_and_round_trips():
  s = load_scenario("hobbs_cafe_mini")
  data = json.loads(json.dumps(s.to_dict()))
  assert data["max_steps"] == 5
  assert data["crsec"]["modules"]["synthesis"] is True
  again = Scenario.from_dict(data)
  assert again.total_steps == s.total_steps
  assert again.agents == s.agents and again.target_norms == s.target_norms
  assert again.source_path is None


def test_agent_lookup_and_entity_params():
  s = load_scenario("hobbs_cafe_mini")
  assert s.agent("Carlos Gomez").preferences["smoking"] == "smoker"
  with pytest.raises(KeyError, match="Nobody"):
    s.agent("Nobody")
  params = s.entity_params("Abigail Chen")
  assert set(params) == {"name", "persona", "role", "goal", "initial_norm_count",
                         "synthesis_threshold", "reflect_every", "initial_norms",
                         "modules", "setting"}
  assert params["initial_norms"] is None and params["role"] == "entrepreneur"
  json.dumps(params)


def test_initial_norms_and_yaml_1_1_quirks(tmp_path):
  text = _variant('{start: "09:00", end: "10:00"', "{start: 09:00, end: 10:00")
  text = text.replace("{smoking: against}", "{smoking: no}")
  s = load_scenario(_write(tmp_path, text))
  assert s.clock.end == "10:00"          # not the sexagesimal number 600
  assert s.agent("Abigail Chen").preferences == {"smoking": "no"}  # not False
  norm = s.agent("Abigail Chen").initial_norms[0]
  assert (norm.content, norm.type, norm.utility) == (
      "No smoking indoors.", "injunctive", 90)


def test_scenario_is_frozen():
  s = load_scenario("hobbs_cafe_mini")
  with pytest.raises(Exception):
    s.name = "other"


# -- malformed scenarios: one line each ----------------------------------------

# (id, old text, new text, the reported line (a text on it, or its number),
#  field path, phrase of the message)
BAD = [
    ("unknown_top_level_key", "setting: Hobbs Cafe\n",
     "setting: Hobbs Cafe\ncolour: blue\n", "colour:", "colour",
     "unknown key 'colour'; remove it or use one of the allowed keys: name, premise, setting, places, default_place, perception, clock"),
    ("unknown_agent_key", "    persona: A poet who smokes.\n",
     "    persona: A poet who smokes.\n    persnoa: x\n", "persnoa:",
     "agents[1].persnoa", "(did you mean persona?)"),
    ("missing_agent_name", "  - name: Carlos Gomez\n    role: ordinary\n",
     "  - role: ordinary\n", "  - role: ordinary", "agents[1].name",
     "required key is missing; add `name: Abigail Chen`"),
    ("duplicate_agent_name", "- name: Carlos Gomez", "- name: Abigail Chen",
     12, "agents[1].name",
     '"Abigail Chen" is already used by agents[0]; give every agent a different name'),
    ("utility_out_of_range", "utility: 90", "utility: 140", "utility: 140",
     "agents[0].initial_norms[0].utility",
     "140 is out of range; use a whole number from 1 to 100"),
    ("utility_not_a_number", "utility: 90", "utility: high", "utility: high",
     "agents[0].initial_norms[0].utility",
     '"high" is not a whole number; use a whole number from 1 to 100'),
    ("target_without_behaviour",
     "    complies: [smoking_outside]\n    violates: [smoking_indoors]\n", "",
     "  - id: no_smoking_indoors", "target_norms[0]",
     "names no behaviour that complies with or violates it; add complies: [...] "
     "and/or violates: [...] with behaviour ids (known ids: smoking_indoors, smoking_outside)"),
    ("target_unknown_behaviour", "violates: [smoking_indoors]",
     "violates: [smoking_indoor]", "violates:", "target_norms[0].violates[0]",
     '"smoking_indoor" is not a behaviour id (did you mean smoking_indoors?); '
     "use an id defined under behaviours: smoking_indoors, smoking_outside"),
    ("bad_clock_format", 'start: "09:00"', 'start: "9am"', "clock:", "clock.start",
     '"9am" is not a time of day; write it as "HH:MM" on a 24-hour clock'),
    ("hour_out_of_range", 'end: "10:00"', 'end: "25:00"', "clock:", "clock.end",
     '"25:00" is not a time of day'),
    ("end_before_start", 'end: "10:00"', 'end: "08:30"', "clock:", "clock.end",
     '"08:30" is not after start "09:00"; set end later than start'),
    ("end_equals_start", 'end: "10:00"', 'end: "09:00"', "clock:", "clock.end",
     "is not after start"),
    ("bad_role", "role: ordinary", "role: customer", "role: customer",
     "agents[1].role", '"customer" is not a valid role; use one of: entrepreneur, ordinary'),
    ("bad_norm_type", "type: injunctive, utility", "type: normative, utility",
     "type: normative", "agents[0].initial_norms[0].type",
     '"normative" is not a valid type; use one of: descriptive, injunctive'),
    ("bad_default_place", "setting: Hobbs Cafe\n",
     "setting: Hobbs Cafe\ndefault_place: upstairs\n", "default_place:",
     "default_place", '"upstairs" is not a place of this scenario; use one of: indoors, outdoors; or declare'),
    ("bad_target_type", "    type: injunctive\n    complies",
     "    type: prescriptive\n    complies", "type: prescriptive",
     "target_norms[0].type", "use one of: descriptive, injunctive"),
    ("empty_agents_list",
     VALID[VALID.index("agents:"):VALID.index("behaviours:")], "agents: []\n",
     "agents: []", "agents",
     "the list is empty; add at least one item like `- {name: Abigail Chen"),
    ("no_behaviours",
     VALID[VALID.index("behaviours:"):VALID.index("target_norms:")],
     "behaviours:\n", "behaviours:", "behaviours", "the list is empty; add at least one item"),
    ("duplicate_behaviour_id", "target_norms:",
     "  - {id: smoking_indoors, description: lights a pipe}\ntarget_norms:",
     "lights a pipe", "behaviours[2].id",
     "already used by behaviours[0]; give every behaviour a different id"),
    ("bad_behaviour_id", "target_norms:",
     "  - {id: Smoking Pipe, description: lights a pipe}\ntarget_norms:",
     "Smoking Pipe", "behaviours[2].id",
     "is not a valid id; use lower-case letters, digits and underscores"),
    ("empty_name", "name: tiny", 'name: ""', 'name: ""', "name",
     "is empty; write"),
    ("missing_persona", "    persona: A volunteer.\n", "",
     "  - name: Abigail Chen", "agents[0].persona", "add `persona:"),
    ("name_breaks_observations", "- name: Carlos Gomez", "- name: Carlos (poet)",
     "Carlos (poet)", "agents[1].name", "which the observation format cannot carry"),
    ("duplicate_yaml_key", "    persona: A poet who smokes.\n",
     "    persona: A poet who smokes.\n    role: ordinary\n", 15,
     "agents[1].role", "appears twice in this mapping (first on line 13); keep only one"),
    ("max_steps_beyond_clock", "agents:\n", "max_steps: 9\nagents:\n", "max_steps:",
     "max_steps", "9 is more than the 8 steps the clock covers"),
    ("module_not_bool", "agents:\n",
     "crsec: {modules: {synthesis: sometimes}}\nagents:\n", "crsec:",
     "crsec.modules.synthesis", "is not true or false; write true or false"),
    ("preference_not_text", "{smoking: against}", "{smoking: 3}", "preferences:",
     "agents[0].preferences.smoking", "expected text but found 3"),
    ("clock_not_a_mapping",
     'clock: {start: "09:00", end: "10:00", minutes_per_step: 15, days: 2}',
     'clock: "09:00-10:00"', "clock:", "clock",
     'expected a mapping but found "09:00-10:00"; write the keys start, end, '
     "minutes_per_step, days"),
    ("occasion_after_closing", "target_norms:",
     'occasions:\n  - {id: bill, at: "10:30", situation: The bill comes.}\ntarget_norms:',
     "id: bill", "occasions[0].at",
     '"10:30" is outside the clock\'s 09:00-10:00, so nobody would meet it'),
    ("occasion_unknown_field", "target_norms:",
     'occasions:\n  - id: bill\n    at: "09:30"\n    situation: The {waiter} '
     "comes.\ntarget_norms:", "situation:", "occasions[0].situation",
     '"{waiter}" is not a field; write {actor} for the agent\'s name'),
    ("occasion_unknown_agent", "target_norms:",
     'occasions:\n  - {id: bill, at: "09:30", situation: The bill comes.,'
     " agents: [Carlos Gomes]}\ntarget_norms:", "id: bill",
     "occasions[0].agents[0]",
     '"Carlos Gomes" is not an agent (did you mean Carlos Gomez?)'),
    ("occasion_unknown_behaviour", "target_norms:",
     'occasions:\n  - {id: bill, at: "09:30", situation: The bill comes.,'
     " behaviours: [smoking_indors]}\ntarget_norms:", "id: bill",
     "occasions[0].behaviours[0]",
     '"smoking_indors" is not a behaviour id (did you mean smoking_indoors?)'),
    ("occasion_without_situation", "target_norms:",
     'occasions:\n  - {id: bill, at: "09:30"}\ntarget_norms:', "id: bill",
     "occasions[0].situation", "required key is missing; add `situation: The server"),
]


@pytest.mark.parametrize(
    "old, new, needle, path, phrase", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_malformed_scenario_gives_one_clear_line(tmp_path, old, new, needle, path,
                                                 phrase):
  text = _variant(old, new)
  file = _write(tmp_path, text)
  problems = _problems(file)
  assert len(problems) == 1, problems
  line = needle if isinstance(needle, int) else _line_of(text, needle)
  prefix = f"{file}:{line}: {path}: "
  assert problems[0].startswith(prefix), (problems[0], prefix)
  assert phrase in problems[0], problems[0]
  assert "\n" not in problems[0]
  assert problems[0].count("; ") >= 1


def test_the_docs_example_line_exactly(tmp_path):
  file = _write(tmp_path, _variant("utility: 90", "utility: 140"))
  assert _problems(file) == [
      f"{file}:11: agents[0].initial_norms[0].utility: 140 is out of range; "
      "use a whole number from 1 to 100"]


def test_yaml_syntax_error_is_one_line_with_its_line_number(tmp_path):
  text = _variant("setting: Hobbs Cafe", "setting: Hobbs Cafe: indoors")
  problems = _problems(_write(tmp_path, text))
  assert len(problems) == 1
  assert problems[0].startswith(f"{tmp_path / 'bad.yaml'}:3: YAML syntax: ")
  assert "must be in quotes" in problems[0]


def test_unclosed_bracket_and_tabs(tmp_path):
  text = _variant("complies: [smoking_outside]", "complies: [smoking_outside")
  [problem] = _problems(_write(tmp_path, text))
  assert f"{tmp_path / 'bad.yaml'}:" in problem and "YAML syntax" in problem
  text = _variant("    role: ordinary", "\trole: ordinary")
  [problem] = _problems(_write(tmp_path, text, "tab.yaml"))
  assert problem.startswith(f"{tmp_path / 'tab.yaml'}:13: YAML syntax: ")
  assert problem.endswith("indent with spaces, never tabs")


def test_missing_file_names_the_path(tmp_path):
  missing = tmp_path / "nope.yaml"
  with pytest.raises(ScenarioError) as info:
    load_scenario(missing)
  assert info.value.problems == [
      f"{missing}: no such file or built-in scenario; give the path of a .yaml "
      "file or one of: committed_minority, community_garden, "
      "entrepreneur_share, entrepreneur_ties, hobbs_cafe, hobbs_cafe_mini, "
      "open_day, posted_rule, tea_crates, town"]
  with pytest.raises(ScenarioError, match="no such file or built-in scenario"):
    load_scenario("hobbs_cafe_maxi")
  with pytest.raises(ScenarioError, match="no built-in scenario by that name"):
    builtin_path("hobbs_cafe_maxi")
  with pytest.raises(ScenarioError, match="is a directory"):
    load_scenario(tmp_path)


def test_empty_file_and_a_list_instead_of_a_mapping(tmp_path):
  [problem] = _problems(_write(tmp_path, "# nothing yet\n"))
  assert problem.startswith(f"{tmp_path / 'bad.yaml'}:1: (top level): the file is empty; ")
  [problem] = _problems(_write(tmp_path, "- name: x\n"))
  assert "(top level): the file is not a mapping of keys; write the keys name, " in problem


def test_several_problems_give_several_lines_in_file_order(tmp_path):
  text = (VALID.replace("setting: Hobbs Cafe\n", "setting: Hobbs Cafe\ncolour: blue\n")
          .replace('end: "10:00"', 'end: "08:00"')
          .replace("role: ordinary", "role: customer")
          .replace("utility: 90", "utility: 0")
          .replace("violates: [smoking_indoors]", "violates: [smoking]"))
  file = _write(tmp_path, text)
  with pytest.raises(ScenarioError) as info:
    load_scenario(file)
  error = info.value
  assert isinstance(error, UserError)  # The CLI prints it and exits 2.
  assert str(error) == "\n".join(error.problems)
  paths = [p.split(": ")[1] for p in error.problems]
  assert paths == ["colour", "clock.end", "agents[0].initial_norms[0].utility",
                   "agents[1].role", "target_norms[0].violates[0]"]
  lines = [int(p.split(":")[1]) for p in error.problems]
  assert lines == sorted(lines)
  assert all(p.startswith(f"{file}:") for p in error.problems)


def test_from_dict_reports_paths_without_lines():
  with pytest.raises(ScenarioError) as info:
    Scenario.from_dict({"name": "x", "premise": "p", "setting": "s",
                        "clock": {"start": "09:00", "end": "10:00",
                                  "minutes_per_step": 10},
                        "agents": [{"name": "A", "role": "boss", "persona": "p"}],
                        "behaviours": [{"id": "a", "description": "d"}]},
                       source="scenario.json")
  assert info.value.problems == [
      'scenario.json: agents[0].role: "boss" is not a valid role; use one of: '
      "entrepreneur, ordinary"]

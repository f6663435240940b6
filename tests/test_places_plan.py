"""Plans say where: with declared places, every hour and task has a place.

An agent built from its prefab with the scenario's places (its params, as
`Scenario.entity_params` gives them) plans each hour in one of them and
each task of a decomposed block too; the act is told where its task is.
Without places, no prompt says anything of places (the golden replay
holds those prompts byte for byte).
"""

from __future__ import annotations

import importlib
import re

from concordia.typing import entity as entity_lib

from crsec_concordia.scenarios import load_scenario
from tests import crsec_script as cs
from tests.test_places import TWO_ROOMS

NAME = "Carlos Gomez"
plan_op = importlib.import_module("crsec_concordia.operations.normative_plan")
decompose_op = importlib.import_module(
    "crsec_concordia.operations.decompose_plan")


def spec(clock: str) -> entity_lib.ActionSpec:
  return entity_lib.ActionSpec(
      call_to_action=(f"It is Day 1 {clock} at Linden Rooms. What does {NAME} "
                      "do next? Describe one action in one sentence."),
      output_type=entity_lib.OutputType.FREE, tag="action")


def placed_plan(prompt, schema):
  """Two hours of reading in the reading room, then darts in the games
  room; tasks of half an hour, each where its block is."""
  del prompt
  hours = schema["properties"]["hours"]["minItems"]
  place = schema["properties"]["hours"]["items"]["properties"]["place"]
  assert place["enum"] == ["reading_room", "games_room", "hall"]
  answer = {"hours": [
      {"activity": "reads poetry" if h < 2 else "plays darts",
       "place": "reading_room" if h < 2 else "games_room", "habit": "none"}
      for h in range(hours)]}
  if "norms_observed" in schema["properties"]:
    answer["norms_observed"] = []
  return answer


def half_hours(prompt, schema):
  del schema
  start, end, block = cs._BLOCK.search(prompt).groups()  # pylint: disable=protected-access
  where = re.search(r"\(at (\w+)\)$", block)[1]
  lo, hi = cs._minutes(start), cs._minutes(end)  # pylint: disable=protected-access
  return {"tasks": [{"start": cs._clock(t), "end": cs._clock(min(hi, t + 30)),  # pylint: disable=protected-access
                     "activity": f"task {i + 1}", "place": where}
                    for i, t in enumerate(range(lo, hi, 30))]}


def test_every_hour_and_task_of_the_plan_says_where():
  s = load_scenario(TWO_ROOMS)
  places = s.entity_params(NAME)["places"]
  model = cs.cafe_model(**{cs.PLAN: placed_plan, cs.DECOMPOSE: half_hours,
                           cs.ACT: cs.act_answer("Carlos reads a poem.")})
  agent = cs.build_agent("normative", model, role="ordinary",
                         setting=s.setting, places=places,
                         day_start="09:00", day_end="12:00")
  agent.act(spec("09:00"))
  plan_call = next(c for c in model.calls if c.tag == "NormativePlan")
  assert ("Places:\n- reading_room: a quiet room of armchairs and bookshelves\n"
          in plan_call.prompt)
  assert "place: where Carlos Gomez spends it, the id of one of the places" in (
      plan_call.prompt)
  planner = agent.get_component("NormativePlanner")
  plan = planner.plan_for(1)
  assert plan["items"] == [
      {"start": "09:00", "end": "11:00", "activity": "reads poetry",
       "place": "reading_room"},
      {"start": "11:00", "end": "12:00", "activity": "plays darts",
       "place": "games_room"}]
  decompose = next(c for c in model.calls if c.tag == "DecomposePlan")
  assert decompose.schema["properties"]["tasks"]["items"]["properties"][
      "place"]["enum"] == ["reading_room", "games_room", "hall"]
  assert "09:00-11:00: reads poetry (at reading_room)" in decompose.prompt
  assert "and the id of the place each happens at." in decompose.prompt
  assert planner.current_task()["place"] == "reading_room"
  act = [c for c in model.calls if c.tag == "act"][-1].prompt
  assert "Carlos Gomez's task now (09:00-09:30, at reading_room): task 1." in act
  assert "11:00-12:00: plays darts (at games_room)" in act
  # An hour-long block is a task as it is: its place goes with it.
  assert planner.task_at(1, "11:10")["place"] == "games_room"


def test_without_places_the_plan_says_nothing_of_places():
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, role="ordinary")
  agent.act(spec("09:00"))
  plan_call = next(c for c in model.calls if c.tag == "NormativePlan")
  assert "Places:" not in plan_call.prompt and "place:" not in plan_call.prompt
  hour = plan_call.schema["properties"]["hours"]["items"]
  assert hour["required"] == ["activity", "habit"]
  assert "place" not in agent.get_component("NormativePlanner").current_task()


def test_an_hour_in_another_place_is_a_block_of_its_own():
  hours = plan_op.hours_of("09:00", "12:00")
  assert plan_op.blocks(hours, ["read", "read", "read"],
                        ["reading_room", "hall", "hall"]) == [
      {"start": "09:00", "end": "10:00", "activity": "read",
       "place": "reading_room"},
      {"start": "10:00", "end": "12:00", "activity": "read", "place": "hall"}]
  assert decompose_op.block_as_tasks(
      {"start": "09:00", "end": "10:30", "activity": "read",
       "place": "hall"}) == [
      {"start": "09:00", "end": "10:00", "activity": "read", "place": "hall",
       "decomposed": False},
      {"start": "10:00", "end": "10:30", "activity": "read", "place": "hall",
       "decomposed": False}]

"""Plan-driven acting: an agent asks the model only when something new happens.

An agent follows its plan's current task; each reason (a task begins, an
occasion, a conversation ended, a conflict noticed, a norm identified or
qualified, the plan revised, a failed last turn) costs exactly one act
call, and with none the action goes on with no call at all, carried
forward by the game master with the behaviours of the action it continues.
"""

from __future__ import annotations

import importlib
import itertools

import pytest
from concordia.typing import entity as entity_lib

from crsec_concordia import observations as obs
from crsec_concordia.components import JOURNAL_KEY, CONFLICT_DETECTOR_KEY, NORM_MEMORY_KEY
from crsec_concordia.norms import Origin
from tests import crsec_script as cs
from tests import test_runner as tr

NAME = "Carlos Gomez"


def spec(clock: str, tag: str = "action") -> entity_lib.ActionSpec:
  return entity_lib.ActionSpec(
      call_to_action=(f"It is Day 1 {clock} at Hobbs Cafe. What does {NAME} "
                      "do next? Describe one action in one sentence."),
      output_type=entity_lib.OutputType.FREE, tag=tag)


ACTIONS = ("orders a black coffee at the counter.",
           "opens his notebook and drafts a stanza.",
           "stretches his legs by the window.",
           "reads yesterday's newspaper slowly.",
           "chats with the server about the weather.",
           "sharpens a pencil and hums.")


def numbered_acts():
  """Each act call a different action (none a repeat of the one before)."""
  counter = itertools.count()
  def respond(prompt, schema):
    del prompt
    return {key: f"{NAME} {ACTIONS[next(counter) % len(ACTIONS)]}"
            for key in schema["properties"]}
  return respond


def agent_and_model(arm: str = "normative", **answers):
  model = cs.cafe_model(**{cs.ACT: numbered_acts(), **answers})
  agent = cs.build_agent(arm, model, role="ordinary")
  return agent, model


def acts(model) -> int:
  return model.calls_by_tag().get("act", 0)


def last_act_prompt(model) -> str:
  return [c for c in model.calls if c.tag == "act"][-1].prompt


@pytest.mark.parametrize("arm", ["normative", "baseline"])
def test_nothing_new_no_call_the_action_goes_on(arm):
  agent, model = agent_and_model(arm)
  first = agent.act(spec("09:00"))
  assert acts(model) == 1
  calls = len(model.calls)
  # The slot's observation: the agent's own action, nothing else.
  agent.observe(obs.format_action(obs.Stamp(1, "09:00", 1), NAME, "indoors",
                                  first))
  going_on = agent.act(spec("09:10"))
  assert len(model.calls) == calls  # No call of any kind.
  assert going_on == obs.continuing(first)
  assert obs.continued_action(going_on) == first
  assert agent.get_act_component().last_reasons == ("continued",)


def test_a_task_that_begins_is_one_act_call():
  agent, model = agent_and_model()
  agent.act(spec("09:00"))
  agent.act(spec("09:50"))
  assert acts(model) == 1
  agent.act(spec("10:00"))  # Tasks of an hour (tests/crsec_script.py).
  assert acts(model) == 2
  assert agent.get_act_component().last_reasons == ("task begins",)
  assert "task now (10:00-11:00): write poems (2)" in last_act_prompt(model)


def test_an_occasion_is_one_act_call_and_then_the_task_goes_on():
  agent, model = agent_and_model()
  before = agent.act(spec("09:00"))
  agent.act(spec("09:10", tag="occasion"))
  assert acts(model) == 2
  assert agent.get_act_component().last_reasons == ("occasion",)
  # Done with the occasion: not asked again; the task's action goes on.
  assert agent.act(spec("09:20")) == obs.continuing(before)
  assert acts(model) == 2


def test_an_occasion_as_a_task_begins_writes_the_task_s_action_ahead():
  """One call answers the occasion and writes the new task's first action;
  that action is the next slot's, new (adjudicated), with no call."""
  agent, model = agent_and_model()
  agent.act(spec("09:00"))
  answer = agent.act(spec("10:00", tag="occasion"))  # Task 2 begins too.
  assert acts(model) == 2
  call = [c for c in model.calls if c.tag == "act"][-1]
  assert list(call.schema["properties"]) == ["answer", "next"]
  assert "task now (10:00-11:00): write poems (2)" in call.prompt
  act = agent.get_act_component()
  assert act.last_reasons == ("task begins", "occasion")
  ahead = agent.act(spec("10:10"))
  assert acts(model) == 2  # No call.
  assert ahead not in (answer, obs.continuing(answer))
  assert obs.continued_action(ahead) is None  # A new action, adjudicated.
  assert act.last_reasons == ("written ahead",)
  # Then it goes on, as any action.
  assert agent.act(spec("10:20")) == obs.continuing(ahead)
  assert acts(model) == 2


def test_an_action_written_ahead_is_dropped_when_something_new_happens():
  agent, model = agent_and_model("baseline")
  agent.act(spec("09:00"))
  agent.act(spec("10:00", tag="occasion"))
  agent.observe(obs.format_conversation(  # A talk ended: it decides anew.
      obs.Stamp(1, "10:00", 7), "Abigail Chen", NAME, "the weather",
      [("Abigail Chen", "Lovely morning."), (NAME, "It is.")]))
  agent.act(spec("10:10"))
  assert acts(model) == 3
  assert agent.get_act_component().last_reasons == (
      "task begins", "conversation ended")


def test_an_action_written_ahead_that_repeats_the_answer_is_not_kept():
  agent, model = agent_and_model(**{cs.ACT: cs.act_answer(
      f"{NAME} pays the bill and leaves a tip on the saucer.",
      f"{NAME} pays the bill and leaves a tip on the saucer.")})
  agent.act(spec("09:00"))
  agent.act(spec("10:00", tag="occasion"))
  calls = acts(model)
  agent.act(spec("10:10"))  # The task begins: asked, as before.
  assert acts(model) > calls
  assert agent.get_act_component().last_reasons[0] == "task begins"


def test_an_action_written_ahead_survives_a_checkpoint():
  agent, model = agent_and_model()
  agent.act(spec("09:00"))
  agent.act(spec("10:00", tag="occasion"))
  state = agent.get_act_component().get_state()
  other, _ = agent_and_model()
  other.act(spec("09:00"))
  other.get_act_component().set_state(state)
  assert other.get_act_component().get_state() == state
  assert state["follow"]["ahead"][1].startswith(NAME)


def test_a_conversation_that_ended_is_one_act_call():
  agent, model = agent_and_model("baseline")
  agent.act(spec("09:00"))
  talk = obs.format_conversation(
      obs.Stamp(1, "09:00", 1), "Abigail Chen", NAME, "the weather",
      [("Abigail Chen", "Lovely morning."), (NAME, "It is.")])
  agent.observe(talk)
  agent.act(spec("09:10"))
  assert acts(model) == 2
  assert agent.get_act_component().last_reasons == ("conversation ended",)
  assert f"{NAME} has just finished talking with Abigail Chen." in (
      last_act_prompt(model))
  agent.act(spec("09:20"))
  assert acts(model) == 2


@pytest.mark.parametrize("talks", [False, True])
def test_a_conflict_noticed_is_one_act_call_unless_raised_in_a_talk(talks):
  agent, model = agent_and_model(**{cs.TALK: {"talk": talks}})
  agent.get_component(NORM_MEMORY_KEY).database.add(
      "No smoking indoors.", "injunctive", 80, origin=Origin.CREATED,
      qualified=True)
  agent.act(spec("09:00"))
  agent.observe(obs.format_action(obs.Stamp(1, "09:00", 1), "Tom Gomez",
                                  "indoors", "Tom lights a cigarette inside."))
  agent.act(spec("09:10"))
  requests = agent.get_component(CONFLICT_DETECTOR_KEY).pop_conversation_requests()
  if talks:
    # The talk is the reaction (its end is a reason of its own): the act
    # goes on with no call this slot.
    assert acts(model) == 1 and len(requests) == 1
    assert agent.get_act_component().last_reasons == ("continued",)
  else:
    assert acts(model) == 2 and not requests
    assert agent.get_act_component().last_reasons == ("a conflict noticed",)


def test_a_norm_taken_in_is_one_act_call_and_the_next_action_follows_the_revised_plan():
  def plan(prompt, schema):
    # The plan weighs the norm once it is held.
    smoke = ("smoke on the terrace" if "not allowed inside" in prompt
             else "smoke at the table")
    return cs.plan_answer(cs.halves(smoke, "read"))(prompt, schema)

  agent, model = agent_and_model(**{cs.PLAN: plan})
  agent.act(spec("09:00"))
  assert "task now (09:00-10:00): smoke at the table (1)" in (
      last_act_prompt(model))
  agent.observe(tr_talk())  # Abigail asks Carlos to smoke outside.
  agent.act(spec("09:20"))
  assert acts(model) == 2
  assert agent.get_act_component().last_reasons == (
      "task begins", "conversation ended", "a norm identified",
      "a norm qualified", "the plan revised")
  # The revised plan from 09:20; the next action follows its task.
  assert "task now (09:20-10:20): smoke on the terrace (1)" in (
      last_act_prompt(model))
  plans = [r for r in agent.get_component(JOURNAL_KEY).drain_records()
           if r["kind"] == "plan"]
  assert [p["revised"] for p in plans] == [False, True]


@pytest.mark.parametrize("supported", [False, True])
def test_a_norm_identified_is_news_only_until_it_is_rejected(supported):
  agent, model = agent_and_model(**{cs.EVALUATE: {
      "supported": supported, "type": "injunctive", "utility": 75}})
  agent.act(spec("09:00"))
  agent.observe(tr_talk())
  agent.act(spec("09:20"))
  journal = agent.get_component(JOURNAL_KEY)
  verdicts = [r for r in journal.drain_records() if r["kind"] == "verdict"]
  assert [v["accepted"] for v in verdicts] == [supported]
  reasons = agent.get_act_component().last_reasons
  assert ("a norm identified" in reasons) == supported
  # The talk that ended is a reason either way; a rejected norm adds none.
  assert "conversation ended" in reasons


@pytest.mark.parametrize("why, goes_on", [("a talk", True),
                                           ("an occasion", False)])
def test_asked_for_news_an_agent_that_answers_what_it_does_goes_on(
    why, goes_on):
  """A repeat of the action going on is the agent's choice to carry on
  when it was asked because of news (one call, no second ask, nothing to
  adjudicate again); for an occasion it is asked once more, as before."""
  same = {"answer": f"{NAME} {ACTIONS[0]}"}
  # Baseline: a talk ends, and no norm or plan comes of it.
  agent, model = agent_and_model("baseline", **{cs.ACT: same})
  first = agent.act(spec("09:00"))
  if why == "a talk":
    agent.observe(tr_talk())
    second = agent.act(spec("09:10"))
  else:
    second = agent.act(spec("09:10", tag="occasion"))
  reasons = agent.get_act_component().last_reasons
  if goes_on:
    assert acts(model) == 2
    assert second == obs.continuing(first)
    assert reasons == ("conversation ended", "went on")
    # Next slot, nothing new: on it goes with no call at all.
    assert agent.act(spec("09:20")) == obs.continuing(first)
    assert acts(model) == 2
  else:
    assert acts(model) == 3  # Asked once more; the second answer stands.
    assert second == first and "went on" not in reasons


def tr_talk() -> str:
  return obs.format_conversation(
      obs.Stamp(1, "09:10", 2), "Abigail Chen", NAME, "smoking",
      [("Abigail Chen", "Smoking isn't allowed inside, please go outside."),
       (NAME, "Sorry, I will.")])


def test_a_failed_turn_is_asked_again_next_slot():
  good = numbered_acts()

  def act(prompt, schema):  # Every answer of the 09:10 turn fails its schema.
    return ("this is not json" if "Day 1 09:10" in prompt
            else good(prompt, schema))

  agent, model = agent_and_model(**{cs.ACT: act})
  agent.act(spec("09:00"))
  failed = agent.act(spec("09:10", tag="occasion"))
  assert obs.is_no_action(failed)
  again = agent.act(spec("09:20"))
  assert not obs.is_no_action(again)
  assert agent.get_act_component().last_reasons == ("previous action failed",)


def test_the_game_master_carries_a_continued_action_forward(tmp_path,
                                                           embedder):
  model = tr.cafe()
  d = tr.run(tmp_path, embedder, model=model)
  actions = [r for r in tr.records(d) if r["kind"] == "action"]
  by_slot = {(a["actor"], a["step"]): a for a in actions}
  continued = [a for a in actions if a.get("continued")]
  assert continued
  for a in continued:
    origin = by_slot[(a["actor"], a["continues_step"])]
    assert not origin.get("continued") and origin["action"] == a["action"]
    assert (a["behaviours"], a["place"]) == (origin["behaviours"],
                                            origin["place"])
    assert (a["act_reasons"] == ["continued"]
            or a["act_reasons"][-1] == "went on")
  # One referee call per new action, none for a continued one.
  referee = [c for c in model.calls if c.tag == "GM.adjudicate"]
  assert len(referee) == len(actions) - len(continued)


def test_a_deed_going_on_is_judged_again_only_under_a_newly_held_norm():
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, name="Tamara Rodriguez",
                         role="ordinary")
  smoking = "Tom lights a cigarette inside."
  db = agent.get_component(NORM_MEMORY_KEY).database
  db.add("No cigarettes near the counter.", "injunctive", 80,
         origin=Origin.CREATED, qualified=True)
  agent.observe(obs.format_action(obs.Stamp(1, "09:00", 1), "Tom Gomez",
                                  "indoors", smoking))
  assert model.calls_by_tag()["DetectConflict"] == 1
  agent.observe(obs.format_action(obs.Stamp(1, "09:10", 2), "Tom Gomez",
                                  "indoors", smoking, continued=True))
  assert model.calls_by_tag()["DetectConflict"] == 1  # Nothing new.
  db.add("No smoking indoors.", "injunctive", 90, origin=Origin.CREATED,
         qualified=True)
  agent.observe(obs.format_action(obs.Stamp(1, "09:20", 3), "Tom Gomez",
                                  "indoors", smoking, continued=True))
  assert model.calls_by_tag()["DetectConflict"] == 2  # A norm held now.


def test_the_act_prompt_names_what_goes_on_and_retells_what_is_new():
  agent, model = agent_and_model("baseline")
  agent.act(spec("09:00"))
  stamp = obs.Stamp(1, "09:10", 2)
  agent.observe("\n".join([
      obs.format_clock(stamp),
      obs.format_action(stamp, "Tom Gomez", "indoors",
                        "Tom reads a long novel in the corner.", continued=True),
      obs.format_action(stamp, "Abigail Chen", "indoors",
                        "Abigail waters the plants by the door.")]))
  agent.act(spec("09:10", tag="occasion"))
  prompt = last_act_prompt(model)
  assert "Abigail waters the plants by the door." in prompt
  assert "Tom reads a long novel" not in prompt
  assert "Going on as before: Tom Gomez." in prompt


def test_without_a_plan_the_agent_decides_anew_each_hour():
  agent, model = agent_and_model(**{cs.PLAN: "this is not json"})
  agent.act(spec("09:00"))
  [failure] = [r for r in agent.get_component(JOURNAL_KEY).drain_records()
               if r["kind"] == "failure"]
  assert failure["op"] == "NormativePlan"  # Recorded; no plan made up.
  # No plan: the day in hour-long stretches, a new decision each hour.
  agent.act(spec("09:50"))
  assert acts(model) == 1
  agent.act(spec("10:00"))
  assert acts(model) == 2
  assert "task now" not in last_act_prompt(model)
  # The failed plan is not asked for again all day.
  assert len({c.prompt for c in model.calls if c.tag == "NormativePlan"}) == 1


def test_an_hour_of_the_plan_carries_the_habit_that_goes_with_it():
  plan_op = importlib.import_module("crsec_concordia.operations.normative_plan")
  hour = plan_op.hour_activity
  assert hour({"activity": "writes his poem.", "habit": "smokes at the "
               "table."}) == "writes his poem; smokes at the table"
  assert hour({"activity": "writes his poem", "habit": "none"}) == (
      "writes his poem")
  assert hour({"activity": "writes", "habit": "None (he does not smoke "
               "here)"}) == "writes"
  # A habit the activity already names is not said twice.
  assert hour({"activity": "reads and hums", "habit": "hums"}) == (
      "reads and hums")
  shape = plan_op.schema(None, "09:00", "11:00")["properties"]["hours"]
  assert shape["items"]["required"] == ["activity", "habit"]


def test_the_day_plan_is_an_hourly_schedule_that_covers_the_day():
  plan_op = importlib.import_module("crsec_concordia.operations.normative_plan")
  shape = plan_op.schema(2, "09:20", "12:00")
  assert shape["properties"]["hours"]["minItems"] == 3 == (
      shape["properties"]["hours"]["maxItems"])
  assert plan_op.blocks(plan_op.hours_of("09:20", "12:00"),
                        ["Read", "read ", "write"]) == [
      {"start": "09:20", "end": "11:00", "activity": "Read"},
      {"start": "11:00", "end": "12:00", "activity": "write"}]


@pytest.mark.parametrize("second, made", [
    (["write poems", "lunch"], True),   # asked again, saying why: a plan
    (["10:00-11:00", "lunch"], False),  # twice a time: a failure, no plan
])
def test_a_plan_hour_that_names_only_a_time_is_asked_again_then_failed(
    second, made):
  from crsec_concordia.models.scripted import ScriptedModel
  plan_op = importlib.import_module("crsec_concordia.operations.normative_plan")
  def hours(*activities):
    return {"hours": [{"activity": a, "habit": "none"} for a in activities]}

  answers = iter([hours("09:00-10:00", "lunch"), hours(*second)])
  model = ScriptedModel([(cs.PLAN, lambda p: next(answers))])
  failures = []
  plan = plan_op.normative_plan(
      model, name=NAME, persona="A poet.", goal="", setting="", day=1,
      start="09:00", end="11:00", norms=None, on_failure=failures.append)
  prompts = [c.prompt for c in model.calls]
  assert len(prompts) == 2
  assert ('Your answer did not work: "09:00-10:00" is a time, not an '
          "activity") in prompts[1]
  if made:
    assert [i["activity"] for i in plan["items"]] == second and not failures
  else:
    assert plan is None
    assert [f["error"] for f in failures] == [
        '"10:00-11:00" is a time, not an activity']


def test_a_task_that_names_only_a_time_is_not_a_decomposition():
  decompose = importlib.import_module(
      "crsec_concordia.operations.decompose_plan")
  tasks = [{"start": "09:00", "end": "09:30", "activity": "drafts a stanza"},
           {"start": "09:30", "end": "10:00", "activity": "09:45"}]
  assert decompose.problem(tasks, "09:00", "10:00") == (
      '"09:45" is a time, not an activity')
  assert decompose.problem(tasks[:1] + [{**tasks[1], "activity": "reads"}],
                           "09:00", "10:00") is None


def test_an_agent_with_no_norm_plans_and_acts_with_the_baseline_s_prompts():
  """The arms differ only once CRSEC has given an agent a norm: an ordinary
  agent that holds none sends the baseline agent's plan and act prompts,
  word for word (the baseline's plan is counted as a DayPlan); once it
  holds a norm, both carry it."""
  prompts = {}
  for arm, plan_tag in (("normative", "NormativePlan"),
                        ("baseline", "DayPlan")):
    agent, model = agent_and_model(arm)
    agent.act(spec("09:00"))
    prompts[arm] = {"plan" if c.tag == plan_tag else c.tag: c.prompt
                    for c in model.calls if c.tag in (plan_tag, "act")}
  assert set(prompts["normative"]) == {"plan", "act"}
  assert prompts["normative"] == prompts["baseline"]
  assert "Norms" not in prompts["normative"]["plan"]
  assert "norms" not in prompts["normative"]["act"]

  agent, model = agent_and_model("normative")
  agent.get_component(NORM_MEMORY_KEY).database.add(
      "No smoking indoors.", "injunctive", 90, origin=Origin.CREATED,
      qualified=True)
  agent.act(spec("09:00"))
  plan = [c for c in model.calls if c.tag == "NormativePlan"][-1].prompt
  assert "1. No smoking indoors. (90/100)" in plan
  assert "No smoking indoors." in last_act_prompt(model)

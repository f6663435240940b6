"""The CRSEC components and operations with the scripted model."""

import re

import pytest

from crsec_concordia import observations as obs
from crsec_concordia import repetition
from crsec_concordia.components import _act_answer, structured_act
from crsec_concordia.components import (CONFLICT_DETECTOR_KEY, JOURNAL_KEY,
                                        NORM_EVALUATOR_KEY, NORM_MEMORY_KEY)
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.norms import NormDatabase, Origin, RejectionReason, Status
from crsec_concordia.operations import immediate_evaluation
from tests import crsec_script as cs

S = obs.Stamp(1, "09:10", 2)
SMOKE = obs.format_action(S, "Tom Gomez", "indoors",
                          "Tom lights a cigarette at the counter.")


def smoke_at(step: int) -> str:
  """Tom smoking again at `step`, a new deed each time (the same text
  going on would be nothing new to an observer: components/_perception.py)."""
  return SMOKE.replace("step 2", f"step {step}").replace(
      "at the counter.", f"at the counter, cigarette number {step}.")
TALK = obs.format_conversation(
    obs.Stamp(1, "09:20", 3), "Abigail Chen", "Carlos Gomez", "smoking",
    [("Abigail Chen", "Smoking isn't allowed inside, please go outside."),
     ("Carlos Gomez", "Sorry, I will.")])


def memory(agent):
  return agent.get_component(NORM_MEMORY_KEY)


def journal(agent):
  return agent.get_component(JOURNAL_KEY)


def test_ordinary_agent_without_norms_detects_nothing_and_calls_nothing():
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, role="ordinary")
  agent.observe(SMOKE)
  assert model.calls == []
  assert agent.get_component(CONFLICT_DETECTOR_KEY).pop_conversation_requests() == []


def test_entrepreneur_creates_norms_detects_and_asks_to_talk():
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="entrepreneur")
  agent.observe(SMOKE)
  assert model.calls_by_tag() == {"CreateNorm": 1, "DetectConflict": 1}
  db = memory(agent).database
  assert [n.status for n in db.all()] == [Status.QUALIFIED] * 5
  requests = agent.get_component(CONFLICT_DETECTOR_KEY).pop_conversation_requests()
  assert [(r["initiator"], r["partner"], r["norm"]) for r in requests] == [
      ("Abigail Chen", "Tom Gomez", "No smoking indoors.")]
  kinds = [r["kind"] for r in journal(agent).drain_records()]
  assert kinds.count("created") == 5 and "conflict" in kinds
  assert "talk_decision" in kinds
  # Nor is the same person talked to again at once, about any norm; a new
  # deed's conflict is still detected. The same deed going on is not new
  # (already perceived): no DetectConflict call for it.
  calls = model.calls_by_tag()["DetectConflict"]
  agent.observe(SMOKE.replace("step 2", "step 3"))
  assert model.calls_by_tag()["DetectConflict"] == calls
  agent.observe(obs.format_action(obs.Stamp(1, "09:30", 4), "Tom Gomez",
                                  "indoors", "Tom shouts across the room."))
  assert agent.get_component(CONFLICT_DETECTOR_KEY).pop_conversation_requests() == []
  kinds = [r["kind"] for r in journal(agent).drain_records()]
  assert kinds.count("conflict") == 1


def test_an_ordinary_agent_may_decide_not_to_talk():
  model = cs.cafe_model(**{cs.TALK: {"talk": False}})
  agent = cs.build_agent("normative", model, role="ordinary")
  memory(agent).database.add("No smoking indoors.", "injunctive", 80,
                             origin=Origin.CREATED, qualified=True)
  agent.observe(SMOKE)
  assert model.calls_by_tag() == {"DetectConflict": 1, "DecideToTalk": 1}
  assert agent.get_component(CONFLICT_DETECTOR_KEY).pop_conversation_requests() == []
  records = journal(agent).drain_records()
  assert [r["talk"] for r in records if r["kind"] == "talk_decision"] == [False]


def test_receiver_identifies_and_qualifies_a_norm_from_a_conversation():
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, role="ordinary")
  agent.observe(TALK)
  db = memory(agent).database
  [norm] = db.all()
  assert norm.status == Status.QUALIFIED
  assert (norm.origin, norm.source_agent, norm.step) == (
      "conversation", "Abigail Chen", 3)
  assert "Smoking isn't allowed" in norm.source_text
  records = journal(agent).drain_records()
  assert [r["kind"] for r in records] == ["candidate", "verdict"]
  assert records[1]["accepted"] is True and records[1]["time"] == "Day 1 09:20"


def test_a_rule_that_is_no_sentence_is_asked_for_again_never_held():
  def identify(prompt):
    again = "Your answer did not work" in prompt
    return {"rule": "Smoking is not allowed inside." if again else "true",
            "is_rule": True, "type": "injunctive", "utility": 70}
  model = cs.cafe_model(**{cs.IDENTIFY: identify})
  agent = cs.build_agent("normative", model, role="ordinary")
  agent.observe(TALK)
  [norm] = memory(agent).database.all()
  assert norm.content == "Smoking is not allowed inside."
  asked = [c.prompt for c in model.calls if c.tag == "IdentifyNorm"]
  assert len(asked) == 2 and 'rule "true" is not a sentence' in asked[1]


# A two-word rule is a rule; a one-word answer that claims none is no
# claim: neither is asked for again.
@pytest.mark.parametrize("rule, is_rule, held", [
    ("No smoking.", True, ["No smoking."]), ("Nothing.", False, [])])
def test_a_short_answer_is_asked_for_once_when_it_says_enough(
    rule, is_rule, held):
  model = cs.cafe_model(**{cs.IDENTIFY: {
      "rule": rule, "is_rule": is_rule, "type": "injunctive", "utility": 70}})
  agent = cs.build_agent("normative", model, role="ordinary")
  agent.observe(TALK)
  assert [n.content for n in memory(agent).database.all()] == held
  assert model.calls_by_tag()["IdentifyNorm"] == 1


def test_a_failed_operation_is_recorded_and_invents_nothing():
  model = cs.cafe_model(**{cs.IDENTIFY: "this is not json"})
  agent = cs.build_agent("normative", model, role="ordinary")
  agent.observe(TALK)
  assert len(memory(agent).database) == 0
  [failure] = journal(agent).drain_records()
  assert failure["kind"] == "failure" and failure["op"] == "IdentifyNorm"
  assert failure["raw"] == "this is not json"


def test_observation_path_reflects_every_n_behaviours():
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, role="ordinary", reflect_every=3)
  for step in range(2, 5):
    agent.observe(smoke_at(step))
  assert model.calls_by_tag()["Reflect"] == 1
  [norm] = memory(agent).database.all()
  assert norm.origin == "observation" and norm.source_agent is None
  kinds = [r["kind"] for r in journal(agent).drain_records()]
  assert kinds == ["thought", "candidate", "verdict"]


# -- ImmediateEvaluation: each check's rejection reason ------------------------

def _evaluate(model, content, held=(), names=("Carlos Gomez",)):
  db = NormDatabase("Carlos Gomez")
  held_norms = [db.add(h, "injunctive", 80, origin="created", qualified=True)
                for h in held]
  candidate = db.add(content, "injunctive", 50, origin="conversation",
                     source_text="Abigail: smoking isn't allowed inside.")
  return immediate_evaluation(model, shared_embedder(), name="Carlos Gomez",
                              persona="A poet.", candidate=candidate,
                              held=held_norms, known_names=list(names),
                              on_failure=None)


def test_embedding_precheck_rejects_a_clear_duplicate_without_any_call():
  model = cs.cafe_model()
  verdict = _evaluate(model, "No smoking indoors!", held=["No smoking indoors."])
  assert verdict.reason == RejectionReason.DUPLICATE
  assert "embedding similarity" in verdict.detail and model.calls == []


def test_a_norm_naming_a_person_is_not_a_norm_without_any_call():
  model = cs.cafe_model()
  verdict = _evaluate(model, "Carlos must smoke outside.")
  assert verdict.reason == RejectionReason.NOT_A_NORM and model.calls == []


def test_unsupported_by_its_source_is_inconsistent():
  model = cs.cafe_model(**{cs.EVALUATE: {"supported": False,
                                         "type": "injunctive", "utility": 40}})
  verdict = _evaluate(model, "Smoking is fine anywhere.")
  assert verdict.reason == RejectionReason.INCONSISTENT_WITH_SOURCE


def test_same_meaning_as_a_related_norm_is_a_duplicate():
  model = cs.cafe_model(**{cs.PAIR: {"same_meaning": True, "opposite": False}})
  verdict = _evaluate(model, "Smoking is not permitted inside the cafe.",
                      held=["No smoking indoors."])
  assert verdict.reason == RejectionReason.DUPLICATE
  # The pairwise call comes first: a duplicate costs one call, no source
  # check.
  assert len(model.calls) == 1 and verdict.llm_calls == 1
  assert "same_meaning:" in model.calls[0].prompt


def test_a_related_norm_that_is_no_duplicate_is_then_checked_at_its_source():
  model = cs.cafe_model(**{cs.EVALUATE: {"supported": False,
                                         "type": "injunctive", "utility": 40}})
  verdict = _evaluate(model, "Smoking is not permitted inside the cafe.",
                      held=["No smoking indoors."])
  assert verdict.reason == RejectionReason.INCONSISTENT_WITH_SOURCE
  assert verdict.llm_calls == 2
  assert ["same_meaning:" in c.prompt for c in model.calls] == [True, False]


def test_opposite_of_a_related_norm_is_a_conflict():
  model = cs.cafe_model(**{cs.PAIR: {"same_meaning": False, "opposite": True}})
  verdict = _evaluate(model, "Smoking inside the cafe is fine.",
                      held=["No smoking indoors."])
  assert verdict.reason == RejectionReason.CONFLICTS_WITH_NORM


def test_an_unrelated_held_norm_is_not_compared():
  model = cs.cafe_model()
  verdict = _evaluate(model, "Smoking is not permitted inside the cafe.",
                      held=["Tip the server after meals."])
  assert verdict.accepted and verdict.utility == 75
  assert len(model.calls) == 1  # No pairwise call for an unrelated norm.


def test_type_is_corrected():
  model = cs.cafe_model(**{cs.EVALUATE: {"supported": True,
                                         "type": "descriptive", "utility": 60}})
  verdict = _evaluate(model, "People usually tip after meals.")
  assert verdict.accepted and verdict.type == "descriptive"
  assert verdict.detail == "type corrected"


# -- LongTermSynthesis ---------------------------------------------------------

def _utility_by_statement(prompt):
  return {"supported": True, "type": "injunctive",
          "utility": 80 if "Statement: Do not smoke" in prompt else 40}


def _agent_with_two_candidates(model, threshold):
  model.add_rule(cs.EVALUATE, _utility_by_statement, first=True)
  agent = cs.build_agent("normative", model, role="ordinary",
                         synthesis_threshold=threshold)
  db = memory(agent).database
  a = db.add("Do not smoke cigarettes in the dining room.", "injunctive", 50,
             origin="conversation", source_text="x")
  b = db.add("Cigar smoke must stay outside the building.", "injunctive", 50,
             origin="conversation", source_text="y")
  return agent, db, a, b


def test_synthesis_waits_for_the_threshold():
  model = cs.cafe_model()
  agent, db, a, b = _agent_with_two_candidates(model, threshold=150)
  agent.observe("nothing in particular")
  assert db.counter == 120 and "LongTermSynthesis" not in model.calls_by_tag()
  assert a.qualified and b.qualified


def test_synthesis_replaces_sources_with_a_weighted_abstract_norm():
  model = cs.cafe_model()
  agent, db, a, b = _agent_with_two_candidates(model, threshold=100)
  agent.observe("nothing in particular")
  [abstract] = [n for n in db.all() if n.origin == "synthesis"]
  assert abstract.qualified and abstract.replaces == [a.id, b.id]
  assert abstract.utility == round((3 * 80 + 1 * 40) / 4)
  assert a.status == b.status == Status.REPLACED
  assert db.counter == 0
  [record] = [r for r in journal(agent).drain_records()
              if r["kind"] == "synthesis"]
  assert record["accepted"] and record["weights"] == [3, 1]


def test_a_rejected_abstract_norm_leaves_its_sources_qualified():
  model = cs.cafe_model()
  agent, db, a, b = _agent_with_two_candidates(model, threshold=100)
  model.add_rule(r"Statement: Keep the air clean",
                 {"supported": False, "type": "injunctive", "utility": 50},
                 first=True)
  agent.observe("nothing in particular")
  [abstract] = [n for n in db.all() if n.origin == "synthesis"]
  assert abstract.status == Status.REJECTED
  assert a.qualified and b.qualified


# -- state and ablations --------------------------------------------------------

def _episode(agent):
  agent.observe(SMOKE)
  agent.observe(TALK)
  for step in range(4, 10):
    agent.observe(smoke_at(step))
  agent.act()


def _normalised(state):
  """Concordia's memory bank saves a Python set (`stored_hashes`) as a list
  in iteration order, which a restored set need not repeat: compare it as a
  set; everything else must be equal as it is."""
  if isinstance(state, dict):
    return {k: sorted(v) if k == "stored_hashes" else _normalised(v)
            for k, v in state.items()}
  return state


def test_component_state_round_trips():
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, role="entrepreneur",
                         reflect_every=3, synthesis_threshold=100)
  _episode(agent)
  state = agent.get_state()
  twin = cs.build_agent("normative", cs.cafe_model(), role="entrepreneur",
                        reflect_every=3, synthesis_threshold=100)
  twin.set_state(state)
  assert _normalised(twin.get_state()) == _normalised(state)
  assert twin.get_component(NORM_MEMORY_KEY).database.to_json() == (
      memory(agent).database.to_json())


MODULE_TAGS = {
    "communication": {"DetectConflict", "DecideToTalk"},
    "observation": {"Reflect"},
    "immediate_evaluation": {"ImmediateEvaluation"},
    "synthesis": {"LongTermSynthesis"},
    # Without compliance the agent still plans (as the baseline does), with
    # no norms in the plan's prompt: its plan is a DayPlan, not a
    # NormativePlan (see RENAMED).
    "compliance": {"NormativePlan"},
}
# The calls an ablation asks under another name.
RENAMED = {"compliance": {"DayPlan"}}


def _tags(modules):
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, role="entrepreneur",
                         reflect_every=3, synthesis_threshold=50,
                         modules=modules)
  _episode(agent)
  return {t for t, n in model.calls_by_tag().items() if n}


@pytest.mark.parametrize("module", sorted(MODULE_TAGS))
def test_each_ablation_removes_exactly_its_modules_calls(module):
  everything = _tags({})
  assert set().union(*MODULE_TAGS.values()) - {"DecideToTalk"} <= everything
  assert _tags({module: False}) == (everything - MODULE_TAGS[module]
                                    | RENAMED.get(module, set()))


def test_without_compliance_the_plan_weighs_no_norms():
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, role="entrepreneur",
                         modules={"compliance": False})
  _episode(agent)
  [plan] = [c for c in model.calls if c.tag == "DayPlan"]
  assert "Norms" not in plan.prompt and "norms_observed" not in plan.prompt
  assert "No smoking indoors." not in [c for c in model.calls
                                       if c.tag == "act"][0].prompt


def test_baseline_has_no_crsec_components_and_plans_without_norms():
  model = cs.cafe_model()
  agent = cs.build_agent("baseline", model)
  _episode(agent)
  assert NORM_MEMORY_KEY not in agent.get_all_context_components()
  assert NORM_EVALUATOR_KEY not in agent.get_all_context_components()
  # The same planner as a normative agent's, norms absent (a DayPlan); the
  # morning's three-hour block decomposed into tasks; one act.
  assert model.calls_by_tag() == {"DayPlan": 1, "DecomposePlan": 1,
                                  "act": 1}
  [plan] = [c for c in model.calls if c.tag == "DayPlan"]
  assert "Norms" not in plan.prompt and "norms_observed" not in plan.prompt


def test_each_component_logs_its_records_on_its_own_channel():
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="entrepreneur")
  agent.observe(SMOKE)
  channels = agent.measurements.get_all_channels()
  assert {d["Key"] for d in channels[CONFLICT_DETECTOR_KEY]} == {
      "conflict", "talk_decision"}
  assert {d["Key"] for d in channels[NORM_MEMORY_KEY]} == {"created"}
  conflict = next(d["Value"] for d in channels[CONFLICT_DETECTOR_KEY]
                  if d["Key"] == "conflict")
  assert (conflict["actor"], conflict["norm"], conflict["step"]) == (
      "Tom Gomez", "No smoking indoors.", 2)


def test_conflict_detection_judges_the_most_related_rule():
  # The embedder finds the rule a behaviour is about (the 1.5B model named
  # the first of a list); the model only judges that one rule.
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="entrepreneur")
  agent.observe(obs.format_action(S, "Tom Gomez", "indoors",
                                  "Tom shouts a joke across the noisy room."))
  [detect] = [c for c in model.calls if c.tag == "DetectConflict"]
  assert ('Tom Gomez (indoors): "Tom shouts a joke across the noisy room."\n'
          "Rule: Be quiet in public places.\n") in detect.prompt
  requests = agent.get_component(CONFLICT_DETECTOR_KEY).pop_conversation_requests()
  assert [r["norm"] for r in requests] == ["Be quiet in public places."]
  [conflict] = [r for r in journal(agent).drain_records()
                if r["kind"] == "conflict"]
  assert conflict["evidence"] == "lights a cigarette"


def test_a_talk_no_game_master_held_is_a_reason_to_act():
  # Concordia's stock game master never collects the talk an entrepreneur
  # asks for: at its next observation the request is dropped and the
  # conflict becomes news for its act, once.
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="entrepreneur")
  detector = agent.get_component(CONFLICT_DETECTOR_KEY)
  agent.observe(obs.format_action(S, "Tom Gomez", "indoors",
                                  "Tom shouts a joke across the noisy room."))
  detector.join()
  assert "a conflict noticed" not in journal(agent).pop_news()  # A talk is asked.
  later = obs.Stamp(1, "09:20", 3)
  agent.observe(obs.format_action(later, "Tamara Rodriguez", "indoors",
                                  "Tamara Rodriguez reads a book."))
  assert "a conflict noticed" in journal(agent).pop_news()
  assert detector.pop_conversation_requests() == []
  agent.observe(obs.format_action(obs.Stamp(1, "09:30", 4), "Tamara Rodriguez",
                                  "indoors", "Tamara Rodriguez reads a book."))
  assert "a conflict noticed" not in journal(agent).pop_news()


def test_a_slot_is_judged_in_one_call_per_observer_without_unrelated_behaviour():
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="entrepreneur")
  slot = "\n".join([
      obs.format_action(S, "Carlos Gomez", "indoors",
                        "Carlos lights a cigarette at his table."),
      obs.format_action(S, "Tamara Rodriguez", "indoors",
                        "Tamara Rodriguez continues reading a book on "
                        "parenting."),
      obs.format_action(S, "Tom Gomez", "indoors",
                        "Tom shouts a joke across the noisy room.")])
  agent.observe(slot)
  [detect] = [c for c in model.calls if c.tag == "DetectConflict"]
  # One entry per related person; the reader is about none of the rules.
  assert list(detect.schema["properties"]) == ["Carlos Gomez", "Tom Gomez"]
  assert "Tamara" not in detect.prompt
  records = journal(agent).drain_records()
  assert [r["actor"] for r in records if r["kind"] == "conflict"] == [
      "Carlos Gomez", "Tom Gomez"]
  requests = agent.get_component(CONFLICT_DETECTOR_KEY).pop_conversation_requests()
  assert [(r["partner"], r["norm"]) for r in requests] == [
      ("Carlos Gomez", "No smoking indoors."),
      ("Tom Gomez", "Be quiet in public places.")]
  # Nothing related at all: no call.
  model.calls.clear()
  agent.observe(obs.format_action(obs.Stamp(1, "09:20", 3), "Tamara Rodriguez",
                                  "indoors", "Tamara Rodriguez continues "
                                  "reading a book on parenting."))
  assert [c for c in model.calls if c.tag == "DetectConflict"] == []


@pytest.mark.parametrize("answer", [
    {"evidence": "It is fine.", "verdict": "follows"},
    {"evidence": "It is fine.", "verdict": "unrelated"},
    # A breach with no words of the behaviour quoted is no breach.
    {"evidence": "none", "verdict": "breaks"}])
def test_a_kept_or_unrelated_rule_is_no_conflict(answer):
  model = cs.cafe_model(**{cs.DETECT: cs.each(answer)})
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="entrepreneur")
  agent.observe(SMOKE)
  assert agent.get_component(CONFLICT_DETECTOR_KEY).pop_conversation_requests() == []
  assert "conflict" not in [r["kind"] for r in journal(agent).drain_records()]


def test_a_conversation_turn_asks_for_spoken_words_not_narration():
  from concordia.typing import entity as entity_lib  # pylint: disable=import-outside-toplevel
  model = cs.cafe_model()
  agent = cs.build_agent("baseline", model)
  for tag in (obs.SPEECH_TAG, "action"):
    agent.act(entity_lib.ActionSpec(call_to_action="What does Carlos say?",
                                    output_type=entity_lib.OutputType.FREE,
                                    tag=tag))
  speech, action = [c.prompt.rstrip().splitlines()[-1] for c in model.calls
                    if c.tag in ("Talk", "act")]
  # Counted apart: a conversation turn is talk, not an action.
  assert [c.tag for c in model.calls if c.tag in ("Talk", "act")] == [
      "Talk", "act"]
  assert "says aloud" in speech and "third person" not in speech
  assert "third person" in action and "says aloud" not in action


@pytest.mark.parametrize("replan", [True, False])
def test_a_norm_qualified_mid_day_revises_the_rest_of_the_plan(replan):
  from concordia.typing import entity as entity_lib  # pylint: disable=import-outside-toplevel
  from crsec_concordia.components import NORMATIVE_PLANNER_KEY  # pylint: disable=import-outside-toplevel
  def plan(prompt: str) -> list[dict]:
    start, end = re.search(r"from (\d\d:\d\d) to (\d\d:\d\d)", prompt).groups()
    return [{"start": start, "end": "12:00", "activity": "write"},
            {"start": "12:00", "end": end, "activity": "read"}]

  model = cs.cafe_model(**{cs.PLAN: cs.plan_answer(plan)})
  agent = cs.build_agent("normative", model, role="ordinary")
  planner = agent.get_component(NORMATIVE_PLANNER_KEY)
  planner._replan = replan  # pylint: disable=protected-access
  spec = entity_lib.ActionSpec(call_to_action="What next?",
                               output_type=entity_lib.OutputType.FREE)
  agent.act(spec)  # The first plan, made with no norms.
  agent.observe(TALK)  # Carlos accepts "Smoking is not allowed inside".
  agent.act(spec)
  agent.act(spec)  # No new norm since: no third plan.
  plans = [r for r in journal(agent).drain_records() if r["kind"] == "plan"]
  assert [p["revised"] for p in plans] == ([False, True] if replan else [False])
  if replan:
    revision = [c for c in model.calls if c.tag == "NormativePlan"][1]
    assert "from 09:20 to" in revision.prompt
    assert "Smoking is not allowed inside the cafe." in revision.prompt


def test_a_created_norm_that_describes_the_person_is_rejected_not_held():
  norms = [{"content": c, "type": "injunctive", "utility": 80} for c in (
      "No smoking indoors.", "Be quiet in public places.", "Tip after meals.",
      "Wait your turn in line.")] + [
      {"content": "Abigail Chen speaks up when the room gets unpleasant.",
       "type": "injunctive", "utility": 70}]
  model = cs.cafe_model(**{cs.CREATE: {"norms": norms}})
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="entrepreneur")
  memory(agent).ensure_created()
  db = memory(agent).database
  assert len(db.qualified()) == 4
  [odd] = [n for n in db.all() if not n.qualified]
  assert odd.rejection_reason == RejectionReason.NOT_A_NORM
  created = [r for r in journal(agent).drain_records() if r["kind"] == "created"]
  assert [r["accepted"] for r in created] == [True] * 4 + [False]
  # Asked once more, saying which norm names her; the second answer stood.
  asked = [c.prompt for c in model.calls if c.tag == "CreateNorm"]
  assert len(asked) == 2
  assert "norm 5 names Abigail Chen" in asked[1]


def test_a_norm_created_twice_in_one_answer_is_held_once():
  norms = [{"content": c, "type": "injunctive", "utility": 80} for c in (
      "No smoking indoors.", "Be quiet in public places.", "Tip after meals.",
      "Wait your turn in line.", "no smoking  indoors")]
  model = cs.cafe_model(**{cs.CREATE: {"norms": norms}})
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="entrepreneur")
  memory(agent).ensure_created()
  db = memory(agent).database
  assert [n.content for n in db.qualified()] == [n["content"]
                                                 for n in norms[:4]]
  [twice] = [n for n in db.all() if not n.qualified]
  first = db.qualified()[0]
  assert twice.rejection_reason == RejectionReason.DUPLICATE
  assert twice.rejection_detail == f"same as {first.id}"
  created = [r for r in journal(agent).drain_records() if r["kind"] == "created"]
  assert [r["accepted"] for r in created] == [True] * 4 + [False]
  assert created[-1]["reason"] == str(RejectionReason.DUPLICATE)


def test_a_created_norm_that_names_the_person_is_asked_for_once_more():
  general = [{"content": c, "type": "injunctive", "utility": 80} for c in (
      "No smoking indoors.", "Be quiet in public places.", "Tip after meals.",
      "Wait your turn in line.", "Leave a tip for the server.")]
  named = general[:4] + [{"content": "Abigail Chen always leaves a tip.",
                          "type": "descriptive", "utility": 70}]
  model = cs.cafe_model(**{cs.CREATE: lambda prompt, schema: {
      "norms": general if "Answer again" in prompt else named}})
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="entrepreneur")
  memory(agent).ensure_created()
  assert [n.content for n in memory(agent).database.qualified()] == [
      n["content"] for n in general]
  assert len([c for c in model.calls if c.tag == "CreateNorm"]) == 2


def test_no_talk_decision_is_asked_for_while_a_talk_is_cooling_down():
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, role="ordinary")
  memory(agent).database.add("No smoking indoors.", "injunctive", 80,
                             origin=Origin.CREATED, qualified=True)
  agent.observe(SMOKE)
  agent.observe(smoke_at(3))
  assert model.calls_by_tag() == {"DetectConflict": 2, "DecideToTalk": 1}


CARLOS_SMOKES = obs.format_action(
    obs.Stamp(1, "09:30", 4), "Carlos Gomez", "indoors",
    "Carlos Gomez lights one cigarette after another right there at the table.")


def _acting(answers: list[str]):
  """A scripted café whose act answers come from `answers`, in order."""
  queue = list(answers)
  return cs.cafe_model(**{cs.ACT: lambda prompt: {"answer": queue.pop(0)}})


def _act(agent):
  from concordia.typing import entity as entity_lib  # pylint: disable=import-outside-toplevel
  return agent.act(entity_lib.ActionSpec(
      call_to_action="What does Abigail Chen do next?",
      output_type=entity_lib.OutputType.FREE, tag="action"))


def _second_ask(model) -> str:
  """The act's second prompt, which is its first with one line added."""
  first, second = [c.prompt for c in model.calls if c.tag == "act"]
  assert second.startswith(first)
  return second.rstrip()


def test_an_action_copied_from_another_agent_is_asked_for_again():
  model = _acting([
      "Abigail Chen lights one cigarette after another right there at the table.",
      "Abigail Chen opens her laptop to plan the food drive."])
  agent = cs.build_agent("baseline", model, name="Abigail Chen")
  agent.observe(CARLOS_SMOKES)
  assert _act(agent) == "Abigail Chen opens her laptop to plan the food drive."
  assert _second_ask(model).endswith(
      '"Carlos Gomez lights one cigarette after another right there at the '
      'table." is what Carlos Gomez did, not Abigail Chen. Write what Abigail '
      "Chen does now, in Abigail Chen's own way.")


def _act_failure(agent) -> dict:
  """The one Act failure the agent's journal recorded."""
  [failure] = [r for r in journal(agent).drain_records()
               if r["kind"] == "failure" and r["op"] == "Act"]
  return failure


def test_a_second_copy_is_no_action_and_is_recorded_as_a_failure():
  copy = "Abigail lights one cigarette after another, right there at her table."
  model = _acting([copy, copy])
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="ordinary")
  agent.observe(CARLOS_SMOKES)
  assert _act(agent) == f"Abigail Chen {structured_act.NO_OWN_ACTION}"
  failure = _act_failure(agent)
  assert failure["op"] == "Act" and failure["raw"] == copy
  assert ("copied another agent's action (Carlos Gomez's) when asked once more"
          in failure["error"])


@pytest.mark.parametrize("empty", ["  ", "Abigail Chen.", "Abigail"])
def test_an_answer_that_says_nothing_is_asked_for_once_more(empty):
  """SmolLM2-135M answered with the name alone, or nothing (session 25);
  an empty string fails the schema already."""
  model = _acting([empty, "Abigail Chen opens her laptop to plan the food drive."])
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="ordinary")
  assert _act(agent) == "Abigail Chen opens her laptop to plan the food drive."
  said = (f'"{empty.strip()}" says nothing Abigail Chen does.' if empty.strip()
          else "The answer was empty.")
  assert _second_ask(model).endswith(
      f"{said} Write what Abigail Chen does now.")
  assert agent.get_act_component().last_reasons[-1] == "asked once more"


def test_a_second_answer_that_says_nothing_is_no_action_and_a_failure():
  model = _acting(["Abigail Chen", " "])
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="ordinary")
  assert _act(agent) == f"Abigail Chen {obs.NO_DEED}"
  failure = _act_failure(agent)
  assert "said nothing the agent does when asked once more" in failure["error"]
  assert obs.is_no_action(obs.NO_DEED)


RECORD = ('{"current_event": "Abigail Chen checks the notice board.", '
          '"next_action": "Abigail Chen waters the plants."}')


def test_an_answer_written_as_a_data_record_is_asked_for_once_more():
  """The golden café's step 2 (5e8fb49): asked once more after a copy, the
  embedded model wrote a JSON object into the action, which observers and
  the referee then read as what Abigail did."""
  model = _acting([RECORD, "Abigail Chen waters the plants by the door."])
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="ordinary")
  assert _act(agent) == "Abigail Chen waters the plants by the door."
  assert _second_ask(model).endswith(
      "The answer was a data record, not a sentence. Write what Abigail Chen "
      "does now.")


def test_a_data_record_after_a_copy_is_no_action_and_a_failure():
  copy = "Abigail lights one cigarette after another, right there at her table."
  model = _acting([copy, RECORD[:60]])  # Cut off by the length limit too.
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="ordinary")
  agent.observe(CARLOS_SMOKES)
  assert _act(agent) == f"Abigail Chen {obs.NO_DEED}"
  failure = _act_failure(agent)
  assert failure["error"] == ("wrote a data record, not a sentence, when "
                              "asked once more")


@pytest.mark.parametrize("text,data", [
    (RECORD, True), ('  [{"action": "reads"}]', True), ('["reads"]', True),
    ("Abigail Chen reads.", False), ("{Abigail} reads", False),
    ("[Abigail Chen reads a book.]", False)])
def test_is_data_reads_a_record_not_brackets_in_prose(text, data):
  assert obs.is_data(text) is data


def test_says_nothing_reads_the_name_and_its_first_part_only():
  assert obs.says_nothing("Tom Gomez", "")
  assert obs.says_nothing("Tom Gomez", "Tom Gomez.")
  assert obs.says_nothing("Tom Gomez", "tom")
  assert not obs.says_nothing("Tom Gomez", "Tom Gomez reads.")
  assert not obs.says_nothing("Tom Gomez", "Gomez")  # A surname alone is a word.
  assert not obs.says_nothing("Tom Gomez", "Tomas waves.")


ABIGAIL_READS = obs.format_action(
    obs.Stamp(1, "09:30", 4), "Abigail Chen", "indoors",
    "Abigail Chen sits by the window with a book on community gardens.")


def test_an_action_repeating_the_agents_own_is_asked_for_once_more():
  model = _acting([
      "Abigail Chen sits by the window with a book on community gardens.",
      "Abigail Chen sits by the window with a book on community gardens."])
  agent = cs.build_agent("baseline", model, name="Abigail Chen")
  agent.observe(ABIGAIL_READS)
  # The second answer stands, the same or not: she may go on reading.
  assert _act(agent) == ("Abigail Chen sits by the window with a book on "
                         "community gardens.")
  assert _second_ask(model).endswith(
      '"Abigail Chen sits by the window with a book on community gardens." is '
      "what Abigail Chen already did. Write what Abigail Chen does now, going "
      "on from there.")
  # The second call is recorded beside the reasons (the run's summary
  # counts it): a task began, and the model was asked once more.
  assert agent.get_act_component().last_reasons == (
      "task begins", "asked once more")


def test_a_copy_after_a_repeat_is_no_action():
  model = _acting([
      "Abigail Chen sits by the window with a book on community gardens.",
      "Abigail lights one cigarette after another, right there at her table."])
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="ordinary")
  agent.observe(f"{CARLOS_SMOKES} {ABIGAIL_READS}")  # One slot's actions.
  assert _act(agent) == f"Abigail Chen {structured_act.NO_OWN_ACTION}"
  failure = _act_failure(agent)
  assert "(Carlos Gomez's)" in failure["error"]


def test_a_new_action_is_asked_for_once():
  model = _acting(["Abigail Chen closes her book and orders a second coffee."])
  agent = cs.build_agent("baseline", model, name="Abigail Chen")
  agent.observe(ABIGAIL_READS)
  assert _act(agent) == ("Abigail Chen closes her book and orders a second "
                         "coffee.")
  assert len([c for c in model.calls if c.tag == "act"]) == 1


@pytest.mark.parametrize("answer", [
    "Abigail Chen reads a book.",  # Carlos reads a book too: few words.
    "Abigail Chen asks Carlos Gomez to smoke outside, on the terrace."])
def test_short_or_own_actions_are_not_copies(answer):
  model = _acting([answer])
  agent = cs.build_agent("baseline", model, name="Abigail Chen")
  agent.observe(CARLOS_SMOKES)
  agent.observe(obs.format_action(obs.Stamp(1, "09:40", 5), "Carlos Gomez",
                                  "indoors", "Carlos Gomez reads a book."))
  assert _act(agent) == answer
  assert len([c for c in model.calls if c.tag == "act"]) == 1


PLACE_CALL = ("It is 10:00. Abigail Chen is at the cafe (the Copper Kettle's "
              "warm indoor room). What does Abigail Chen do next?")


def _act_at_the_cafe(agent):
  from concordia.typing import entity as entity_lib  # pylint: disable=import-outside-toplevel
  return agent.act(entity_lib.ActionSpec(
      call_to_action=PLACE_CALL, output_type=entity_lib.OutputType.FREE,
      tag="action"))


def test_the_agents_given_words_are_not_a_copy():
  """Where it is, in the words its prompt gives it, is the agent's own to
  write, whoever in view wrote them too."""
  answer = "Abigail Chen walks into the Copper Kettle's warm indoor room."
  model = _acting([answer])
  agent = cs.build_agent("baseline", model, name="Abigail Chen")
  agent.observe(obs.format_action(
      obs.Stamp(1, "09:40", 5), "Carlos Gomez", "indoors",
      "Carlos Gomez arrives at the Copper Kettle's warm indoor room."))
  assert _act_at_the_cafe(agent) == answer
  assert len([c for c in model.calls if c.tag == "act"]) == 1


def test_a_copy_is_a_copy_around_the_agents_given_words():
  answer = ("Abigail Chen lights one cigarette after another right there in "
            "the Copper Kettle's warm indoor room.")
  model = _acting([answer, "Abigail Chen opens her laptop."])
  agent = cs.build_agent("baseline", model, name="Abigail Chen")
  agent.observe(obs.format_action(
      obs.Stamp(1, "09:40", 5), "Carlos Gomez", "indoors",
      "Carlos Gomez lights one cigarette after another right there in the "
      "Copper Kettle's warm indoor room."))
  assert _act_at_the_cafe(agent) == "Abigail Chen opens her laptop."
  assert len([c for c in model.calls if c.tag == "act"]) == 2


def test_given_stretches_are_taken_out_of_both_texts():
  given = "Tom's task now: goes to the Copper Kettle's warm indoor room."
  other = "Ann arrives at the Copper Kettle's warm indoor room."
  mine = "Tom goes to the Copper Kettle's warm indoor room."
  kwargs = dict(names=["Tom", "Ann"], ratio=0.6, run=6, min_words=5)
  assert repetition.copied_from(mine, [other], **kwargs) == other
  assert repetition.copied_from(mine, [other], given=given, **kwargs) is None
  # Two given words in a row are not a stretch: "the table" stays a word of
  # the copy.
  copy = "Tom lights a cigarette and puts his lighter on the table."
  assert repetition.copied_from(
      copy, ["Ann lights a cigarette and puts her lighter on the table."],
      given="Tom sits at the table.", **kwargs) is not None


def test_a_conversation_turn_sees_persona_and_norms_not_events_or_plan():
  from concordia.typing import entity as entity_lib  # pylint: disable=import-outside-toplevel
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="entrepreneur", persona="A volunteer.")
  agent.observe(CARLOS_SMOKES)
  for tag in ("action", obs.SPEECH_TAG):
    agent.act(entity_lib.ActionSpec(call_to_action="What now?",
                                    output_type=entity_lib.OutputType.FREE,
                                    tag=tag))
  action, speech = [c.prompt for c in model.calls
                    if c.tag in ("act", "Talk")]
  for prompt in (action, speech):
    assert "A volunteer." in prompt and "No smoking indoors." in prompt
  assert "lights one cigarette" in action and "Plan for today" in action
  assert "lights one cigarette" not in speech and "Plan for today" not in speech


def test_an_action_made_of_the_other_sides_words_is_asked_for_again():
  model = _acting(["Carlos Gomez says smoking isn't allowed inside, please go "
                   "outside, to everyone.",
                   "Carlos Gomez takes his cigarette out to the terrace."])
  agent = cs.build_agent("baseline", model)  # Carlos Gomez.
  agent.observe(TALK)
  assert _act(agent) == "Carlos Gomez takes his cigarette out to the terrace."
  second = [c.prompt for c in model.calls if c.tag == "act"][1]
  assert ("\"Smoking isn't allowed inside, please go outside.\" is what "
          "Abigail Chen said, not Carlos Gomez.") in second


def test_an_agent_without_an_action_is_not_judged():
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="entrepreneur")
  agent.observe(obs.format_action(
      obs.Stamp(1, "09:30", 4), "Carlos Gomez", "indoors",
      f"Carlos Gomez {structured_act.NO_OWN_ACTION}"))
  assert not [c for c in model.calls if c.tag == "DetectConflict"]
  assert "conflict" not in [r["kind"] for r in journal(agent).drain_records()]


def test_an_answer_cut_at_the_length_limit_keeps_its_whole_sentences():
  cut = "Tom sits down. He opens his book and " + "reads " * 40
  assert _act_answer.whole_sentences(cut, limit=len(cut.strip())) == (
      "Tom sits down.")
  assert _act_answer.whole_sentences("Tom sits down.") == "Tom sits down."
  long_word = "a" * 300  # No sentence end: kept as it is.
  assert _act_answer.whole_sentences(long_word, limit=300) == long_word


def test_the_act_and_reflect_name_an_action_s_actor_and_place_once():
  from crsec_concordia.components.recent_events import brief  # pylint: disable=import-outside-toplevel
  seen = "\n".join([
      obs.format_action(S, "Tom Gomez", "indoors", "Tom Gomez reads."),
      obs.format_action(S, "Ana Diaz", "terrace", "She waves at Tom.")])
  assert brief(seen) == ("Day 1 09:10, indoors:\nTom Gomez reads.\n"
                         "Day 1 09:10, terrace:\nAna Diaz: She waves at Tom.\n")
  # A name that only begins another word is no repeated name.
  assert obs.action_line("Tom", "indoors", "Tomas sits.") == (
      "Tom (indoors): Tomas sits.")
  model = cs.cafe_model()
  agent = cs.build_agent("normative", model, name="Abigail Chen",
                         role="entrepreneur", reflect_every=1)
  agent.observe(obs.format_action(S, "Tom Gomez", "indoors",
                                  "Tom Gomez lights a cigarette."))
  [reflect] = [c for c in model.calls if c.tag == "Reflect"]
  assert "\nindoors:\n1. Tom Gomez lights a cigarette.\n" in reflect.prompt


def test_reflect_says_a_place_once_for_each_run_of_actions_there():
  from crsec_concordia.operations.reflect import seen_list  # pylint: disable=import-outside-toplevel
  seen = [obs.action_line("Ana Diaz", "indoors", "Ana Diaz sings."),
          obs.action_line("Bo Li", "indoors", "He shouts."),
          obs.action_line("Cy Ng", "terrace", "Cy Ng smokes."),
          "Dee Roe (indoors): Dee Roe hums.",  # A checkpoint's older form.
          "a line of free text"]
  assert seen_list(seen) == (
      "indoors:\n1. Ana Diaz sings.\n2. Bo Li: He shouts.\n"
      "terrace:\n3. Cy Ng smokes.\n"
      "indoors:\n4. Dee Roe: Dee Roe hums.\n5. a line of free text")

"""No prompt carries a venue: every operation, the act and the referee, in two.

The 1.5B model copies examples. With "No smoking indoors." and "People
usually tip after meals." shown as examples of the two norm types, the
entrepreneurs of a venue of a different kind created exactly those norms,
and the belief metric measured the prompt, not the society. So every prompt
an agent or the referee can send is built here from two scenarios of
different kinds (the mini café and the community garden), captured from the
ScriptedModel and checked:

- no word distinctive of the other venue appears in it at all;
- the words the prompt adds to what the scenario supplied to that call (its
  template) include no word distinctive of either venue, no word of either
  venue's behaviour descriptions, and no target norm of either venue is in
  the prompt unless an input carried it.

Operations are called directly and the act through an agent built from its
prefab; the referee through its prompt functions (not the engine, whose
classes are being rewritten).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import html
import json
import re
import zlib

import numpy as np
import pytest
from concordia.associative_memory import basic_associative_memory
from concordia.typing import entity as entity_lib

from crsec_concordia import observations as obs
from crsec_concordia import operations as ops
from crsec_concordia.game_masters import action_spec as action_spec_lib
from crsec_concordia.game_masters import utterances
from crsec_concordia.game_masters.prefab import short_place
from crsec_concordia.game_masters.referee import doer_check, general_call
from crsec_concordia.game_masters.referee import occasion_check
from crsec_concordia.models import ScriptedModel
from crsec_concordia.norms import PersonalNorm
from crsec_concordia.prefabs import PREFABS
from crsec_concordia.scenarios import Scenario, load_scenario
from tests import crsec_script as cs

CAFE, GARDEN = "hobbs_cafe_mini", "community_garden"
OTHER = {CAFE: GARDEN, GARDEN: CAFE}
# Words that give a venue away: its norms' topics, objects and places.
DISTINCTIVE = {
    CAFE: {"café", "cafe", "coffee", "breakfast", "terrace", "server", "bill",
           "tip", "tips", "tipped", "tipping", "meals", "smoke", "smokes",
           "smoking", "smoker", "cigarette", "cigarettes", "loud", "loudly",
           "quiet", "noise", "noisy", "voice", "voices"},
    GARDEN: {"garden", "gardens", "gardener", "gardeners", "gardening", "tool",
             "tools", "shed", "spade", "hoe", "trowel", "plot", "plots",
             "harvest", "crop", "crops", "surplus", "produce", "vegetables",
             "fruit", "path", "neighbours", "weeds", "pick", "picks",
             "picked", "picking"},
}
# Words of behaviour descriptions that any template may use: function words,
# everyday verbs, and the referee's place field (indoors or outdoors), which
# is the same for every venue.
GENERIC = {
    "after", "another", "back", "down", "from", "instead", "little", "other",
    "some", "their", "them", "themselves", "this", "when", "without",
    "adds", "adding", "gives", "going", "keeps", "makes", "offers", "puts",
    "putting", "takes", "using", "indoors", "inside", "outside",
}
# What the scripted model answers: texts of no venue, so that whatever of a
# venue a later prompt holds came from the scenario or the template.
NORMS = ["Rule one applies to everyone.", "Rule two applies to everyone.",
         "Rule three applies to everyone."]
SPOKEN = ["Please keep to rule one.", "All right, I will."]


def words(text: str) -> set[str]:
  return set(re.findall(r"[^\W\d_]+", text.lower()))


def behaviour_words(scenario: Scenario) -> set[str]:
  return {w for b in scenario.behaviours for w in words(b.description)
          if len(w) >= 4} - GENERIC


def target_texts(scenario: Scenario) -> list[str]:
  return [t.text.lower().rstrip(".") for t in scenario.target_norms]


@dataclasses.dataclass
class Prompt:
  label: str
  text: str
  supplied: tuple[str, ...]  # What the scenario gave this call.
  tag: str


class Capture:
  """Every prompt sent while a labelled step runs, with that step's inputs."""

  def __init__(self, model: ScriptedModel):
    self.model = model
    self.prompts: list[Prompt] = []

  def run(self, label: str, supplied, step, calls_model: bool = True) -> None:
    start = len(self.model.calls)
    step()
    calls = self.model.calls[start:]
    assert calls or not calls_model, f"{label}: no model call was made"
    self.prompts += [Prompt(label, c.prompt, tuple(supplied), c.tag)
                     for c in calls]


def scripted_model(scenario: Scenario) -> tuple[ScriptedModel, list[str]]:
  """Answers of no venue for every operation, the act and the referee.

  The act answers with what is put in the returned list, once, if anything:
  another agent's action, to make the act ask again.
  """
  copies: list[str] = []

  def act(prompt: str) -> dict:
    name = re.search(r"Reply as (.+?), in character", prompt)[1]
    if copies:  # One step asks for a copy of another agent's action.
      return {"answer": copies.pop()}
    return {"answer": f"{name} carries on with the plan."}

  model = ScriptedModel([
      (cs.CREATE, lambda p, s: {"norms": [
          {"content": NORMS[i % 3], "type": "injunctive", "utility": 60}
          for i in range(s["properties"]["norms"]["minItems"])]}),
      (cs.DETECT, cs.each({"evidence": "none", "verdict": "unrelated"})),
      (cs.DOER, {"who": "nobody"}),
      (cs.TALK, {"talk": True}),
      (cs.IDENTIFY, {"rule": NORMS[0], "is_rule": True, "type": "injunctive",
                     "utility": 60}),
      (cs.REFLECT, {"thoughts": ["Everyone here keeps to rule one."]}),
      (cs.EVALUATE, {"supported": True, "type": "injunctive", "utility": 60}),
      (cs.PAIR, {"same_meaning": False, "opposite": False}),
      (cs.CLASSIFY, {"themes": [{"theme": "rules", "norms": [1, 2]}]}),
      (cs.SYNTHESIZE, lambda p, s: {
          "content": "Rules apply to everyone.", "type": "injunctive",
          "weights": [1] * s["properties"]["weights"]["minItems"]}),
      (cs.PLAN, cs.plan_answer(cs.halves("carry on with the day",
                                         "carry on after a break"),
                               norms_observed=())),
      (cs.DECOMPOSE, cs.tasks_of(60)),
      (cs.ACT, act),
      # The occasion check and the second look first: the referee's
      # prompts open alike.
      (r"Which of these does", {"evidence": "none", "behaviour": "none"}),
      (cs.LOOK, cs.look_none),
      (r"You are the referee", lambda p, s: {
          "narration": "Someone carries on.", "place": "indoors",
          "evidence": "none", "behaviour": s["properties"]["also"]["enum"][-1],
          "also": s["properties"]["also"]["enum"][-1]}),
  ])
  return model, copies


class FixedEmbedder:
  """Any two different texts related (cosine 0.6) but no duplicate: both
  evaluation calls run. A text's vector shares one axis with every other's
  and has one of its own, picked by a hash of the text."""

  def __call__(self, text: str) -> np.ndarray:
    vector = np.zeros(1 + 4096, dtype=np.float32)
    vector[0] = np.sqrt(0.6)
    vector[1 + zlib.crc32(text.encode()) % 4096] = np.sqrt(0.4)
    return vector


def norm(i: int, **fields) -> PersonalNorm:
  return PersonalNorm(id=f"n{i}", content=NORMS[i % 3], utility=60,
                      type="injunctive", **fields)


@dataclasses.dataclass
class Venue:
  """One scenario's inputs, as the runner would hand them to each part."""
  s: Scenario
  model: ScriptedModel
  copies: list[str]
  cap: Capture

  def __post_init__(self):
    s = self.s
    self.entre = s.entrepreneurs[0]
    self.other, self.witness = [a for a in s.agents if not a.is_entrepreneur][:2]
    # A deed the scenario names: the first target norm broken.
    violated = s.behaviour(s.target_norms[0].violates[0]).description
    self.deed = f"{self.other.name} {violated}."
    self.stamp = s.stamp_for(2)
    self.place = short_place(s.setting)
    self.seen = obs.format_action(self.stamp, self.other.name, "indoors",
                                  self.deed)
    self.talk = obs.format_conversation(
        self.stamp, self.entre.name, self.other.name, "rule one",
        [(self.entre.name, SPOKEN[0]), (self.other.name, SPOKEN[1])])
    # As the game master holds them (text_for fills in the actor).
    self.occasions = s.occasions
    self.names = (*s.agent_names,)

  def ask(self, actor: str, situation: str = "", question: str = "") -> str:
    """The game master's question for one slot (action_spec.py)."""
    return action_spec_lib.DEFAULT_CALL_TO_ACTION.format(
        time=self.stamp.time, place=self.place, actor=actor, where="",
        situation=f"{situation} " if situation else "",
        question=question or action_spec_lib.DEFAULT_QUESTION.format(actor=actor))


def capture_operations(v: Venue) -> None:
  s, model, run, fail = v.s, v.model, v.cap.run, None
  entre, other, witness, deed, talk = v.entre, v.other, v.witness, v.deed, v.talk
  run("CreateNorm", (*v.names, entre.persona, s.setting), lambda: ops.create_norm(
      model, name=entre.name, persona=entre.persona, setting=s.setting,
      count=s.crsec.initial_norm_count, on_failure=fail))
  run("DecideToTalk", (*v.names, witness.persona, deed), lambda: ops.decide_to_talk(
      model, name=witness.name, persona=witness.persona, actor=other.name,
      behaviour=deed, norm=NORMS[0], on_failure=fail))
  run("DetectConflict", (*v.names, deed), lambda: ops.detect_conflicts(
      model, observer=entre.name, on_failure=fail,
      items=[ops.Observed(other.name, deed, "indoors", norm(0))]))
  run("IdentifyNorm (conversation)", (*v.names, talk), lambda: ops.identify_norm(
      model, name=other.name, source_kind="conversation", source_text=talk,
      on_failure=fail))
  run("IdentifyNorm (thoughts)", v.names, lambda: ops.identify_norm(
      model, name=other.name, source_kind="thoughts",
      source_text="Everyone here keeps to rule one.", on_failure=fail))
  run("Reflect", (*v.names, other.persona, deed), lambda: ops.reflect(
      model, name=other.name, persona=other.persona, observations=[deed],
      on_failure=fail))
  run("ImmediateEvaluation", (*v.names, other.persona, talk),
      lambda: ops.immediate_evaluation(
          model, FixedEmbedder(), name=other.name, persona=other.persona,
          candidate=norm(0, source_text=talk), held=[norm(1)],
          known_names=list(v.names), on_failure=fail))
  run("ClassifySpecificNorms", v.names, lambda: ops.classify_specific_norms(
      model, name=entre.name, norms=[norm(i) for i in range(3)],
      on_failure=fail))
  run("SynthesizeNorm", v.names, lambda: ops.synthesize_norm(
      model, theme="rules", norms=[norm(0), norm(1)], on_failure=fail))
  run("NormativePlan", (*v.names, entre.persona, entre.goal or "", s.setting),
      lambda: ops.normative_plan(
          model, name=entre.name, persona=entre.persona, goal=entre.goal or "",
          setting=s.setting, day=1, start=s.clock.start, end=s.clock.end,
          norms=[norm(0)], on_failure=fail))
  day = [{"start": s.clock.start, "end": s.clock.end,
          "activity": "carry on with the day"}]
  run("DecomposePlan", (*v.names, entre.persona, entre.goal or "", s.setting),
      lambda: ops.decompose_plan(
          model, name=entre.name, persona=entre.persona, goal=entre.goal or "",
          setting=s.setting, norms=[norm(0)], plan=day, block=day[0],
          on_failure=fail))


def capture_acts(v: Venue, arm: str, agent) -> None:
  """An agent built from its prefab observes, acts, answers and speaks."""
  s = v.s
  entity = cs.build_agent(arm, v.model, **s.entity_params(agent.name),
                          day_start=s.clock.start, day_end=s.clock.end)
  own = (*v.names, agent.persona, agent.goal or "", s.setting, v.place,
         v.stamp.time, v.seen, v.talk, v.deed)
  label = f"{arm} {agent.role}"

  def act(call: str, tag: str = "action", anew: bool = False):
    def acting():
      if anew:  # Forget the current action: the plan-driven act decides anew.
        entity.get_act_component().set_state({})
      return entity.act(entity_lib.ActionSpec(
          call_to_action=call, output_type=entity_lib.OutputType.FREE,
          tag=tag))
    return acting

  v.cap.run(f"{label}: observe", own, lambda: entity.observe(
      "\n".join([obs.format_clock(v.stamp), v.seen, v.talk])),
      calls_model=arm == "normative")
  v.cap.run(f"{label}: act", own, act(v.ask(agent.name)))
  for occasion in v.occasions:
    text, question = occasion.text_for(agent.name), occasion.question_for(agent.name)
    v.cap.run(f"{label}: act on {occasion.id}", (*own, text, question),
              act(v.ask(agent.name, text, question), tag="occasion"))
  if agent is v.entre:
    v.copies.append(v.deed)  # The act asks again, naming the copy.
    v.cap.run(f"{label}: act after a copy", own,
              act(v.ask(agent.name), anew=True))
  for turns in ([], [(v.entre.name, SPOKEN[0])]):
    call = utterances.turn_call_to_action(
        stamp=v.stamp, place=v.place, initiator=v.entre.name,
        partner=v.other.name, topic=utterances.topic_of(NORMS[0]),
        speaker=agent.name, turns=turns, norm=NORMS[0], behaviour=v.deed)
    v.cap.run(f"{label}: speech, turn {len(turns) + 1}", own,
              act(call, obs.SPEECH_TAG))


def capture_referee(v: Venue) -> None:
  s, model, actor, deed = v.s, v.model, v.other.name, v.deed
  behaviours = [b.model_dump(mode="json") for b in s.behaviours]
  ids = [b["id"] for b in behaviours]
  given = (*v.names, s.setting, deed, *ids,
           *(b["description"] for b in behaviours))

  def adjudicate(situation: str = ""):
    return lambda: model.sample_json(
        general_call.adjudication_prompt(
            place=s.setting, behaviours=behaviours, actor=actor, action=deed,
            situation=situation),
        general_call.adjudication_schema(ids))

  v.cap.run("referee", given, adjudicate())
  v.cap.run("doer check", given, lambda: doer_check.check_doers(
      model, actor, deed, ids, {b["id"]: b["description"] for b in behaviours}))
  for occasion in v.occasions:
    text = occasion.text_for(actor)
    v.cap.run(f"referee on {occasion.id}", (*given, text), adjudicate(text))
    wanted = [b for b in behaviours if b["id"] in occasion.behaviours]
    v.cap.run(f"occasion check on {occasion.id}", (*given, text),
              lambda: occasion_check.check_occasion(
                  model, place=s.setting, situation=text, actor=actor,
                  action=deed, behaviours=wanted, similarity=lambda a, b: 1.0))


def capture_venue(name: str) -> list[Prompt]:
  """Every prompt of one venue: each operation, the act, the referee."""
  s = load_scenario(name)
  model, copies = scripted_model(s)
  v = Venue(s, model, copies, Capture(model))
  capture_operations(v)
  for arm in ("normative", "baseline"):
    for agent in (v.entre, v.other):
      capture_acts(v, arm, agent)
  capture_referee(v)
  return v.cap.prompts


@pytest.fixture(scope="module")
def prompts() -> dict[str, list[Prompt]]:
  return {venue: capture_venue(venue) for venue in (CAFE, GARDEN)}


@functools.cache
def venue(name: str) -> Scenario:
  return load_scenario(name)


def leaks(prompt: Prompt, home: str) -> list[str]:
  """What in `prompt` (built from scenario `home`) is not the venue's own."""
  found = []
  stray = words(prompt.text) & DISTINCTIVE[OTHER[home]]
  if stray:
    found.append(f"words of {OTHER[home]}: {sorted(stray)}")
  template = words(prompt.text) - words(" ".join(prompt.supplied))
  venues = [venue(CAFE), venue(GARDEN)]
  forbidden = set().union(*DISTINCTIVE.values(),
                          *(behaviour_words(v) for v in venues))
  if added := template & forbidden:
    found.append(f"the template adds venue words: {sorted(added)}")
  supplied = " ".join(prompt.supplied).lower()
  text = prompt.text.lower()
  for v in venues:
    found += [f"target norm of {v.name}: {t!r}" for t in target_texts(v)
              if t in text and t not in supplied]
  return found


# -- the checks -----------------------------------------------------------------


def test_the_two_venues_share_no_distinctive_word():
  # Otherwise "no word of the other venue" would test the scenario files.
  for name in (CAFE, GARDEN):
    text = json.dumps(venue(name).to_dict(), ensure_ascii=False)
    assert not words(text) & DISTINCTIVE[OTHER[name]], name


@pytest.mark.parametrize("name", [CAFE, GARDEN])
def test_every_part_sends_prompts(prompts, name):
  labels = {p.label for p in prompts[name]}
  tags = {p.tag for p in prompts[name]}
  occasion = venue(name).occasions[0].id
  for label in ("CreateNorm", "DecideToTalk", "DetectConflict", "Reflect",
                "IdentifyNorm (conversation)", "IdentifyNorm (thoughts)",
                "ImmediateEvaluation", "ClassifySpecificNorms",
                "SynthesizeNorm", "NormativePlan", "DecomposePlan", "referee",
                "doer check",
                f"referee on {occasion}", f"occasion check on {occasion}",
                "normative entrepreneur: act after a copy",
                "baseline ordinary: speech, turn 2",
                f"normative ordinary: act on {occasion}"):
    assert label in labels
  # The agents' own components called the model too.
  assert {"CreateNorm", "IdentifyNorm", "ImmediateEvaluation",
          "NormativePlan", "act"} <= tags
  evaluation = [p for p in prompts[name] if p.label == "ImmediateEvaluation"]
  assert len(evaluation) == 2  # The source and the pair prompts.
  for arm in ("normative", "baseline"):
    retried = [p for p in prompts[name]
               if p.label == f"{arm} entrepreneur: act after a copy"]
    assert len(retried) == 2  # The copy, then the request for its own.


@pytest.mark.parametrize("name", [CAFE, GARDEN])
def test_no_prompt_holds_anything_of_a_venue_it_was_not_given(prompts, name):
  problems = [f"{p.label}: {leak}" for p in prompts[name]
              for leak in leaks(p, name)]
  assert not problems, "\n".join(problems)


def test_the_check_finds_the_old_examples():
  # The norm-type help as it was: a garden's prompt with the café's norms.
  old = ("type: 'injunctive' if it says what people must do (\"No smoking "
         "indoors.\"); 'descriptive' if it says what most people usually do "
         "(\"People usually tip after meals.\").")
  found = leaks(Prompt("old", old, (), "x"), GARDEN)
  assert any("words of hobbs_cafe_mini" in f for f in found)
  assert any("template adds" in f and "smoking" in f for f in found)
  garden_norm = Prompt("old", "For example: Return shared tools to the shed "
                       "after use.", (), "x")
  assert any("target norm of community_garden" in f
             for f in leaks(garden_norm, GARDEN))


@pytest.mark.parametrize("name", [CAFE, GARDEN])
def test_crsec_script_patterns_name_one_operation_each(prompts, name):
  patterns = {"CreateNorm": cs.CREATE, "DecideToTalk": cs.TALK,
              "DetectConflict": cs.DETECT, "Reflect": cs.REFLECT,
              "ClassifySpecificNorms": cs.CLASSIFY,
              "SynthesizeNorm": cs.SYNTHESIZE, "NormativePlan": cs.PLAN,
              "DecomposePlan": cs.DECOMPOSE}
  for p in prompts[name]:
    matching = {op for op, rx in {**patterns, "IdentifyNorm": cs.IDENTIFY,
                                  "Evaluate": cs.EVALUATE, "Pair": cs.PAIR,
                                  "act": cs.ACT, "doer": cs.DOER}.items()
                if re.search(rx, p.text, re.S | re.I)}
    if p.label in patterns:
      assert matching == {p.label}, p.label
    elif p.label.startswith(("referee", "occasion check")):
      assert not matching, p.label
    else:
      assert len(matching) == 1, (p.label, matching)


def test_an_agent_built_without_a_setting_is_of_no_venue():
  # The prefab's default setting reaches CreateNorm, the plan and the
  # instructions of every agent a user builds without one.
  model, _ = scripted_model(venue(GARDEN))
  prefab = copy.deepcopy(PREFABS["normative__Entity"])
  prefab.params = {"name": "Sam Lee", "persona": "Sam Lee keeps promises.",
                   "role": "entrepreneur"}
  agent = prefab.build(model, basic_associative_memory.AssociativeMemoryBank(
      sentence_embedder=cs.constant_embedder))
  agent.act(entity_lib.ActionSpec(call_to_action="What does Sam Lee do next?",
                                  output_type=entity_lib.OutputType.FREE))
  assert {c.tag for c in model.calls} == {"CreateNorm", "NormativePlan",
                                          "DecomposePlan", "act"}
  for call in model.calls:
    assert not words(call.prompt) & set().union(*DISTINCTIVE.values()), call.tag
    assert "Setting:" not in call.prompt and " at ." not in call.prompt


# -- what the human raters read ----------------------------------------------


def test_the_questionnaire_names_no_venue_but_the_runs_own(tmp_path):
  """The operations' descriptions on a rater's page hold no venue's word;
  the place they name is the run's own setting name."""
  from crsec_concordia.metrics.present import questionnaire  # pylint: disable=import-outside-toplevel
  from crsec_concordia.rundir import reading  # pylint: disable=import-outside-toplevel
  from tests.metrics_fixtures import RunBuilder  # pylint: disable=import-outside-toplevel
  every = set().union(*DISTINCTIVE.values())
  for op, template in questionnaire.OPERATIONS.items():
    assert not words(template) & every, op
  for name in (CAFE, GARDEN):
    scenario = venue(name)
    place = short_place(scenario.setting)
    agent = scenario.agents[0].name
    builder = RunBuilder(tmp_path / name, steps=2, scenario=scenario.to_dict())
    builder.hold(1, agent, NORMS[0], origin="created")
    run = reading.read_run(builder.write())
    assert questionnaire.place_of(run) == place
    out = questionnaire.write([run], tmp_path / f"questionnaire-{name}")
    page = (out / f"{questionnaire.slug(agent)}.html").read_text()
    for op in questionnaire.OPERATIONS:
      description = questionnaire.describe(op, place)
      assert description in page or html.escape(description) in page, op
      assert not (words(description) - words(place)) & every, op
    assert place in page
    assert not words(page) & DISTINCTIVE[OTHER[name]], name

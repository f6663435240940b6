"""RefereePolicy: which structures apply, replayed offline as the referee runs.

The probe runner records every structure's inputs so that a venue's
precision and recall under any policy is computed with no model
(crsec_concordia/calibration/policy.py). That is only worth anything if
the offline replay gives, case by case, the tags the game master's own
referee gives under the same policy; a model whose answers disagree with
one another (the oracle with its flips drawn per call) exercises every
structure that checks one answer against another.
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from crsec_concordia.calibration import policy as policy_lib
from crsec_concordia.calibration import probes, run_policy
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.game_masters import adjudication
from crsec_concordia.game_masters import prefab
from crsec_concordia.game_masters import referee as referee_lib
from crsec_concordia.metrics.classifiers import probe_run
from crsec_concordia.models import ScriptedModel
from crsec_concordia.scenarios import Behaviour, load_scenario
from tests.judgement_oracle import JudgementOracle


def test_all_on_is_every_structure_and_trusting_none():
  names = RefereePolicy.names()
  assert RefereePolicy.all_on().structures() == names
  assert RefereePolicy.trusting().structures() == ()
  assert {"spare_far_actions", "tag_floor", "deed_floor", "doer_check",
          "second_look", "look_nearest", "look_sides", "look_strict",
          "look_reverse", "occasion_gate"} == set(names)


def test_a_policy_goes_through_its_dict_and_a_bad_one_says_what_is_wrong():
  policy = dataclasses.replace(RefereePolicy.trusting(), tag_floor=True)
  assert RefereePolicy.from_dict(policy.to_dict()) == policy
  with pytest.raises(ValueError) as info:
    RefereePolicy.from_dict({"tag_floor": "yes", "gate": True})
  message = str(info.value)
  assert "unknown switch 'gate'" in message
  assert "switch 'tag_floor' is 'yes', not true or false" in message
  assert "missing switch 'doer_check'" in message
  with pytest.raises(ValueError, match="a mapping of switches"):
    RefereePolicy.from_dict(["tag_floor"])


def test_the_prefab_takes_the_policy_from_its_params():
  trusting = RefereePolicy.trusting()
  assert prefab.referee_policy(
      {"referee_policy": trusting.to_dict()}) == trusting
  assert prefab.referee_policy({}) is prefab.UNCALIBRATED_POLICY
  with pytest.raises(ValueError, match="unknown switch"):
    prefab.referee_policy({"referee_policy": {"floor": True}})


def _policies() -> list[RefereePolicy]:
  """all_on, trusting, each structure alone off and on, and a few drawn
  at random (seeded)."""
  names = RefereePolicy.names()
  out = [RefereePolicy.all_on(), RefereePolicy.trusting()]
  for name in names:
    out.append(dataclasses.replace(RefereePolicy.all_on(), **{name: False}))
  look = dataclasses.replace(RefereePolicy.trusting(), second_look=True)
  out += [look, dataclasses.replace(look, look_nearest=True),
          dataclasses.replace(look, look_nearest=True, doer_check=True)]
  draw = random.Random(7)
  out += [RefereePolicy(**{n: draw.random() < 0.5 for n in names})
          for _ in range(4)]
  return list(dict.fromkeys(out))


@pytest.fixture(scope="module")
def venue():
  """The mini café measured on an oracle whose answers disagree with one
  another at a rate of 0.3, and the oracle's settings."""
  scenario = load_scenario("hobbs_cafe_mini")
  cases = probes.load_probes(probes.probes_path(scenario), scenario)
  settings = dict(noise=0.3, seed=5, per_call=True)
  oracle = JudgementOracle(scenario, cases, **settings)
  calibration = probe_run.measure_venue(oracle.model, shared_embedder(),
                                        scenario, cases, jobs=4)
  return scenario, cases, settings, calibration


@pytest.mark.parametrize("policy", _policies(),
                         ids=lambda p: "+".join(p.structures()) or "none")
def test_the_recorded_answers_give_the_referees_tags_under_any_policy(
    venue, policy):
  scenario, cases, settings, calibration = venue
  model = JudgementOracle(scenario, cases, **settings).model
  referee = referee_lib.Referee(
      model, place=scenario.setting, default_place=scenario.default_place,
      behaviours=scenario.behaviours,
      similarity=referee_lib.similarity_of(shared_embedder()),
      policy=policy, target_norms=scenario.target_norms)
  floors, sides = calibration["floors"], calibration["sides"]
  for case, recorded in zip(cases.referee, calibration["referee"]):
    event, _ = referee.adjudicate(case.actor, case.action)
    offline, looked = policy_lib.referee_tags(recorded, policy, floors, sides)
    assert sorted(event["behaviours"]) == sorted(offline), case.action
    look = event.get("second_look") or {}
    assert looked == ([look["behaviour"]] if look.get("accepted") else [])
  occasion, = scenario.occasions
  for case, recorded in zip(cases.occasion.answers, calibration["occasion"]):
    check, _ = referee.check(occasion, case.actor, case.action)
    got = [check["behaviour"]] if check["accepted"] else []
    assert got == policy_lib.occasion_tags(recorded, policy, floors)


def test_the_disagreeing_oracle_meets_every_structure(venue):
  """The fixture is no idle one: each structure, added alone to a referee
  with none (the look's checks to one with the look, the other-side rule
  to one with the nearest rule), changes some tag. The strict rule is met
  where a proposal lies within the near tie of the nearest, which no
  answer of this oracle does: tests/test_near_tie.py replays it."""
  _, _, _, calibration = venue
  floors, sides = calibration["floors"], calibration["sides"]
  idle = []
  for name in set(RefereePolicy.names()) - {"look_strict"}:
    base = dataclasses.replace(RefereePolicy.trusting(),
                               second_look=name.startswith("look"),
                               look_nearest=name == "look_sides")
    with_it = dataclasses.replace(base, **{name: True})
    if not any(policy_lib.referee_tags(c, with_it, floors, sides)
               != policy_lib.referee_tags(c, base, floors, sides)
               for c in calibration["referee"]) and not any(
                   policy_lib.occasion_tags(c, with_it, floors)
                   != policy_lib.occasion_tags(c, base, floors)
                   for c in calibration["occasion"]):
      idle.append(name)
  assert not idle


def _calibration(referee_cases, occasion_cases=()) -> dict:
  floors = run_policy.settings(None, MINILM_THRESHOLDS).recorded()
  return {"floors": floors, "sides": {},
          "referee": list(referee_cases), "occasion": list(occasion_cases),
          "conflicts": []}


def _case(truth, given, scores, *, by_actor=None, spared=False):
  return {"truth": truth, "given": given, "scores": scores,
          "deed_scores": scores, "by_actor": by_actor or dict.fromkeys(
              given, True), "spared": spared, "look": None, "failed": False}


def test_choose_keeps_a_structure_only_where_it_helps():
  """A model whose wrong tags are far from the action: the tag floor
  helps, nothing else does, and a perfect model gets no structure."""
  wrong_far = [_case([], ["loud"], {"loud": 0.05}) for _ in range(3)]
  right = [_case(["quiet"], ["quiet"], {"quiet": 0.6}) for _ in range(5)]
  chosen = policy_lib.choose([_calibration(wrong_far + right)])
  assert chosen.structures() == ("tag_floor",)
  assert policy_lib.choose([_calibration(right)]) == RefereePolicy.trusting()
  assert policy_lib.choose([]) == RefereePolicy.trusting()
  # A floor that also drops right tags costs more than it saves.
  right_far = [_case(["quiet"], ["quiet"], {"quiet": 0.1})
               for _ in range(4)]
  assert policy_lib.choose(
      [_calibration(wrong_far + right_far)]) == RefereePolicy.trusting()


def test_evaluate_counts_a_failed_call_as_a_miss_and_said_nothing():
  failed = {**_case(["quiet"], [], {}), "failed": True}
  calibration = _calibration([failed, _case(["loud"], ["loud"],
                                            {"loud": 0.5})])
  calibration["conflicts"] = [
      {"breaks": True, "said": None, "failed": True},
      {"breaks": False, "said": True, "failed": False}]
  figures = policy_lib.evaluate(calibration, RefereePolicy.all_on())
  assert figures["referee"] == (1.0, 0.5, 2)
  assert figures["occasion"] == (1.0, 1.0, 0)
  assert figures["conflicts"] == (0.0, 0.0, 2)


def test_a_trusting_referee_records_no_structure_it_did_not_apply():
  """Under trusting() the model's quoted answer is the tag, however far
  from the behaviour, and the record carries none of the structures'
  fields (a run's corrected estimates read which applied from them)."""
  model = ScriptedModel([(r"You are the referee", {
      "narration": "Tom reads.", "place": "indoors", "behaviour": "loud",
      "also": "none", "evidence": "reads his book"})])
  component = adjudication.Adjudication(
      model, place="Hobbs Cafe", behaviours=[
          Behaviour(id="loud", description="talks loudly")],
      similarity=lambda a, b: 0.01, policy=RefereePolicy.trusting())
  event, failure = component.adjudicate("Tom Gomez",
                                        "Tom Gomez reads his book.")
  assert failure is None
  assert event["behaviours"] == ["loud"]
  for field in ("tag_floor", "tag_similarity", "tag_deed_similarity",
                "tag_doers", "second_look", "referee_asked",
                "far_from_action"):
    assert field not in event
  assert len(model.calls) == 1  # No doer check, no second look.

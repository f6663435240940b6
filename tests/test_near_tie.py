"""The nearest rule's near tie: measured from labelled gaps, applied by policy.

On a venue written fresh, the embedded model's referee lost right
second-look answers to the nearest rule on near ties. Whether the rule
spares a tie is a switch of the policy (`look_strict`, off: a proposal
within the embedder's `near_tie` of the nearest's score is as near), and
the tie itself is read on the embedder's own measured scale: its record's
`near_tie`, the cut between the labelled gaps of the venues' probes
(similarity_calibration.tie_of_gaps), so the same ties on a rescaled embedder,
with its rescaled record, are ties too.
"""

from __future__ import annotations

import dataclasses

import pytest

from crsec_concordia.calibration import policy as policy_lib
from crsec_concordia.calibration import run_policy
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.embedding.records import SimilarityThresholds
from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.game_masters import adjudication
from crsec_concordia.game_masters import referee as referee_lib
from crsec_concordia.metrics.classifiers import similarity_calibration
from crsec_concordia.scenarios import Behaviour
from crsec_concordia.models import ScriptedModel
from tests.test_second_look import (ACTION, BEHAVIOURS, LOOK, _general,
                                    _similarity)

TIE = MINILM_THRESHOLDS.near_tie
NEAREST = 0.519
# (the nearest's score, the right answer's): within the tie, and past it.
WITHIN = (NEAREST, NEAREST - TIE / 2)
PAST = (NEAREST, NEAREST - TIE * 2)
LENIENT = dataclasses.replace(RefereePolicy.all_on(), look_strict=False)


def _rescaled(record, a: float, b: float):
  """The record of an embedder whose cosines are a + b * MiniLM's."""
  def up(x):
    return a + b * x
  return dataclasses.replace(
      record, tag=up(record.tag), spare_far=up(record.spare_far),
      look=up(record.look), occasion=up(record.occasion),
      near_tie=b * record.near_tie)


def _looked(scores, floors, policy=LENIENT):
  model = ScriptedModel([
      (LOOK, {"behaviour": "left_tools_out", "evidence": ACTION}),
      (r"who leaves", {"who": "Ruth Okafor"}),
      (r"You are the referee", _general())])
  referee = adjudication.Adjudication(
      model.tagged(referee_lib.ADJUDICATE_TAG), place="a community garden",
      behaviours=[Behaviour(**b) for b in BEHAVIOURS],
      similarity=_similarity(scores), floors=floors, policy=policy)
  event, failure = referee.adjudicate("Ruth Okafor", ACTION)
  assert failure is None
  return event


def _pair(nearest, right):
  return {"returned_tools": nearest, "left_tools_out": right}


def test_a_right_answer_within_the_tie_is_spared_unless_the_rule_is_strict():
  assert TIE > 0
  event = _looked(_pair(*WITHIN), MINILM_THRESHOLDS)
  assert event["behaviours"] == ["left_tools_out"]
  assert event["second_look"]["accepted"]
  strict = _looked(_pair(*WITHIN), MINILM_THRESHOLDS, RefereePolicy.all_on())
  assert strict["behaviours"] == []
  assert strict["second_look"]["why"] == "not the behaviour nearest the action"
  past = _looked(_pair(*PAST), MINILM_THRESHOLDS)
  assert past["behaviours"] == []


def test_the_tie_is_read_on_the_embedders_own_scale():
  a, b = 0.6, 0.4  # Every cosine squeezed into 0.6-1.0.
  nearest, right = WITHIN
  event = _looked(_pair(a + b * nearest, a + b * right),
                  _rescaled(MINILM_THRESHOLDS, a, b))
  assert event["behaviours"] == ["left_tools_out"]
  # The same gap is far apart for an embedder whose scale is wider.
  wide = _looked(_pair(nearest + (nearest - right) * 9, right),
                 MINILM_THRESHOLDS)
  assert wide["behaviours"] == []
  assert wide["second_look"]["why"] == "not the behaviour nearest the action"


def test_an_unmeasured_embedders_nearest_rule_refuses_nothing():
  event = _looked(_pair(0.9, 0.2),
                  SimilarityThresholds.unmeasured("nobody-measured"))
  assert event["behaviours"] == ["left_tools_out"]


def test_the_tie_is_the_cut_between_the_labelled_gaps():
  """Gaps a tie should spare (a right answer behind) below the cut, those
  it should not (a wrong one behind) at or above it, the widest margin."""
  gaps = [-0.01, -0.02, 0.05, 0.08, -0.2]
  assert similarity_calibration.tie_of_gaps(gaps) == pytest.approx(0.035)
  assert similarity_calibration.tie_of_gaps([0.05, 0.1]) == 0.0
  assert similarity_calibration.tie_of_gaps([-0.05]) == 0.0
  # It scales with the gaps.
  assert similarity_calibration.tie_of_gaps([g * 0.4 for g in gaps]) == (
      pytest.approx(0.035 * 0.4, abs=1e-4))


def test_minilms_record_holds_the_tie_its_labelled_gaps_give(embedder):
  gaps = similarity_calibration.tie_gaps(embedder, MINILM_THRESHOLDS)
  assert len(gaps) > 50 and any(g < 0 for g in gaps)
  assert MINILM_THRESHOLDS.near_tie == pytest.approx(
      similarity_calibration.tie_of_gaps(gaps), abs=1e-4)


def test_the_replay_of_a_recorded_look_spares_the_same_tie():
  """The offline replay (calibration/policy.py) decides the recorded look
  as the referee above did, with the tie the calibration keeps."""
  floors = run_policy.settings(None, MINILM_THRESHOLDS).recorded()
  for (nearest, right), spared in ((WITHIN, True), (PAST, False)):
    look = {"candidates": {"returned_tools": nearest,
                           "left_tools_out": right},
            "nearest": "returned_tools", "behaviour": "left_tools_out",
            "quoted": True, "reversed": "left_tools_out", "by_actor": True}
    case = {"truth": ["left_tools_out"], "given": [], "spared": False,
            "failed": False, "look": look}
    for policy in (LENIENT, RefereePolicy.all_on()):
      tags, _ = policy_lib.referee_tags(case, policy, floors)
      live = _looked(_pair(nearest, right), MINILM_THRESHOLDS, policy)
      assert tags == live["behaviours"]
      assert tags == (["left_tools_out"] if spared and policy is LENIENT
                      else [])

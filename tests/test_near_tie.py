"""The nearest rule never refuses a right answer on a near tie.

On a venue written fresh (no labelled cases), the embedded model's
referee under its default policy (every structure) lost two right
second-look answers to the nearest rule on near ties: 0.484 against 0.519,
and 0.670 against 0.683. A tie is read on the embedder's own measured
scale (its record's `near_tie`, measured from the spread of its probe
cosines), not as a constant: the same ties on a rescaled embedder, with
its rescaled record, are ties too.
"""

from __future__ import annotations

import dataclasses

import pytest

from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.game_masters import adjudication
from crsec_concordia.game_masters import referee as referee_lib
from crsec_concordia.scenarios import Behaviour
from crsec_concordia.models import ScriptedModel
from tests.test_second_look import (ACTION, BEHAVIOURS, LOOK, _general,
                                    _similarity)

TIES = [(0.519, 0.484), (0.683, 0.670)]  # (the nearest, the right answer)


def _rescaled(record, a: float, b: float):
  """The record of an embedder whose cosines are a + b * MiniLM's."""
  def up(x):
    return a + b * x
  return dataclasses.replace(
      record, tag=up(record.tag), spare_far=up(record.spare_far),
      look=up(record.look), occasion=up(record.occasion),
      near_tie=b * record.near_tie)


def _looked(scores, floors):
  model = ScriptedModel([
      (LOOK, {"behaviour": "left_tools_out", "evidence": ACTION}),
      (r"who leaves", {"who": "Ruth Okafor"}),
      (r"You are the referee", _general())])
  referee = adjudication.Adjudication(
      model.tagged(referee_lib.ADJUDICATE_TAG), place="a community garden",
      behaviours=[Behaviour(**b) for b in BEHAVIOURS],
      similarity=_similarity(scores), floors=floors)
  event, failure = referee.adjudicate("Ruth Okafor", ACTION)
  assert failure is None
  return event


@pytest.mark.parametrize("nearest,right", TIES)
def test_a_right_answer_on_a_near_tie_is_not_refused(nearest, right):
  event = _looked({"returned_tools": nearest, "left_tools_out": right},
                  MINILM_THRESHOLDS)
  assert event["behaviours"] == ["left_tools_out"]
  assert event["second_look"]["accepted"]


@pytest.mark.parametrize("nearest,right", TIES)
def test_the_tie_is_read_on_the_embedders_own_scale(nearest, right):
  a, b = 0.6, 0.4  # Every cosine squeezed into 0.6-1.0.
  event = _looked({"returned_tools": a + b * nearest,
                   "left_tools_out": a + b * right},
                  _rescaled(MINILM_THRESHOLDS, a, b))
  assert event["behaviours"] == ["left_tools_out"]
  # The same gap is far apart for an embedder whose scale is wider.
  wide = _looked({"returned_tools": nearest + (nearest - right) * 9,
                  "left_tools_out": right}, MINILM_THRESHOLDS)
  assert wide["behaviours"] == []
  assert wide["second_look"]["why"] == "not the behaviour nearest the action"


def test_an_unmeasured_embedders_nearest_rule_refuses_nothing():
  from crsec_concordia.embedding.records import SimilarityThresholds
  event = _looked({"returned_tools": 0.9, "left_tools_out": 0.2},
                  SimilarityThresholds.unmeasured("nobody-measured"))
  assert event["behaviours"] == ["left_tools_out"]

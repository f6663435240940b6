"""The doer check (game_masters/referee/doer_check.py): a tag counts only if
the actor is the one who does the behaviour."""

from __future__ import annotations

import re

import pytest

from crsec_concordia.game_masters import adjudication
from crsec_concordia.game_masters import referee as referee_lib
from crsec_concordia.game_masters.referee import doer_check
from crsec_concordia.models import ScriptedModel
from crsec_concordia.scenarios import Behaviour
from tests import crsec_script

# The second look (second_look.py) finds nothing here.
LOOK_RULE = (crsec_script.LOOK, crsec_script.look_none)

BEHAVIOURS = [{"id": "smoking_indoors",
               "description": "smokes or lights a cigarette inside"},
              {"id": "loud", "description": "shouts or talks loudly"}]


def _referee(ids):
  def answer(prompt):
    action = re.search(r'^[^:\n]+: "(.*)"$', prompt, re.M)[1]
    named = [*ids, "none", "none"]
    return {"narration": action, "place": "indoors", "evidence": action,
            "behaviour": named[0], "also": named[1]}
  return answer


def _adjudication(model):
  # A similarity that keeps every tag: the doer check alone decides here.
  return adjudication.Adjudication(model.tagged(referee_lib.ADJUDICATE_TAG),
                                   place="a small café",
                                   behaviours=[Behaviour(**b) for b in BEHAVIOURS],
                                   similarity=lambda a, b: 0.9)


@pytest.mark.parametrize("who, kept", [
    ("Tom Gomez", True), ("Tom", True), ("tom gomez.", True),
    ("Carlos Gomez", False), ("Gomez", False), ("nobody", False),
    ("someone", False), ("Tomas", False)])
def test_an_answer_names_the_actor_by_full_or_first_name(who, kept):
  assert doer_check.names_actor(who, "Tom Gomez") is kept


def test_a_tag_whose_doer_is_someone_else_is_kept_apart_with_the_answer():
  """'Tom tells Carlos he cannot stand the smell of smoke': tagged as
  smoking by the referee, the smoker named is Carlos; Tom's shout stands."""
  action = ("Tom Gomez shouts across the room and tells Carlos Gomez he "
            "cannot stand the smell of cigarette smoke.")
  model = ScriptedModel([
      (r"who smokes", {"who": "Carlos Gomez"}),
      (r"who shouts", {"who": "Tom Gomez"}),
      LOOK_RULE, (r"You are the referee", _referee(["smoking_indoors", "loud"]))])
  event, failure = _adjudication(model).adjudicate("Tom Gomez", action)
  assert failure is None
  assert event["behaviours"] == ["loud"]
  assert event["not_by_actor"] == ["smoking_indoors"]
  assert event["tag_doers"] == {"smoking_indoors": "Carlos Gomez",
                                "loud": "Tom Gomez"}
  assert model.calls_by_tag() == {"GM.adjudicate": 1, "GM.doer": 2}
  # Each question names one behaviour by its description, and the action.
  asked = [c.prompt for c in model.calls if c.tag == "GM.doer"]
  assert all(action in p for p in asked)
  assert "who smokes or lights a cigarette inside?" in asked[0]


def test_no_tag_no_doer_call():
  model = ScriptedModel([LOOK_RULE, (r"You are the referee", _referee([]))])
  event, failure = _adjudication(model).adjudicate(
      "Tom Gomez", "Tom Gomez reads the paper.")
  assert failure is None and event["behaviours"] == []
  assert "tag_doers" not in event
  # Only the second look's call (second_look.py: it found nothing).
  assert model.calls_by_tag() == {"GM.adjudicate": 1, "GM.look": 1}


def test_a_failed_doer_call_is_recorded_and_its_tag_not_counted():
  """Never a default answer: a tag whose check failed is not the actor's."""
  model = ScriptedModel([
      (r"who smokes", "this is not JSON"),
      LOOK_RULE, (r"You are the referee", _referee(["smoking_indoors"]))])
  event, failure = _adjudication(model).adjudicate(
      "Carlos Gomez", "Carlos Gomez lights a cigarette at his table.")
  assert event["behaviours"] == [] and event["tag_doers"] == {}
  assert event["not_by_actor"] == ["smoking_indoors"]
  assert failure["op"] == doer_check.TAG
  assert failure["error"].startswith("smoking_indoors:")


def test_a_failed_doer_call_then_a_failed_look_are_both_recorded():
  """No failure replaces another: the look after a failed doer check
  fails too, and the action's failure record holds both errors."""
  model = ScriptedModel([
      (r"who smokes", "this is not JSON"),
      (crsec_script.LOOK, "nor is this"),
      (r"You are the referee", _referee(["smoking_indoors"]))])
  event, failure = _adjudication(model).adjudicate(
      "Carlos Gomez", "Carlos Gomez lights a cigarette at his table.")
  assert event["behaviours"] == [] and event["second_look"]["why"] == (
      "the call failed")
  assert failure["op"] == doer_check.TAG
  assert failure["error"].startswith("smoking_indoors:")
  assert "; GM.look: scripted answer is not JSON" in failure["error"]
  assert failure["raw"] == "this is not JSON"


def test_the_check_can_be_left_out():
  model = ScriptedModel([LOOK_RULE, (r"You are the referee", _referee(["loud"]))])
  referee = adjudication.Adjudication(
      model.tagged(referee_lib.ADJUDICATE_TAG), place="a café",
      behaviours=[Behaviour(**b) for b in BEHAVIOURS],
      similarity=lambda a, b: 0.9, doer=False)
  event, _ = referee.adjudicate("Tom Gomez", "Tom Gomez shouts.")
  assert event["behaviours"] == ["loud"] and "tag_doers" not in event
  assert model.calls_by_tag() == {"GM.adjudicate": 1}

"""The referee's second look (game_masters/referee/second_look.py): where
the general call named nothing, the nearest behaviours are asked about once
more; the model proposes, the embedder, the same question in reverse order
and the doer check verify."""

from __future__ import annotations

import re

from crsec_concordia.game_masters import adjudication
from crsec_concordia.game_masters import referee as referee_lib
from crsec_concordia.game_masters.referee import second_look
from crsec_concordia.models import ScriptedModel
from crsec_concordia.scenarios import Behaviour
from tests import crsec_script

BEHAVIOURS = [{"id": "returned_tools",
               "description": "puts a shared tool back in the shed"},
              {"id": "left_tools_out",
               "description": "leaves a shared tool lying on the path"},
              {"id": "shared_harvest",
               "description": "gives vegetables to other gardeners"}]
ACTION = "Ruth Okafor hangs the trowel back on its hook in the shed."
LOOK = crsec_script.LOOK  # Both orders of the look.


def _similarity(scores):
  """A fake embedder: each description's score with ACTION (place words
  left out or not), and 0 for anything else."""
  by_description = {b["description"]: scores.get(b["id"], 0.0)
                    for b in BEHAVIOURS}

  def similarity(a, b):
    return by_description.get(b, 0.0) if "trowel" in a else 0.0
  return similarity


def _general(behaviour="none", evidence="none"):
  def answer(prompt):
    action = re.search(r'^[^:\n]+: "(.*)"$', prompt, re.M)[1]
    return {"narration": action, "place": "outdoors", "behaviour": behaviour,
            "also": "none", "evidence": evidence}
  return answer


def _referee(model, scores, doer=True):
  return adjudication.Adjudication(
      model.tagged(referee_lib.ADJUDICATE_TAG), place="a community garden",
      behaviours=[Behaviour(**b) for b in BEHAVIOURS], similarity=_similarity(scores), doer=doer)


def _model(look_answer, who="Ruth Okafor", general=None):
  return ScriptedModel([
      (LOOK, look_answer),
      (r"who puts", {"who": who}),
      (r"You are the referee", general or _general())])


def test_the_nearest_behaviour_proposed_and_done_by_the_actor_counts():
  model = _model({"behaviour": "returned_tools", "evidence": ACTION})
  event, failure = _referee(model, {"returned_tools": 0.4,
                                    "left_tools_out": 0.3}).adjudicate(
      "Ruth Okafor", ACTION)
  assert failure is None
  assert event["behaviours"] == ["returned_tools"]
  assert event["evidence"] == ACTION
  look = event["second_look"]
  assert look["accepted"] and look["doer"] == "Ruth Okafor"
  assert look["candidates"] == {"returned_tools": 0.4, "left_tools_out": 0.3}
  assert look["reversed"] == "returned_tools"
  assert model.calls_by_tag() == {"GM.adjudicate": 1, "GM.look": 2,
                                  "GM.doer": 1}
  # Only the near behaviours are listed, nearest first, before the action;
  # then every choice in reverse order, "none" first.
  asked, again = [c.prompt for c in model.calls if c.tag == "GM.look"]
  assert "shared_harvest" not in asked
  assert (asked.index("returned_tools") < asked.index("left_tools_out")
          < asked.index("- none:"))
  assert (again.index("- none:") < again.index("left_tools_out")
          < again.index("returned_tools"))
  for prompt in (asked, again):
    assert prompt.rstrip().endswith(f'Ruth Okafor: "{ACTION}"')


def _first_listed(prompt, schema):
  """A model that picks whatever is listed first: the bias the reversed
  question is there to catch."""
  del schema
  first = re.search(r"^- (\w+):", prompt, re.M)[1]
  return {"behaviour": first, "evidence": ACTION}


def test_a_proposal_that_follows_the_order_of_the_list_is_not_counted():
  """"Reads the morning newspaper at the long table", proposed as eating
  at the desk when that came first, and "none" when "none" came first."""
  model = _model(_first_listed)
  event, failure = _referee(model, {"returned_tools": 0.4,
                                    "left_tools_out": 0.3}).adjudicate(
      "Ruth Okafor", ACTION)
  assert failure is None and event["behaviours"] == []
  look = event["second_look"]
  assert look["behaviour"] == "returned_tools" and look["reversed"] == "none"
  assert look["why"] == "another answer with the candidates in reverse order"
  assert "GM.doer" not in model.calls_by_tag()


def test_a_proposal_the_embedder_does_not_find_nearest_is_not_counted():
  """"Ties her bean plants to their canes", proposed as picking from her
  plot while another behaviour is nearer: the embedder outvotes it."""
  model = _model({"behaviour": "left_tools_out", "evidence": ACTION})
  event, failure = _referee(model, {"returned_tools": 0.4,
                                    "left_tools_out": 0.3}).adjudicate(
      "Ruth Okafor", ACTION)
  assert failure is None and event["behaviours"] == []
  assert event["second_look"]["why"] == "not the behaviour nearest the action"
  assert "GM.doer" not in model.calls_by_tag()


def test_no_look_where_no_behaviour_is_near_enough():
  model = _model({"behaviour": "returned_tools", "evidence": ACTION})
  event, _ = _referee(model, {"returned_tools": 0.2}).adjudicate(
      "Ruth Okafor", ACTION)
  assert "second_look" not in event and event["behaviours"] == []
  assert model.calls_by_tag() == {"GM.adjudicate": 1}


def test_no_look_when_the_general_call_named_a_behaviour():
  model = _model({"behaviour": "returned_tools", "evidence": ACTION},
                 general=_general("returned_tools", ACTION))
  event, _ = _referee(model, {"returned_tools": 0.4}).adjudicate(
      "Ruth Okafor", ACTION)
  assert event["behaviours"] == ["returned_tools"]
  assert "second_look" not in event
  assert "GM.look" not in model.calls_by_tag()


def test_a_claim_without_a_quote_gets_the_look():
  """The general call named a behaviour with "none" as its quote (the
  evidence rule drops the claim): the look asks again, its own quote
  checked."""
  model = _model({"behaviour": "returned_tools", "evidence": ACTION},
                 general=_general("returned_tools", "none"))
  event, _ = _referee(model, {"returned_tools": 0.4}).adjudicate(
      "Ruth Okafor", ACTION)
  assert event["unsupported"] == ["returned_tools"]
  assert event["behaviours"] == ["returned_tools"]
  assert event["second_look"]["accepted"]


def test_a_look_quoting_other_words_or_naming_someone_else_is_not_counted():
  unquoted = _model({"behaviour": "returned_tools",
                     "evidence": "puts a shared tool back"})
  event, _ = _referee(unquoted, {"returned_tools": 0.4}).adjudicate(
      "Ruth Okafor", ACTION)
  assert event["behaviours"] == []
  assert event["second_look"]["why"] == "the quote is not words of the action"
  other = _model({"behaviour": "returned_tools", "evidence": ACTION},
                 who="Gus Lindqvist")
  event, _ = _referee(other, {"returned_tools": 0.4}).adjudicate(
      "Ruth Okafor", ACTION)
  assert event["behaviours"] == []
  assert event["second_look"]["why"] == "the doer check named someone else"


def test_a_failed_look_is_recorded_never_a_default():
  model = _model("this is not JSON")
  event, failure = _referee(model, {"returned_tools": 0.4}).adjudicate(
      "Ruth Okafor", ACTION)
  assert event["behaviours"] == []
  assert event["second_look"] == {
      "candidates": {"returned_tools": 0.4}, "accepted": False,
      "why": "the call failed"}
  assert failure["op"] == second_look.TAG


def test_candidates_are_the_nearest_three_above_the_tag_floor():
  scores = {"a": 0.5, "b": 0.4, "c": 0.17, "d": 0.1, "e": 0.45}
  descriptions = {i: f"does {i}" for i in scores}

  def similarity(_, description):
    return scores[description.split()[-1]]
  near = second_look.candidates("x", descriptions, similarity, frozenset())
  assert near == [("a", 0.5), ("e", 0.45), ("b", 0.4)]
  low = {"c": 0.17, "d": 0.1}
  assert second_look.candidates("x", {i: f"does {i}" for i in low},
                                similarity, frozenset()) == []

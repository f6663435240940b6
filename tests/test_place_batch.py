"""A place's slot judged together (game_masters/referee/batch.py): one call
per batch, each action's guarantees kept as the per-action referee keeps
them."""

from __future__ import annotations

import random
import re

from crsec_concordia.game_masters import adjudication
from crsec_concordia.game_masters import referee as referee_lib
from crsec_concordia.game_masters.referee import batch as batch_lib
from crsec_concordia.game_masters.referee import place_slot
from crsec_concordia.models import ScriptedModel
from crsec_concordia.scenarios import Behaviour

BEHAVIOURS = [{"id": "smoking_indoors",
               "description": "smokes or lights a cigarette inside"},
              {"id": "loud", "description": "shouts or talks loudly"}]
# The batched general call and the batched look, told apart by their
# questions.
BATCH = r"Each action below has an id\. Answer for every id"
LOOK = r"Each action below has an id and its own behaviours"
_LINE = re.compile(r'^\[(a\d+)\] (?:.*? now\. )?(?:Situation: .*? )?'
                   r'([^:\n]+): "(.*)"$', re.M)
_LOOK_BLOCK = re.compile(
    r'^\[(a\d+)\] Behaviours:\n((?:- .*\n)+)([^:\n]+): "(.*)"$', re.M)


def actions_of(prompt: str) -> dict[str, tuple[str, str]]:
  """{key: (actor, action)} of a batched general call's prompt."""
  return {k: (actor, action) for k, actor, action in _LINE.findall(prompt)}


def batch_answer(tags: dict[str, list[str]], quote=None, who=None):
  """A batched answer: each action tagged as `tags` says by a word of its
  text (absent: none), quoting its own words (or `quote(action)`), the
  doer its actor (or `who(actor)`)."""
  def answer(prompt):
    out = {}
    for key, (actor, action) in actions_of(prompt).items():
      named = next((v for w, v in tags.items() if w in action), [])
      ids = [*named, "none", "none"]
      out[key] = {"narration": action, "place": "indoors",
                  "behaviour": ids[0], "also": ids[1],
                  "evidence": quote(action) if quote else action,
                  "doer": who(actor) if who else actor}
    return out
  return answer


def look_answer(prompt, schema):
  """The batched look: each action's first listed candidate, quoted."""
  out = {}
  for key, listing, actor, action in _LOOK_BLOCK.findall(prompt):
    ids = schema["properties"][key]["properties"]["behaviour"]["enum"]
    out[key] = {"behaviour": ids[0], "evidence": action}
    if "doer" in schema["properties"][key]["properties"]:
      out[key]["doer"] = actor
  return out


def _referee(model, **kwargs):
  return referee_lib.Referee(
      model.tagged(referee_lib.ADJUDICATE_TAG), place="a small café",
      behaviours=[Behaviour(**b) for b in BEHAVIOURS],
      similarity=lambda a, b: 0.9, batched=True, **kwargs)


ITEMS = [batch_lib.PlaceAction("Ann Lee", "Ann Lee lights a cigarette at her table."),
         batch_lib.PlaceAction("Bob Roy", "Bob Roy shouts at the waiter."),
         batch_lib.PlaceAction("Cy Dunn", "Cy Dunn smokes by the window and shouts.")]
TAGS = {"cigarette": ["smoking_indoors"], "shouts at": ["loud"],
        "smokes by": ["smoking_indoors", "loud"]}


def test_a_place_slot_is_one_call_with_a_tag_and_doer_per_action():
  model = ScriptedModel([(BATCH, batch_answer(TAGS))])
  results = _referee(model).adjudicate_place(ITEMS)
  assert model.calls_by_tag() == {"GM.adjudicate": 1}
  assert [f["behaviours"] for f, _ in results] == [
      ["smoking_indoors"], ["loud"], ["smoking_indoors", "loud"]]
  assert all(failure is None for _, failure in results)
  assert results[0][0]["tag_doers"] == {"smoking_indoors": "Ann Lee"}
  prompt = model.calls[0].prompt
  # The shared part once, each action under its id.
  assert prompt.count("Behaviours:") == 1
  assert all(f'[a{n + 1}] {i.actor}: "{i.action}"' in prompt
             for n, i in enumerate(ITEMS))


def test_a_doer_who_is_not_the_actor_drops_the_tags():
  model = ScriptedModel([
      (BATCH, batch_answer(TAGS, who=lambda a: "nobody" if a == "Bob Roy"
                           else a)),
      (LOOK, look_answer)])
  results = _referee(model, policy=None).adjudicate_place(ITEMS[:2])
  assert results[1][0]["not_by_actor"] == ["loud"]
  assert results[0][0]["behaviours"] == ["smoking_indoors"]


def test_a_quote_from_another_action_drops_the_tag_after_one_retry():
  # Ann's answer quotes Bob's words: asked once more (Ann alone), then kept
  # apart; Bob's stands.
  bob = ITEMS[1].action
  model = ScriptedModel([
      (BATCH, batch_answer(TAGS, quote=lambda action: bob)),
      (LOOK, look_answer)])
  results = _referee(model).adjudicate_place(ITEMS[:2])
  asked = [c for c in model.calls if c.tag == "GM.adjudicate"]
  assert len(asked) == 2
  assert "Your evidence for a1" in asked[1].prompt
  assert "[a2]" not in asked[1].prompt
  ann, bob_fields = results[0][0], results[1][0]
  assert ann["behaviours"] != ["smoking_indoors"] or "second_look" in ann
  assert ann["unsupported"] == ["smoking_indoors"]
  assert bob_fields["behaviours"] == ["loud"]


def test_an_invalid_answer_is_asked_again_then_recorded_per_action():
  model = ScriptedModel([(BATCH, {"a1": {"narration": "x"}})])
  results = _referee(model).adjudicate_place(ITEMS)
  assert model.calls_by_tag() == {"GM.adjudicate": 2}
  for (fields, failure), item in zip(results, ITEMS):
    assert fields["behaviours"] == [] and not fields["adjudicated"]
    assert fields["evidence"].startswith("adjudication failed")
    assert failure["op"] == "GM.adjudicate"


def test_a_crowded_place_splits_by_the_budget_in_name_order():
  items = [batch_lib.PlaceAction(f"Agent {c}", f"Agent {c} shouts at a friend.")
           for c in "ABCDEFG"]
  whole = ScriptedModel([(BATCH, batch_answer(TAGS))])
  one = _referee(whole).adjudicate_place(items)
  referee = _referee(ScriptedModel([(BATCH, batch_answer(TAGS))]))
  tokens = batch_lib.PlaceBatch(referee, failed="", no_action="")._tokens
  budget = tokens(items[:3])  # Three actions fit, not four.
  split = ScriptedModel([(BATCH, batch_answer(TAGS))])
  parts = _referee(split).adjudicate_place(items, budget=budget)
  assert whole.calls_by_tag() == {"GM.adjudicate": 1}
  assert split.calls_by_tag() == {"GM.adjudicate": 3}
  assert [len(actions_of(c.prompt)) for c in split.calls] == [3, 3, 1]
  assert actions_of(split.calls[0].prompt)["a1"][0] == "Agent A"
  assert parts == one


def test_the_second_look_asks_the_leftover_actions_in_one_call_each_order():
  quiet = [batch_lib.PlaceAction("Ann Lee", "Ann Lee sits near the heater."),
           batch_lib.PlaceAction("Bob Roy", "Bob Roy hums by the door.")]
  model = ScriptedModel([(LOOK, look_answer), (BATCH, batch_answer({}))])
  results = _referee(model).adjudicate_place(quiet)
  assert model.calls_by_tag() == {"GM.adjudicate": 1, "GM.look": 2}
  for fields, failure in results:
    assert failure is None
    look = fields["second_look"]
    assert look["batched"] and look["accepted"]
    assert fields["behaviours"] == ["smoking_indoors"]
    assert look["reversed"] == "smoking_indoors"
  reverse = [c.prompt for c in model.calls if c.tag == "GM.look"][1]
  assert reverse.index("- none: none of these") < reverse.index(
      "- smoking_indoors")


def test_thread_order_does_not_change_the_results():
  items = {i.actor: i for i in ITEMS}
  places = {"Ann Lee": "room", "Bob Roy": "terrace", "Cy Dunn": "room"}

  def in_order(order):
    def run(tasks):
      keys = sorted(tasks)
      if order:
        random.Random(order).shuffle(keys)
      return {k: tasks[k]() for k in keys}
    model = ScriptedModel([(BATCH, batch_answer(TAGS))])
    judged = place_slot.judge_slot(_referee(model), items, places.get, run)
    return judged, sorted(c.prompt for c in model.calls)
  first = in_order(0)
  assert all(in_order(seed) == first for seed in (1, 2, 3))
  # One call per place.
  assert len(first[1]) == 2


def test_with_the_switch_off_each_action_has_its_own_call():
  model = ScriptedModel([
      (r"who ", lambda p: {"who": re.search(r'Action: "(\w+ \w+)', p)[1]}),
      (r"You are the referee", lambda p: {
          "narration": "x", "place": "indoors", "behaviour": "loud",
          "also": "none", "evidence": re.search(r': "(.*)"$', p)[1]})])
  component = adjudication.Adjudication(
      model.tagged(referee_lib.ADJUDICATE_TAG), place="a small café",
      behaviours=[Behaviour(**b) for b in BEHAVIOURS],
      similarity=lambda a, b: 0.9)
  assert not component.settings.batched
  for item in ITEMS:
    component.adjudicate(item.actor, item.action)
  assert model.calls_by_tag() == {"GM.adjudicate": 3, "GM.doer": 3}

"""Prefab params are checked: the bad value and the allowed ones named.

And `on_invalid_action` decides what `act()` returns when the model gives
no valid action: the marker (default), a neutral line, or an exception.
"""

from __future__ import annotations

import copy

import pytest
from concordia.associative_memory import basic_associative_memory

from crsec_concordia import invalid_action
from crsec_concordia.prefabs import PREFABS
from crsec_concordia.testing import SchemaModel, bag_of_words

GOOD = {"name": "Ana", "persona": "A gardener.", "setting": "Hobbs Cafe"}


def build(arm: str, model=None, **params):
  prefab = copy.deepcopy(PREFABS[f"{arm}__Entity"])
  prefab.params = {**GOOD, **params}
  bank = basic_associative_memory.AssociativeMemoryBank(
      sentence_embedder=bag_of_words)
  return prefab.build(model or SchemaModel(), bank)


@pytest.mark.parametrize("arm", ["normative", "baseline"])
@pytest.mark.parametrize("params, says", [
    ({"role": "boss"}, "role 'boss': one of entrepreneur, ordinary"),
    ({"modules": {"spreading": False}},
     "unknown module 'spreading'; known: communication, observation"),
    ({"modules": {"synthesis": "no"}}, "modules.synthesis 'no': true or false"),
    ({"initial_norm_count": "5"}, "initial_norm_count '5': a whole number"),
    ({"reflect_every": 0}, "reflect_every 0: at least 1"),
    ({"day_start": "9am"}, "day_start '9am': a time of day as HH:MM"),
    ({"day_start": "17:00"}, "day_start '17:00': before day_end '16:00'"),
    ({"initial_norms": [{"text": "x"}]}, "initial_norms[0]"),
    ({"on_invalid_action": "skip"},
     "on_invalid_action 'skip': one of mark, nothing, raise"),
])
def test_a_bad_param_is_named_with_the_allowed_values(arm, params, says):
  if arm == "baseline" and "day_start" in params:
    params = dict(params, day_end="16:00")
  with pytest.raises(ValueError) as raised:
    build(arm, **params)
  assert says in str(raised.value)
  assert str(raised.value).startswith(f"{arm}__Entity param ")


def test_every_problem_is_named_one_per_line():
  with pytest.raises(ValueError) as raised:
    build("normative", role="boss", reflect_every="often")
  assert len(str(raised.value).splitlines()) == 2


def test_good_params_build():
  build("normative", role="entrepreneur", initial_norm_count=0,
        day_start="08:00", day_end="12:00",
        modules={"synthesis": False}, on_invalid_action="nothing")


def act_of(choice: str | None) -> str:
  params = {} if choice is None else {"on_invalid_action": choice}
  ana = build("normative", model=_failing(), **params)
  ana.observe("[Day 1 09:10 | step 1] Tom Gomez (indoors): Tom reads.")
  return ana.act()


def _failing() -> SchemaModel:
  def fail(prompt, schema):
    del prompt, schema
    return "not an answer"
  # The act's prompt is the one asking what Ana does (its call to action).
  return SchemaModel([(r"Ana (?:does|will do)|What (?:does|would) Ana",
                       fail)])


def test_the_mark_is_the_default():
  assert "(no valid action" in act_of(None)
  assert act_of("mark") == act_of(None)


def test_nothing_returns_a_neutral_line():
  assert act_of("nothing") == "Ana does nothing."


def test_raise_raises():
  with pytest.raises(invalid_action.NoValidAction):
    act_of("raise")


def test_an_own_action_is_returned_under_every_choice():
  assert invalid_action.shown("Ana waters the roses.", "Ana", "raise") == (
      "Ana waters the roses.")

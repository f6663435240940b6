"""FixedActionSpec: the same free-text question every turn, with the time.

Without an answer under `__next_action_spec__` the stock game master asks the
LLM to write a JSON action spec, and a small model's non-JSON answer crashes
the run. The café needs no such freedom: every turn asks the agent, in plain
words, what they do next at the current simulated time, opening with the
situation of a scenario occasion when the agent meets one (occasions.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from concordia.components.game_master import next_acting as next_acting_lib
from concordia.typing import entity as entity_lib
from concordia.typing import entity_component

from crsec_concordia.game_masters import clock as clock_lib
from crsec_concordia.game_masters import occasions as occasions_lib
from crsec_concordia.game_masters import turn_order as turn_order_lib

ACTION_SPEC_KEY = next_acting_lib.DEFAULT_NEXT_ACTION_SPEC_COMPONENT_KEY

# No braces other than the fields below: act components may `.format()` it.
# `{situation}` is empty, or an occasion's text followed by a space;
# `{question}` is DEFAULT_QUESTION or the occasion's own.
DEFAULT_CALL_TO_ACTION = ("It is {time} at {place}. {situation}{question} "
                          "Describe one action in one sentence.")
DEFAULT_QUESTION = "What does {actor} do next?"


class FixedActionSpec(entity_component.ContextComponent,
                      entity_component.ComponentWithLogging):
  """Answers "In what action spec format should X respond?" without a model."""

  def __init__(self, *, place: str,
               occasions: Sequence[occasions_lib.Occasion] = (),
               call_to_action: str = DEFAULT_CALL_TO_ACTION,
               clock_key: str = clock_lib.CLOCK_KEY,
               turn_order_key: str = turn_order_lib.TURN_ORDER_KEY):
    """Creates the component.

    Args:
      place: the short name of the setting ("Hobbs Cafe").
      occasions: the scenario's occasions; the one an agent meets at a step
        is told in that step's question.
      call_to_action: a template with `{time}`, `{place}`, `{situation}`,
        `{question}` and `{actor}`; the actor's full name is filled in here,
        so the agent's own act component needs no formatting.
      clock_key: the key of the game master's CafeClock.
      turn_order_key: the key of the game master's TurnOrder.
    """
    super().__init__()
    self._place = place
    self._occasions = tuple(occasions)
    self._template = call_to_action
    self._clock_key = clock_key
    self._turn_order_key = turn_order_key

  def occasion(self) -> occasions_lib.Occasion | None:
    """The occasion the agent acting at the current step meets, if any."""
    if not self._occasions:
      return None
    clock = self.get_entity().get_component(self._clock_key,
                                            type_=clock_lib.CafeClock)
    turns = self.get_entity().get_component(self._turn_order_key,
                                            type_=turn_order_lib.TurnOrder)
    return occasions_lib.occasion_at(
        self._occasions, step=clock.current_stamp().step,
        stamp_for=clock.stamp_at, actor_at=turns.actor_at)

  def call_to_action(self, actor: str) -> str:
    """The question for `actor` at the current simulated time."""
    stamp = self.get_entity().get_component(
        self._clock_key, type_=clock_lib.CafeClock).current_stamp()
    occasion = self.occasion()
    situation = f"{occasion.text_for(actor)} " if occasion else ""
    question = ((occasion.question_for(actor) if occasion else "")
                or DEFAULT_QUESTION.format(actor=actor))
    text = self._template.format(time=stamp.time, place=self._place,
                                 actor=actor, situation=situation,
                                 question=question)
    return text.replace("{", "(").replace("}", ")")

  def pre_act(self, action_spec: entity_lib.ActionSpec) -> str:
    if action_spec.output_type != entity_lib.OutputType.NEXT_ACTION_SPEC:
      return ""
    actor = self.get_entity().get_component(
        self._turn_order_key, type_=turn_order_lib.TurnOrder).current_actor
    spec = entity_lib.ActionSpec(
        call_to_action=self.call_to_action(actor or "everyone"),
        output_type=entity_lib.OutputType.FREE, tag="action")
    result = json.dumps(spec.to_dict())
    self._logging_channel({"Key": "action spec",
                           "Summary": spec.call_to_action, "Value": result})
    return result

  def get_state(self) -> entity_component.ComponentState:
    return {}

  def set_state(self, state: entity_component.ComponentState) -> None:
    del state

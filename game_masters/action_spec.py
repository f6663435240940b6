"""FixedActionSpec: the same free-text question every slot, with the time.

Without an answer under `__next_action_spec__` the stock game master asks the
LLM to write a JSON action spec, and a small model's non-JSON answer crashes
the run. The venue needs no such freedom: every slot asks each agent, in
plain words, what they do next at the current simulated time, where they
are (in a scenario that declares its places: whereabouts.py), and the
situation of a scenario occasion when the agent meets one (occasions.py). The engine asks once per agent, naming the agent in the
question; several agents may be asked at once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from concordia.components.game_master import next_acting as next_acting_lib
from concordia.typing import entity as entity_lib
from concordia.typing import entity_component

from crsec_concordia import observations
from crsec_concordia.game_masters import clock as clock_lib
from crsec_concordia.game_masters import occasions as occasions_lib
from crsec_concordia.game_masters import whereabouts as whereabouts_lib

ACTION_SPEC_KEY = next_acting_lib.DEFAULT_NEXT_ACTION_SPEC_COMPONENT_KEY

# No braces other than the fields below: act components may `.format()` it.
# `{where}` is empty, or where the agent is followed by a space (a scenario
# that declares its places); `{situation}` is empty, or an occasion's text
# followed by a space; `{question}` is DEFAULT_QUESTION or the occasion's.
DEFAULT_CALL_TO_ACTION = ("It is {time} at {place}. {where}{situation}"
                          "{question} Describe one action in one sentence.")
DEFAULT_QUESTION = "What does {actor} do next?"
OCCASION_TAG = observations.OCCASION_TAG


def name_from_request(request: str, template: str) -> str:
  """The agent's name in an engine question built from `template` ({name})."""
  prefix, suffix = template.split("{name}")
  if not (request.startswith(prefix) and request.endswith(suffix)):
    raise ValueError(f"unexpected request {request!r}: the engine and the "
                     f"game master disagree on {template!r}")
  return request.removeprefix(prefix).removesuffix(suffix)


class FixedActionSpec(entity_component.ContextComponent,
                      entity_component.ComponentWithLogging):
  """Answers "In what action spec format should X respond?" without a model."""

  def __init__(self, *, place: str,
               occasions: Sequence[occasions_lib.Occasion] = (),
               call_to_action: str = DEFAULT_CALL_TO_ACTION,
               clock_key: str = clock_lib.CLOCK_KEY,
               call_to_next_action_spec: str = (
                   next_acting_lib.DEFAULT_CALL_TO_NEXT_ACTION_SPEC),
               whereabouts_key: str = whereabouts_lib.WHEREABOUTS_KEY):
    """Creates the component.

    Args:
      place: the short name of the setting ("Hobbs Cafe").
      occasions: the scenario's occasions; the one an agent meets at a step
        is told in that step's question.
      call_to_action: a template with `{time}`, `{place}`, `{where}`,
        `{situation}`, `{question}` and `{actor}`; the actor's full name is
        filled in here, so the agent's own act component needs no
        formatting.
      clock_key: the key of the game master's SlotClock.
      call_to_next_action_spec: the engine's question, with `{name}`: the
        agent asked about is read from it.
      whereabouts_key: the key of the game master's Whereabouts, if any.
    """
    super().__init__()
    self._place = place
    self._occasions = tuple(occasions)
    self._template = call_to_action
    self._clock_key = clock_key
    self._request = call_to_next_action_spec
    self._whereabouts_key = whereabouts_key

  def occasion(self, actor: str) -> occasions_lib.Occasion | None:
    """The occasion `actor` meets in the current slot, if any."""
    if not self._occasions:
      return None
    clock = self.get_entity().get_component(self._clock_key,
                                            type_=clock_lib.SlotClock)
    return occasions_lib.occasion_at(
        self._occasions, actor=actor, step=clock.current_stamp().step,
        stamp_for=clock.stamp_at)

  def call_to_action(self, actor: str) -> str:
    """The question for `actor` at the current simulated time."""
    stamp = self.get_entity().get_component(
        self._clock_key, type_=clock_lib.SlotClock).current_stamp()
    occasion = self.occasion(actor)
    situation = f"{occasion.text_for(actor)} " if occasion else ""
    question = ((occasion.question_for(actor) if occasion else "")
                or DEFAULT_QUESTION.format(actor=actor))
    where = self.where(actor)
    text = self._template.format(time=stamp.time, place=self._place,
                                 actor=actor, situation=situation,
                                 question=question,
                                 where=f"{where} " if where else "")
    return text.replace("{", "(").replace("}", ")")

  def where(self, actor: str) -> str:
    """Where `actor` is, as its question tells it ("" in a scenario that
    declares no places, or a game master without Whereabouts)."""
    components = self.get_entity().get_all_context_components()  # type: ignore[attr-defined]
    whereabouts = components.get(self._whereabouts_key)
    if not isinstance(whereabouts, whereabouts_lib.Whereabouts):
      return ""
    return whereabouts.places.told(actor, whereabouts.place_of(actor))

  def spec_for(self, actor: str) -> entity_lib.ActionSpec:
    """The action spec of `actor` for the current slot (thread-safe).

    The slot engine calls it for every agent at once instead of asking the
    game master's `act` one agent at a time.
    """
    # The tag tells a plan-driven agent that the game master put something
    # to it (components/_acting_reasons.py): a reason to decide anew.
    return entity_lib.ActionSpec(
        call_to_action=self.call_to_action(actor),
        output_type=entity_lib.OutputType.FREE,
        tag=OCCASION_TAG if self.occasion(actor) else "action")

  def pre_act(self, action_spec: entity_lib.ActionSpec) -> str:
    if action_spec.output_type != entity_lib.OutputType.NEXT_ACTION_SPEC:
      return ""
    actor = name_from_request(action_spec.call_to_action, self._request)
    spec = self.spec_for(actor)
    result = json.dumps(spec.to_dict())
    self._logging_channel({"Key": "action spec",
                           "Summary": spec.call_to_action, "Value": result})
    return result

  def get_state(self) -> entity_component.ComponentState:
    return {}

  def set_state(self, state: entity_component.ComponentState) -> None:
    del state

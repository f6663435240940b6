"""EveryoneActs: in every slot of the clock, every agent acts.

The stock game master asks the LLM who acts next; the café used to name one
agent per 10-minute step, so in the paper's 10-agent café each agent acted
about once every 100 simulated minutes and Carlos, the smoker, once in two
hours. In CRSEC, as in Generative Agents, every agent lives through every
moment: this component answers the engine's "Which entities act next?" with
every agent present, comma-separated (Concordia's simultaneous engine splits
the answer on commas), in name order so logs read the same in every run.
"""

from __future__ import annotations

from collections.abc import Sequence

from concordia.components.game_master import next_acting as next_acting_lib
from concordia.typing import entity as entity_lib
from concordia.typing import entity_component

ACTING_KEY = next_acting_lib.DEFAULT_NEXT_ACTING_COMPONENT_KEY


class EveryoneActs(entity_component.ContextComponent,
                   entity_component.ComponentWithLogging):
  """Answers "Which entities act next?" with every agent, every slot."""

  def __init__(self, *, player_names: Sequence[str]):
    """Creates the component.

    Args:
      player_names: the agents; names must not contain commas (the engine
        splits the answer on them).
    """
    super().__init__()
    if not player_names:
      raise ValueError("a venue needs at least one agent")
    bad = [n for n in player_names if "," in n]
    if bad:
      raise ValueError(f"agent names must not contain commas: {bad}")
    self._names = tuple(sorted(player_names))

  @property
  def names(self) -> tuple[str, ...]:
    return self._names

  def pre_act(self, action_spec: entity_lib.ActionSpec) -> str:
    if action_spec.output_type != entity_lib.OutputType.NEXT_ACTING:
      return ""
    answer = ",".join(self._names)
    self._logging_channel({"Key": "acting", "Summary": answer,
                           "Value": answer})
    return answer

  def get_state(self) -> entity_component.ComponentState:
    return {}

  def set_state(self, state: entity_component.ComponentState) -> None:
    del state

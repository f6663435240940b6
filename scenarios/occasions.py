"""An occasion: a moment the setting puts to an agent (the bill arrives).

The scenario file's `occasions` entries, validated once with the rest of
the scenario and handed as they are to the game master, which schedules
them (game_masters/occasions.py says who meets one when, and why).
"""

from __future__ import annotations

import pydantic

from crsec_concordia.scenarios.base import ScenarioModel
from crsec_concordia.scenarios.checks import ClockTime, Ident, Name, Text

ACTOR_FIELD = "{actor}"


class Occasion(ScenarioModel):
  """A moment the game master puts to each agent once a day, from `at`:
  their first turn since opens with `situation`.

  Attributes:
    id: its name in event records (`occasion`).
    at: "HH:MM"; from this time of each day the agents meet it, each in
      the first slot since.
    situation: one or two sentences; `{actor}` is replaced by the agent's
      full name.
    question: what the agent is asked instead of "What does X do next?"
      (none: that). Asked "What does Tom Gomez do about the bill?" the
      1.5B model answered about the bill 8 times in 12; asked what Tom
      does next, with the bill in the sentence before, 2 times in 12.
    behaviours: the behaviour ids the referee asks about in a second,
      focused call on the agent's answer (game_masters/referee/).
    agents: who meets it (empty: everyone).
  """
  id: Ident
  at: ClockTime
  situation: Text
  question: Text | None = None
  behaviours: list[str] = pydantic.Field(default_factory=list)
  agents: list[Name] = pydantic.Field(default_factory=list)

  def concerns(self, actor: str) -> bool:
    return not self.agents or actor in self.agents

  def text_for(self, actor: str) -> str:
    """The situation as the agent and the referee read it."""
    return self.situation.replace(ACTOR_FIELD, actor)

  def question_for(self, actor: str) -> str:
    """The occasion's own question, or "" for the usual one."""
    return (self.question or "").replace(ACTOR_FIELD, actor)

"""RecentEvents: the last slot's events in the act prompt, what goes on in brief.

Concordia's LastNObservations shows the latest observations as they came.
In a society where most people go on with what they were doing, most of a
slot's observation is actions the agent has already read, word for word,
in the slot before (the game master marks them continuing): they made the
act prompt long, and they are what changes from one slot's prompt to the
next, so a server could reuse little of it. Here a continued action is
named, not retold ("Going on as before: Carlos Gomez, Isabella
Rodriguez."): what is new stands in full. Other text passes unchanged.
"""

from __future__ import annotations

from concordia.components.agent import observation as observation_lib

from crsec_concordia import observations

_TAG = observation_lib.OBSERVATION_TAG


def brief(text: str) -> str:
  """`text` with its continued actions named in one line, not retold."""
  going_on: list[str] = []
  kept: list[str] = []
  for part in observations.split(text.replace(f"{_TAG} ", "")):
    event = observations.parse(part)
    if isinstance(event, observations.ActionObservation) and event.continued:
      going_on.append(event.actor)
    else:
      kept.append(part)
  if not going_on:
    return text
  names = ", ".join(dict.fromkeys(going_on))
  return "\n".join(kept + [f"Going on as before: {names}."]) + "\n"


class RecentEvents(observation_lib.LastNObservations):
  """LastNObservations with what goes on from the slot before in brief."""

  def _make_pre_act_value(self) -> str:
    return brief(super()._make_pre_act_value())

"""RecentEvents: the last slot's events in the act prompt, compact.

Concordia's LastNObservations shows the latest observations as they came:
every event with its full header ("[Day 1 10:00 | step 7] Tom Gomez
(indoors): ..."), on one line, and in a society where most people go on
with what they were doing, most of them actions the agent has already
read, word for word, in the slot before. That was most of an act prompt
and the part that changes from slot to slot, which a server's prompt cache
cannot reuse. Here the act reads the same events, shorter:

  - a continued action is named, not retold ("Going on as before: Carlos
    Gomez, Isabella Rodriguez.");
  - the time and the place are said once, in a heading, for the actions
    of one slot at one place (a heading again where the place changes),
    and each event is a line of its own;
  - an action's actor is named once (`observations.action_line`): the
    action itself starts with the name;
  - the clock line ("It is Day 1 10:10.") is left out: the call to action
    says the time.

Other text (a game master's free text) passes unchanged. The observation
as delivered is kept (`raw_text`) for what must parse it (the act's check
for a copied action).
"""

from __future__ import annotations

import threading

from concordia.components.agent import observation as observation_lib

from crsec_concordia import observations

_TAG = observation_lib.OBSERVATION_TAG


def brief(text: str) -> str:
  """`text` as the act reads it (see the module docstring)."""
  going_on: list[str] = []
  lines: list[str] = []
  heading: tuple[str, str | None] | None = None
  for part in observations.split(text.replace(f"{_TAG} ", "")):
    event = observations.parse(part)
    if isinstance(event, observations.ClockObservation):
      continue
    if isinstance(event, observations.ActionObservation) and event.continued:
      going_on.append(event.actor)
      continue
    if event is None:
      lines.append(part.strip())
      continue
    place = (event.place if isinstance(event, observations.ActionObservation)
             else None)
    if (event.stamp.time, place) != heading:
      heading = (event.stamp.time, place)
      lines.append(f"{event.stamp.time}, {place}:" if place
                   else f"{event.stamp.time}:")
    if isinstance(event, observations.ActionObservation):
      lines.append(observations.action_line(event.actor, None, event.text))
    else:
      lines.append(part[len(observations.header(event.stamp)):].strip())
  if going_on:
    lines.append(f"Going on as before: {', '.join(dict.fromkeys(going_on))}.")
  return "\n".join(line for line in lines if line) + ("\n" if lines else "")


class RecentEvents(observation_lib.LastNObservations):
  """LastNObservations, compact (see the module docstring)."""

  def __init__(self, *args, **kwargs):
    super().__init__(*args, **kwargs)
    self._raw_lock = threading.Lock()
    self._raw = ""

  def _make_pre_act_value(self) -> str:
    raw = super()._make_pre_act_value()
    with self._raw_lock:
      self._raw = raw
    return brief(raw)

  def raw_text(self) -> str:
    """The observations of this act's prompt as they were delivered."""
    with self._raw_lock:
      return self._raw

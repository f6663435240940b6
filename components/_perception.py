"""What is new to an observer (not a component).

As in Generative Agents, what an observer has already perceived is not new:
an action that goes on from an earlier slot (the game master marks it
continuing; its text is the same) asks no DetectConflict, IdentifyNorm or
Reflect again for the same person and deed. Keyed on each person's last
perceived action text, so it holds under any game master that repeats an
ongoing action, and the memory it needs is one text per person.
"""

from __future__ import annotations

from collections.abc import Iterable

from crsec_concordia import observations


def new_events(events: Iterable[observations.Event], me: str,
               perceived: dict[str, str]
               ) -> list[observations.ActionObservation]:
  """The actions of others in `events` the agent has not yet perceived.

  As in Generative Agents, what an observer has already perceived is not
  new: an action that goes on from an earlier slot (the game master marks
  it continuing; its text is the same) asks no judgement again for the
  same person and deed. `perceived` (each person's last perceived action)
  is updated in place; the caller holds the lock that guards it.
  """
  fresh = []
  for e in events:
    if (not isinstance(e, observations.ActionObservation) or e.actor == me
        or observations.is_no_action(e.text)):
      continue
    if perceived.get(e.actor) == e.text:
      continue
    perceived[e.actor] = e.text
    fresh.append(e)
  return fresh

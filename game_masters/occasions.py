"""Occasions: moments the setting puts to an agent (the bill arrives).

Left to themselves, agents in a three-hour morning never pay: across a dozen
runs of the mini café on the 1.5B model not one action involved a bill, so
the tipping norm had nothing to be about. In the paper's Smallville the
daily plan walks agents to the counter; a text-only café needs its game
master to do what a waiter does. An occasion is such a moment, written in
the scenario file: from a time of day, each agent's next slot opens with a
situation ("The server brings Tom Gomez the bill for his breakfast."), and
the agent still decides what to do about it; the referee then adjudicates
the answer like any other action.

The occasions are the scenario's own (scenarios/occasions.py); this module
says who meets one when: a function of the scenario, the seed and the step
alone (replayed from the start of the day), so a resumed run gives the
same occasions at the same steps as an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from crsec_concordia import observations
# The scenario's own type, parsed with the scenario: the game master
# schedules it as it is.
from crsec_concordia.scenarios.occasions import Occasion

__all__ = ["Occasion", "occasion_at"]


def occasion_at(occasions: Sequence[Occasion], *, actor: str, step: int,
                stamp_for: Callable[[int], observations.Stamp]
                ) -> Occasion | None:
  """The occasion `actor` meets at `step` (a slot), if any.

  Every agent acts in every slot, so each meets an occasion at the first
  slot at or after its time. Replays the day up to `step`: at each slot the
  agent meets the first occasion that is due and not yet met today; one
  occasion per slot, so two due at once are met in two slots.
  """
  day, first = stamp_for(step).day, step
  while first > 1 and stamp_for(first - 1).day == day:
    first -= 1
  met: set[str] = set()
  for t in range(first, step + 1):
    clock = stamp_for(t).clock
    due = next((o for o in occasions
                if o.at <= clock and o.concerns(actor) and o.id not in met),
               None)
    if due is not None:
      met.add(due.id)
      if t == step:
        return due
  return None

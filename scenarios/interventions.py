"""The `interventions:` block of a scenario file: changes made to a running
society, each at a time.

  interventions:
    - {kind: announce, at: 4, text: "A sign at the door: please bow.", places: [hall]}
    - {kind: arrive, at: "10:00", group: newcomers}
    - {kind: leave, at: 6, share: 0.25, group: convention}
    - {kind: teach, at: 3, agents: [Ann Lee], committed: true,
       norm: {content: Greet people with a bow., type: descriptive, utility: 90}}
    - {kind: close, at: 5, places: [courtyard]}
    - {kind: open, at: 7, places: [courtyard]}

`at` is a slot (1 is the first) or a clock time ("HH:MM", on `day`, 1 by
default: the first slot at or after it). An intervention happens as its
slot opens, before anyone observes or acts in it (game_masters/
interventions.py applies it and records it). The agents an `arrive` brings
are written in `agents:` (or drawn by the population block into a group)
and take no part before their slot; `leave` ends an agent's part for good.
A scenario without the block dumps as before; the checks across fields
(unknown agents, places and groups, times outside the episode) are
intervention_checks.py's.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Literal, get_args

import pydantic

from crsec_concordia.observations import Stamp
from crsec_concordia.scenarios.base import InitialNorm, ScenarioModel
from crsec_concordia.scenarios.checks import (Ident, Name, Positive,
                                              SlotOrTime, Text)
from crsec_concordia.scenarios.intervention_checks import INTERVENTION_KINDS
from crsec_concordia.scenarios.network import Probability

InterventionKind = Literal["announce", "arrive", "leave", "teach", "close",
                           "open"]
assert get_args(InterventionKind) == INTERVENTION_KINDS


class Intervention(ScenarioModel):
  """One change to the running society (see the module's docstring).

  Attributes:
    kind: what happens.
    at: the slot, or a clock time on `day`.
    text: announce: what everyone there perceives, word for word.
    places: announce: where it is perceived (empty: everywhere); close,
      open: the places.
    agents, group: arrive, leave, teach: who (by name, and/or every agent
      of a population group).
    share: leave: that share of the agents named (of everyone present
      when none is named), chosen with the run's seed.
    norm, committed: teach: the norm given, and whether it is held for
      good (never revised nor dropped) or like any other.
  """
  OPTIONAL_KEYS = frozenset({"day", "text", "places", "agents", "group",
                             "share", "norm", "committed"})
  kind: InterventionKind
  at: SlotOrTime
  day: Positive = 1
  text: Text | None = None
  places: list[Ident] = pydantic.Field(default_factory=list)
  agents: list[Name] = pydantic.Field(default_factory=list)
  group: Ident | None = None
  share: Probability | None = None
  norm: InitialNorm | None = None
  committed: bool = False


def slot_of(at: int | str, day: int, total_steps: int,
            stamp_for: Callable[[int], Stamp]) -> int | None:
  """The slot an intervention happens in: `at` itself when a number, else
  the first slot of `day` at or after the clock time `at` (None: no slot
  of the run is, or the number is past the run's last)."""
  if isinstance(at, int):
    return at if 1 <= at <= total_steps else None
  for step in range(1, total_steps + 1):
    stamp = stamp_for(step)
    if stamp.day == day and stamp.clock >= at:
      return step
    if stamp.day > day:
      return None
  return None


def concerned(intervention: Intervention, groups: dict[str, str | None],
          present: Sequence[str], seed: int, index: int) -> list[str]:
  """The agents an arrive, leave or teach concerns, in name order.

  `groups`: each agent's group; `present`: who is taking part as it
  happens (a share is drawn from those of the named who are). The share's
  draw depends on the seed and the intervention's place in the block
  alone, so a resumed run draws the same agents.
  """
  chosen = set(intervention.agents)
  if intervention.group is not None:
    chosen |= {n for n, g in groups.items() if g == intervention.group}
  if intervention.share is None:
    return sorted(chosen)
  pool = sorted(n for n in (chosen or set(groups)) if n in set(present))
  count = round(float(intervention.share) * len(pool))
  return sorted(random.Random(f"{seed}:{index}").sample(pool, count))


def arriving(interventions: Sequence[Intervention],
             groups: dict[str, str | None], seed: int) -> set[str]:
  """The agents the block's `arrive`s bring: built with the others, they
  take no part until their arrive happens (and none in a run that ends
  before it)."""
  return {n for i, iv in enumerate(interventions) if iv.kind == "arrive"
          for n in concerned(iv, groups, (), seed, i)}

"""The events of an observation, parsed once per text (not a component).

In a slot every agent receives nearly the same observation (everyone's
actions of the last slot, one line each), and several of its components
read it (AgentJournal.note from four components, the ConflictDetector, the
NormIdentifier, the act's copy check). The events are frozen dataclasses,
so one parse per distinct text is shared by all.
"""

from __future__ import annotations

import functools

from crsec_concordia import observations


@functools.lru_cache(maxsize=1024)
def parse_events(text: str) -> tuple[observations.Event, ...]:
  """`observations.parse_all(text)`, cached (the events are immutable)."""
  return tuple(observations.parse_all(text))

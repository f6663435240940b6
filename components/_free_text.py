"""Events from a free-text observation (not a component).

An observation in this project's exact format is parsed with no call
(`_events.parse_events`). Any other text (another game master's narration)
is read by ReadEvents, one structured call per distinct text shared by all
components (operations/read_events.py), so DetectConflict, IdentifyNorm
and Reflect work under any game master. The events carry the agent's
latest stamp (the agent's journal, AgentJournal, gives a free-text
observation a step of its own).
"""

from __future__ import annotations

from crsec_concordia import observations
from crsec_concordia.components._events import parse_events
from crsec_concordia.operations.read_events import read_events

_PLACES = {"indoors": "indoors", "outdoors": "outdoors"}
UNSAID_PLACE = "in a place the text does not say"


def is_free_text(observation: str) -> bool:
  """Text with no event of the exact format in it."""
  return bool(observation.strip()) and not parse_events(observation)


def events_in(observation: str, model, journal
              ) -> tuple[observations.Event, ...]:
  """The events of `observation`: parsed, or read from free text."""
  parsed = parse_events(observation)
  if parsed or not observation.strip():
    return parsed
  tagged = getattr(model, "tagged", None)
  reader = tagged("ReadEvents") if callable(tagged) else model
  found = read_events(reader, observation, names=journal.known_names,
                      on_failure=journal.record_failure)
  stamp = journal.last_stamp or observations.Stamp(1, "00:00", 0)
  return tuple(observations.ActionObservation(
      stamp, e["actor"].strip(), _PLACES.get(e["place"], UNSAID_PLACE),
      e["deed"].strip()) for e in found or ())

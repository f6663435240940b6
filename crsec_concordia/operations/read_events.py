"""ReadEvents: who did what, and where, in a free-text observation.

The CRSEC components parse this project's game master's exact observation
format (crsec_concordia.observations) with no model call. Under another
game master (Concordia's stock one narrates in free text) they would see
no behaviour at all, and CRSEC would silently do nothing. So text that is
not in the exact format is read by one structured call per observation
(cached by its text: the components of an agent, and agents who receive
the same text, share it). The answer is checked: an event whose actor is
not a person named in the text, or whose deed is not words of it, is
dropped (a small model invents people and deeds), never replaced.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from crsec_concordia import repetition
from crsec_concordia.models.base import StructuredModel
from crsec_concordia.operations.base import (FailureSink, obj,
                                              structured_call, text)
from crsec_concordia.operations.names import READ_EVENTS

OP = READ_EVENTS
# Where a deed happened, as ReadEvents answers it.
PLACE_ANSWERS = ("indoors", "outdoors", "not said")
_CACHE: dict[str, list[dict[str, str]]] = {}
_CACHE_LOCK = threading.Lock()
_READING: dict[str, threading.Lock] = {}
_CACHE_SIZE = 2048

SCHEMA = obj({"events": {"type": "array", "maxItems": 8, "items": obj({
    "actor": text(80), "deed": text(200),
    "place": {"type": "string", "enum": list(PLACE_ANSWERS)}})}})


def prompt(observation: str, names: Sequence[str]) -> str:
  people = ", ".join(names) if names else "anyone named in it"
  return (
      f"What happened:\n{observation.strip()}\n\n"
      "events: each thing a person did in the text above, at most eight. "
      f"actor: the person's name as written (people: {people}); deed: the "
      "words of the text that say what they did; place: indoors or "
      "outdoors if the text says so, else \"not said\". No event for "
      "anything the text does not say someone did.")


def read_events(model: StructuredModel, observation: str, *,
                names: Sequence[str] = (),
                on_failure: FailureSink | None) -> list[dict[str, str]] | None:
  """The events in `observation` ({actor, deed, place}), or None if the
  call failed (recorded through `on_failure`)."""
  key = observation.strip()
  with _CACHE_LOCK:
    # One call per text: components reading the same text at once wait for
    # the first (an agent's components observe in parallel threads).
    key_lock = _READING.setdefault(key, threading.Lock())
  with key_lock:
    with _CACHE_LOCK:
      if key in _CACHE:
        return [dict(e) for e in _CACHE[key]]
    answer = structured_call(model, OP, prompt(observation, names), SCHEMA,
                             on_failure=on_failure, max_tokens=320,
                             temperature=0.0)
    if answer is None:
      return None
    events = [e for e in answer["events"]
              if e["actor"].strip() and e["actor"].strip() in observation
              and repetition.quotes(e["deed"], observation,
                                    names=[e["actor"]])]
    with _CACHE_LOCK:
      if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
        _READING.pop(next(iter(_READING)), None)
      _CACHE[key] = [dict(e) for e in events]
  return events

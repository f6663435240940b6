"""The slot's actions as the engine hands them to the game master.

Concordia's simultaneous engine joins the actions of a step with newlines
("Name: action" each) and resolves the joined text in one call; an action
holding a newline, or naming another agent first, breaks a split, and an
entity whose act raised is only logged and silently missing. The slot
engine passes instead one JSON object: every agent's action by name, and
every agent that failed to act with its error, so the game master records
each agent's slot, an action or a failure, and nothing is lost or guessed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence

from concordia.components.game_master import event_resolution as resolution_lib

_KIND = "crsec-slot"


@dataclasses.dataclass(frozen=True)
class SlotActions:
  """What the agents did in one slot (actions and failures, by name)."""
  actions: Mapping[str, str]
  failed: Mapping[str, str] = dataclasses.field(default_factory=dict)
  # Why each agent asked the model for its action (a plan-driven act's
  # reasons; ["continued"] when it went on with no call); none for an
  # agent whose act gives none.
  reasons: Mapping[str, Sequence[str]] = dataclasses.field(
      default_factory=dict)

  def encode(self) -> str:
    return json.dumps({"kind": _KIND,
                       "actions": dict(sorted(self.actions.items())),
                       "failed": dict(sorted(self.failed.items())),
                       "reasons": {k: list(v) for k, v in
                                   sorted(self.reasons.items())}},
                      ensure_ascii=False)

  @classmethod
  def decode(cls, text: str) -> "SlotActions":
    """From `encode()`'s text, with or without the engine's event tag.

    Raises:
      ValueError: the text is not a slot's actions (a game master used
        with another engine).
    """
    text = text.strip()
    if text.startswith(resolution_lib.PUTATIVE_EVENT_TAG):
      text = text[len(resolution_lib.PUTATIVE_EVENT_TAG):].strip()
    try:
      data = json.loads(text)
    except json.JSONDecodeError:
      data = None
    if not isinstance(data, dict) or data.get("kind") != _KIND:
      raise ValueError("the game master expects the slot engine's actions "
                       "(crsec_concordia.runs.slot_engine.SlotEngine), got "
                       f"{text[:120]!r}")
    return cls(actions={str(k): str(v) for k, v in data["actions"].items()},
               failed={str(k): str(v) for k, v in data["failed"].items()},
               reasons={str(k): [str(r) for r in v] for k, v in
                        dict(data.get("reasons", {})).items()})

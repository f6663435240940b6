"""Reflect: thoughts an agent forms about what it has been observing.

The observation path of spreading (as in Generative Agents' reflection):
thoughts are later read by IdentifyNorm. The original triggered reflection on
summed importance; we reflect every `reflect_every` observed behaviours of
others, which costs one call instead of one importance score per event. The
prompt's order and the thoughts' length are what the small default model
did best with: docs/trials/operations.md#reflect.
"""

from __future__ import annotations

from crsec_concordia.models.base import StructuredModel
from crsec_concordia.observations import unplaced
from crsec_concordia.operations.base import (FailureSink, obj,
                                              structured_call, text)
from crsec_concordia.operations.names import REFLECT

OP = REFLECT
SCHEMA = obj({"thoughts": {"type": "array", "items": text(120),
                           "minItems": 1, "maxItems": 3}})


def seen_list(seen: list[str]) -> str:
  """The actions seen, numbered, oldest first; an action's place said once
  in a heading above each run of actions at one place, not on every line
  (a reflection reads dozens of them)."""
  lines, here = [], None
  for i, item in enumerate(seen, 1):
    place, line = unplaced(item)
    if place is not None and place != here:
      lines.append(f"{place}:")
    here = place
    lines.append(f"{i}. {line}")
  return "\n".join(lines)


def prompt(name: str, persona: str, observations: list[str]) -> str:
  """Who reflects first, then what they saw, then the question.

  The persona stays (without it the thoughts were rarely about a deed),
  but not just before the question, where a small model retells it.
  """
  return (
      f"{name}: {persona}\n\n"
      f"What {name} has seen others do recently:\n{seen_list(observations)}\n\n"
      f"thoughts: up to three short insights {name} draws from this about how "
      "people behave here and how they should behave, in the first person.")


def reflect(model: StructuredModel, *, name: str, persona: str,
            observations: list[str],
            on_failure: FailureSink | None) -> list[str] | None:
  answer = structured_call(model, OP, prompt(name, persona, observations),
                           SCHEMA, on_failure=on_failure, max_tokens=160,
                           temperature=0.5)
  return None if answer is None else answer["thoughts"]

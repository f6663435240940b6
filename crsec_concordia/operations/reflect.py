"""Reflect: thoughts an agent forms about what it has been observing.

The observation path of spreading (as in Generative Agents' reflection):
thoughts are later read by IdentifyNorm. The original triggered reflection on
summed importance; we reflect every `reflect_every` observed behaviours of
others, which costs one call instead of one importance score per event.
"""

from __future__ import annotations

from crsec_concordia.operations.base import (FailureSink, numbered, obj,
                                              structured_call, text)

OP = "Reflect"
SCHEMA = obj({"thoughts": {"type": "array", "items": text(120),
                           "minItems": 1, "maxItems": 3}})


def prompt(name: str, persona: str, observations: list[str]) -> str:
  """What happened first, then who reflects on it.

  Every agent sees the same slots, and with its own deeds listed too, the
  agents who reflect after the same slots get the same list, word for
  word: first in the prompt, it is a prefix the server's cache reuses for
  all of them but the first. With the persona first (as before
  2026-11-27) the 10 reflections of the 12-slot café, all in one slot,
  shared 27 to 29 of their 31 to 33 items and the server reused 2% of
  their 11,011 prompt tokens, a tenth of the run's prompt.
  """
  return (
      f"What happened here recently:\n{numbered(observations)}\n\n"
      f"{name}: {persona}\n\n"
      f"thoughts: up to three short insights {name} draws from what happened "
      "about how people behave here and how they should behave, in the "
      "first person.")


def reflect(model, *, name: str, persona: str, observations: list[str],
            on_failure: FailureSink | None) -> list[str] | None:
  answer = structured_call(model, OP, prompt(name, persona, observations),
                           SCHEMA, on_failure=on_failure, max_tokens=160,
                           temperature=0.5)
  return None if answer is None else answer["thoughts"]

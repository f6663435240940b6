"""CreateNorm: a norm entrepreneur writes the personal norms it starts with."""

from __future__ import annotations

from crsec_concordia.operations.base import (NORM_TYPE, NORM_TYPE_HELP, UTILITY,
                                              FailureSink, obj, structured_call,
                                              text)

OP = "CreateNorm"


def schema(count: int) -> dict:
  norm = obj({"content": text(120), "type": NORM_TYPE, "utility": UTILITY})
  return obj({"norms": {"type": "array", "items": norm,
                        "minItems": count, "maxItems": count}})


def prompt(name: str, persona: str, setting: str, count: int) -> str:
  """The person and the place are the only material: no example norms.

  The norms are to come from what the persona cares about in this setting;
  an example in the prompt (of any venue) is what a small model writes.
  """
  return (
      (f"Setting: {setting}\n" if setting else "") +
      f"Person: {name}. {persona}\n\n"
      f"Write the {count} social norms this person holds most strongly for "
      f"this setting: what {name} expects of everyone here, drawn from what "
      f"{name} cares about. Each norm is one short sentence about people in "
      "general (it names nobody), about a different behaviour, and helps "
      "people avoid conflicts with each other.\n"
      "content: the norm.\n"
      f"type: {NORM_TYPE_HELP}\n"
      f"utility: how important the norm is to {name}, from 1 (may be "
      "disregarded) to 100 (must always be followed).")


def create_norm(model, *, name: str, persona: str, setting: str, count: int,
                on_failure: FailureSink | None) -> list[dict] | None:
  """Returns `count` norms as dicts (content, type, utility), or None."""
  answer = structured_call(model, OP, prompt(name, persona, setting, count),
                           schema(count), on_failure=on_failure,
                           max_tokens=90 * count, temperature=0.5)
  return None if answer is None else answer["norms"]

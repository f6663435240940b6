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
  return (
      f"Setting: {setting}\n"
      f"Person: {name}. {persona}\n\n"
      f"Write the {count} social norms this person holds most strongly for "
      "this setting. Each norm is one short sentence about people in general "
      "(it names nobody) and helps people avoid conflicts with each other.\n"
      f"{NORM_TYPE_HELP}\n"
      "Give each an importance (utility) from 1 (may be disregarded) to 100 "
      f"(must always be followed), as {name} sees it.")


def create_norm(model, *, name: str, persona: str, setting: str, count: int,
                on_failure: FailureSink | None) -> list[dict] | None:
  """Returns `count` norms as dicts (content, type, utility), or None."""
  answer = structured_call(model, OP, prompt(name, persona, setting, count),
                           schema(count), on_failure=on_failure,
                           max_tokens=90 * count, temperature=0.5)
  return None if answer is None else answer["norms"]

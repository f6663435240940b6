"""CreateNorm: a norm entrepreneur writes the personal norms it starts with.

The person and the place are the only material: the prompt holds no example
norm (a small model writes the example), and a norm that names its person,
a description of them rather than a norm, is asked for once more. The
trials: docs/trials/operations.md#createnorm.
"""

from __future__ import annotations

from crsec_concordia.models.base import StructuredModel
from crsec_concordia.operations.base import (NORM_TYPE, NORM_TYPE_HELP, UTILITY,
                                              FailureSink, checked_call, obj,
                                              text)
from crsec_concordia.operations.immediate_evaluation import names_person
from crsec_concordia.operations.names import CREATE_NORM
from crsec_concordia.operations.norm_type import settled_type

OP = CREATE_NORM


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


def naming_problem(name: str, norms: list[dict]) -> str | None:
  """What is wrong with norms that name their person (a persona restated,
  "Abigail Chen always leaves a tip ..."), or None."""
  bad = [i + 1 for i, n in enumerate(norms)
         if names_person(n["content"], [name])]
  if not bad:
    return None
  which = ", ".join(map(str, bad))
  return (f"norm {which} names {name}; each norm is about people in general "
          f"and names nobody")


def create_norm(model: StructuredModel, *, name: str, persona: str,
                setting: str, count: int,
                on_failure: FailureSink | None) -> list[dict] | None:
  """Returns `count` norms as dicts (content, type, utility), or None.

  An answer with a norm that names the person is asked for once more,
  saying so; the second answer stands, and a norm in it that still names
  the person is rejected by the caller (NormMemory), not rewritten.
  """
  answer = checked_call(model, OP, prompt(name, persona, setting, count),
                        schema(count), lambda a: naming_problem(name, a["norms"]),
                        on_failure=on_failure, max_tokens=90 * count,
                        temperature=0.5, keep_last=True)
  if answer is None:
    return None
  return [{**n, "type": settled_type(n["content"], n["type"])}
          for n in answer["norms"]]

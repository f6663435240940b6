"""IdentifyNorm: the normative information in a conversation, a notice or
thoughts.

The receiver side of spreading (from a conversation, or from a notice put
up for everyone: an `announce`) and the last step of the observation path
(from thoughts). A norm is a standard of behaviour that
keeps people out of conflict, not a taste or a habit; if there is none the
operation says so and no candidate is made. How the prompt is worded for
a small model: docs/trials/operations.md#identifynorm.
"""

from __future__ import annotations

from crsec_concordia.models.base import StructuredModel
from crsec_concordia.operations.base import (BOOLEAN, NORM_TYPE, NORM_TYPE_HELP,
                                              UTILITY, FailureSink, obj,
                                              checked_call, text)
from crsec_concordia.operations.names import IDENTIFY_NORM
from crsec_concordia.operations.norm_type import settled_type

OP = IDENTIFY_NORM
SCHEMA = obj({"rule": text(120), "is_rule": BOOLEAN, "type": NORM_TYPE,
              "utility": UTILITY})

_SOURCES = {
    "conversation": ("Conversation", "that one speaker asks the other to "
                     "follow or says people should follow"),
    "notice": ("Notice", "that this notice or public message asks people "
               "to follow or says people follow"),
    "thoughts": ("Thoughts", "that these thoughts express"),
}


def prompt(name: str, source_kind: str, source_text: str) -> str:
  """The questions first (a server's prompt cache reuses them across
  agents and slots), the text last.

  Asking for the rule before the yes/no keeps a small model from saying
  "yes" to small talk: it has to write the rule first, or "none". The
  openings offered put "should" and "should not" side by side after the
  same words, so the model takes the polarity from the text, not from the
  frame.
  """
  label, where = _SOURCES[source_kind]
  return (
      f"Read the {label.lower()} below.\n"
      f"rule: the general rule of behaviour {where}, written for everyone, "
      "never naming a person (it starts like \"People should ...\", "
      "\"People should not ...\" or \"People usually ...\", as the text "
      "has it): a standard that "
      "prevents conflict between people, not one person's taste or habit; "
      "or 'none' if the text holds no such rule.\n"
      "is_rule: true if rule is a real rule of behaviour, false if 'none'.\n"
      f"type: {NORM_TYPE_HELP}\n"
      f"utility: how important {name} now thinks the rule is, 1 to 100.\n\n"
      f"{label}:\n{source_text}")


def _says_none(rule: str) -> bool:
  return rule.strip().lower().strip(".") == "none"


def _not_a_sentence(answer: dict) -> str | None:
  """What is wrong with a rule of one word, which says no behaviour (a
  small model wrote "true"), or None ("No smoking." is two)."""
  rule = answer["rule"].strip()
  if not answer["is_rule"] or _says_none(rule) or len(rule.split()) >= 2:
    return None
  return (f"rule \"{rule}\" is not a sentence; write the rule as a sentence, "
          "or 'none'")


def identify_norm(model: StructuredModel, *, name: str, source_kind: str,
                  source_text: str,
                  on_failure: FailureSink | None) -> dict | None:
  """{content, type, utility} if the source holds a norm, else None.

  A failed call is reported through `on_failure` and also returns None: the
  caller cannot and need not tell the two apart, as neither makes a candidate.
  """
  answer = checked_call(model, OP, prompt(name, source_kind, source_text),
                        SCHEMA, _not_a_sentence, on_failure=on_failure,
                        max_tokens=96)
  if answer is None or not answer["is_rule"] or _says_none(answer["rule"]):
    return None
  content = answer["rule"].strip()
  return {"content": content, "type": settled_type(content, answer["type"]),
          "utility": answer["utility"]}

"""DecideToTalk: will an ordinary agent speak up about a conflict?

Entrepreneurs always talk (no call is made for them); an ordinary agent
decides from its personality, so an introvert may let it pass.
"""

from __future__ import annotations

from crsec_concordia.models.base import StructuredModel
from crsec_concordia.operations.base import (BOOLEAN, FailureSink, obj,
                                              structured_call)
from crsec_concordia.operations.names import DECIDE_TO_TALK

OP = DECIDE_TO_TALK
SCHEMA = obj({"talk": BOOLEAN})


def prompt(name: str, persona: str, actor: str, behaviour: str,
           norm: str) -> str:
  return (
      f"{name}: {persona}\n\n"
      f"{name} just saw this: {behaviour}\n"
      f"{name} believes: {norm}\n\n"
      f"talk: given {name}'s personality, would {name} go and talk to {actor} "
      "about it now? true or false.")


def decide_to_talk(model: StructuredModel, *, name: str, persona: str,
                   actor: str, behaviour: str, norm: str,
                   on_failure: FailureSink | None) -> bool | None:
  answer = structured_call(model, OP, prompt(name, persona, actor, behaviour,
                                             norm),
                           SCHEMA, on_failure=on_failure, max_tokens=16,
                           temperature=0.0)
  return None if answer is None else answer["talk"]

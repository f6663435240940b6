"""StatedBelief: the rules one agent says people here follow.

A venue-neutral question (it names no rule, behaviour or topic, so the
answer is the agent's, not the prompt's), asked with the agent's
instructions, persona and most recent memories, never with the norms it
holds: what an agent says is compared with what it holds, so the second
may not be put in its mouth. The answer is a list of short rules; an
empty list is an answer (the agent knows of none). An invalid answer is
asked for once more, then recorded as a failure: no rule is ever made up
for it, and a failure is never read as "states nothing".
"""

from __future__ import annotations

import dataclasses
from typing import Any

from crsec_concordia.interviews.agent_view import Interviewee
from crsec_concordia.interviews.memory_lines import (ANSWER_TOKENS,
                                                      memory_lines)
from crsec_concordia.interviews.questions import DEFAULT_MEMORIES
from crsec_concordia.models.base import StructuredModel
from crsec_concordia.operations.base import checked_call, obj, text
from crsec_concordia.operations.names import STATED_BELIEF

OP = STATED_BELIEF
MAX_RULES = 8
SCHEMA = obj({"rules": {"type": "array", "items": text(200),
                        "minItems": 0, "maxItems": MAX_RULES}})
STATED_QUESTION = ("What rules do people here follow, as you see it? They "
                   "may be written down or unwritten.")


@dataclasses.dataclass(frozen=True)
class Stated:
  """One agent's answer: its rules in order, or its failure."""
  agent: str
  rules: tuple[str, ...]
  error: str  # "" when answered (an empty `rules` is an answer).


def prompt(agent: Interviewee, memories: int = DEFAULT_MEMORIES) -> str:
  """The question as `agent` is asked it (no braces reach the model): its
  latest memories as many as fit one request (memory_lines.py)."""
  head = [agent.instructions, f"About {agent.name}: {agent.persona}"]
  tail = [f'{agent.name} is asked: "{STATED_QUESTION}"',
          f"rules: each rule {agent.name} believes people here follow, "
          f"one short sentence each, in {agent.name}'s own words; an "
          f"empty list if {agent.name} knows of none."]
  lines = [*head,
           *memory_lines(agent, memories, [*head, *tail], ANSWER_TOKENS),
           *tail]
  return "\n".join(lines).replace("{", "(").replace("}", ")")


def _problem(found: dict[str, Any]) -> str | None:
  if any(not r.strip() for r in found["rules"]):
    return "a rule is blank"
  return None


def ask_stated(model: StructuredModel, agent: Interviewee) -> Stated:
  """`agent`'s stated rules, or its failure (the last error seen)."""
  failures: list[str] = []
  found = checked_call(
      model, OP, prompt(agent), SCHEMA, _problem,
      on_failure=lambda f: failures.append(str(f.get("error", ""))),
      max_tokens=ANSWER_TOKENS)
  if found is None:
    return Stated(agent.name, (), failures[-1] if failures
                  else "no valid answer")
  # A rule said twice in one answer (a small model's answer can loop) is
  # one rule stated: counted once, where it was first said.
  return Stated(agent.name, tuple(dict.fromkeys(
      " ".join(r.split()) for r in found["rules"])), "")

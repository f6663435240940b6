"""One interview question to one restored agent: a structured call.

The prompt holds what the questions file's `context` names (the agent's
instructions and persona, its latest memories, the norms it holds) and the
question; the answer is `{answer: str}`, checked like every operation's
(operations/base.py): a blank answer is asked for once more, then recorded
as a failure. No answer is ever made up: a failed question has an empty
answer and its error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from crsec_concordia.interviews.questions import Question, Questionnaire
from crsec_concordia.interviews.agent_view import Interviewee
from crsec_concordia.models.base import StructuredModel
from crsec_concordia.operations.base import checked_call
from crsec_concordia.operations.names import INTERVIEW

OP = INTERVIEW
SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "minLength": 1,
                              "maxLength": 1200}},
    "required": ["answer"],
    "additionalProperties": False,
}


@dataclasses.dataclass(frozen=True)
class Answer:
  agent: str
  question: Question
  answer: str
  error: str  # "" when answered.


def prompt(agent: Interviewee, question: Question,
           questionnaire: Questionnaire) -> str:
  """The question as `agent` is asked it (no braces reach the model)."""
  lines: list[str] = []
  if "persona" in questionnaire.context:
    lines += [agent.instructions, f"About {agent.name}: {agent.persona}"]
  if "memories" in questionnaire.context and questionnaire.memories:
    recent = agent.memories[-questionnaire.memories:]
    lines.append(f"What {agent.name} remembers (oldest first):")
    lines += [f"- {m}" for m in recent] or ["- nothing yet"]
  if "norms" in questionnaire.context:
    lines.append(f"The norms {agent.name} holds:")
    lines += [f"- {n}" for n in agent.norms] or ["- none"]
  lines += [f'Someone asks {agent.name}: "{question.text}"',
            f"Reply as {agent.name}, in the first person, in a few "
            "sentences.",
            f"answer: what {agent.name} says"]
  return "\n".join(lines).replace("{", "(").replace("}", ")")


def _blank(found: dict[str, Any]) -> str | None:
  return "the answer is blank" if not found["answer"].strip() else None


def ask_question(model: StructuredModel, agent: Interviewee,
                 question: Question, questionnaire: Questionnaire) -> Answer:
  """`agent`'s answer to `question`, or its failure."""
  failures: list[str] = []
  found = checked_call(
      model, OP, prompt(agent, question, questionnaire), SCHEMA, _blank,
      on_failure=lambda f: failures.append(str(f.get("error", ""))),
      max_tokens=400)
  if found is None:
    return Answer(agent.name, question, "",
                  failures[-1] if failures else "no valid answer")
  return Answer(agent.name, question, " ".join(found["answer"].split()), "")

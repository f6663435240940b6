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
from crsec_concordia.interviews.memory_lines import (ANSWER_TOKENS,
                                                      memory_lines)
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
  """The question as `agent` is asked it (no braces reach the model): its
  latest memories as many as fit one request (memory_lines.py)."""
  head: list[str] = []
  if "persona" in questionnaire.context:
    head += [agent.instructions, f"About {agent.name}: {agent.persona}"]
  norms: list[str] = []
  if "norms" in questionnaire.context:
    norms.append(f"The norms {agent.name} holds:")
    norms += [f"- {n}" for n in agent.norms] or ["- none"]
  tail = [f'Someone asks {agent.name}: "{question.text}"',
          f"Reply as {agent.name}, in the first person, in a few "
          "sentences.",
          f"answer: what {agent.name} says"]
  recalled: list[str] = []
  if "memories" in questionnaire.context and questionnaire.memories:
    recalled = memory_lines(agent, questionnaire.memories,
                            [*head, *norms, *tail], ANSWER_TOKENS)
  lines = [*head, *recalled, *norms, *tail]
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
      max_tokens=ANSWER_TOKENS)
  if found is None:
    return Answer(agent.name, question, "",
                  failures[-1] if failures else "no valid answer")
  return Answer(agent.name, question, " ".join(found["answer"].split()), "")

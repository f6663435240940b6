"""What an act asks for: its prompt, the answer's schema, length and reply line.

Kept apart from StructuredAct (structured_act.py), which decides when to
ask and checks what comes back: the wording asked for is the part tried
and measured on the small model (docs/trials/acting-and-planning.md), and
changes on its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from concordia.typing import entity as entity_lib

from crsec_concordia.operations.base import obj, text

# An action or a line of talk: "one or two sentences" fits. Every other
# agent, the referee and the observers' operations read each action, so a
# rambling one costs its length many times over; an answer the limit cuts
# keeps its whole sentences.
MAX_ANSWER_CHARS = 240
TEXT_SCHEMA = obj({"answer": text(MAX_ANSWER_CHARS)})
# An occasion in the slot a task begins: the occasion now, the task next
# (_acting_reasons.py, "written ahead").
TWO_SCHEMA = obj({"answer": text(MAX_ANSWER_CHARS),
                  "next": text(MAX_ANSWER_CHARS)})
# A component with nothing to say still returns its label (Concordia's
# ObservationToMemory gives ":"); a bare label line is left out.
_BARE_LABEL = re.compile(r"(?:[^\n]*:)?")
_SENTENCE_END = re.compile(r"[.!?](?:[\"')\u201d]*)(?=\s)")

REPLY = {
    # A conversation turn wants spoken words: with the action wording a
    # small model narrates, and the two sides echo each other's narration.
    "speech": ("Reply as {name}, in character: only what {name} says "
               "aloud, in the first person, one or two sentences."),
    # Not phrased as "answer: <description>", which a small model copies
    # into its answer; "true to ... own habits", or with recent events in
    # view it copies another agent's action.
    "action": ("Reply as {name}, in character and in the third person: "
               "one or two concrete sentences starting with \"{name}\", "
               "saying what {name} does or says, true to {name}'s own "
               "habits and plan."),
    "two": ("Reply as {name}, in character and in the third person, true "
            "to {name}'s own habits and plan, in two parts:\n"
            "answer: one or two concrete sentences starting with "
            "\"{name}\", saying what {name} does or says now.\n"
            "next: one or two concrete sentences starting with \"{name}\", "
            "saying what {name} does after that, for {name}'s task now."),
}


def whole_sentences(answer: str, limit: int = MAX_ANSWER_CHARS) -> str:
  """`answer` without the unfinished sentence the length limit cut off
  (if a whole one comes before it)."""
  answer = answer.strip()
  if len(answer) < limit - 2 or answer[-1:] in ".!?\"'\u201d":
    return answer
  ends = [m.end() for m in _SENTENCE_END.finditer(answer)]
  return answer[:ends[-1]] if ends else answer


def context_text(contexts: Mapping[str, str], order: Sequence[str]) -> str:
  """The components' contexts in `order`, bare labels left out."""
  return "\n".join(contexts[k].strip() for k in order
                   if k in contexts and not _BARE_LABEL.fullmatch(
                       contexts[k].strip()))


def question(context: str, news: str, call: str,
             action_spec: entity_lib.ActionSpec, *, name: str, kind: str
             ) -> tuple[str, Mapping[str, Any]]:
  """(the prompt, the answer's schema): the context, what is new, the call
  to action and, for free text, the reply line of `kind` (REPLY)."""
  prompt = f"{context}\n\n" + (f"{news}\n" if news else "") + f"{call}\n"
  if action_spec.output_type == entity_lib.OutputType.CHOICE:
    return prompt, obj({"answer": {"type": "string",
                                   "enum": list(action_spec.options)}})
  if action_spec.output_type == entity_lib.OutputType.FLOAT:
    return prompt, obj({"answer": {"type": "number"}})
  prompt += REPLY[kind].format(name=name)
  return prompt, TWO_SCHEMA if kind == "two" else TEXT_SCHEMA

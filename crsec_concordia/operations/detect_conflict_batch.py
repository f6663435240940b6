"""DetectConflict batched: the distinct questions of a place's slot in one call.

A question is a deed against the one rule it is most about
(detect_conflict.py); the questions of one place in one slot share the
instructions, and each is independent of the others. With a holder's
`batched` switch (ConflictDetector, the agent's `conflicts_batched`
param) they are asked together (detect_conflict_sharing.py gathers them
across the slot's observers): the instructions stated once, each question
under an id of its own ("q1", "q2", ...), and one answer keyed by those
ids, each quote-first then the verdict, as one question is asked. The keys
are required properties in the prompt's order, so a grammar makes the
model answer every question once. Today's guarantees hold per question: a
breach needs a quote, and in a batch the quote must be words of THAT
question's deed (`repetition.quotes`, the referee's evidence rule), so an
answer that quotes its neighbour's deed breaks nothing. An invalid answer
(a longer one than a single question's, likelier cut short) is asked once
more, then recorded as a failure for each of its questions, never filled
in. A slot's questions must fit one request (the embedded server's
context), so many are cut into calls in the order given
(models/request_budget.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from crsec_concordia import repetition
from crsec_concordia.models.base import StructuredModel, StructuredOutputError
from crsec_concordia.models.request_budget import (CONTEXT_TOKENS, in_batches,
                                                   prompt_tokens)
from crsec_concordia.operations.base import has_evidence, obj, text
from crsec_concordia.operations.detect_conflict import (BREAKS, FOLLOWS,
                                                        OP, TOKENS_PER_ITEM,
                                                        UNRELATED,
                                                        VERDICT_SCHEMA,
                                                        Judgement, Observed)
from crsec_concordia.rundir.format import FAILURE

# Records the failure of one question: (its index in the call, the record).
QuestionFailure = Callable[[int, Mapping[str, Any]], None]
# Tries per call: the first answer and one more after an invalid one.
TRIES = 2


def question_id(index: int) -> str:
  """The id of a call's `index`th question (from 0)."""
  return f"q{index + 1}"


def schema(items: Sequence[Observed]) -> dict:
  entry = obj({"evidence": text(200), "verdict": VERDICT_SCHEMA})
  return obj({question_id(k): entry for k in range(len(items))})


def prompt(items: Sequence[Observed]) -> str:
  """The instructions once, then each question under its id: what was
  seen first and its rule after it, as one question is asked."""
  lines = ["Some people hold rules about how people should behave. Each "
           "question below has an id and shows one thing a person did, with "
           "the rule it is most about. Answer every question on its own: "
           "the other questions say nothing about it.", ""]
  for k, item in enumerate(items):
    lines.append(f"[{question_id(k)}] {item.actor} ({item.place}): "
                 f"\"{item.behaviour}\"")
    if item.focus and item.focus != item.behaviour:
      lines.append(f"The part of it nearest the rule: \"{item.focus}\"")
    lines.append(f"Rule: {item.norm.content}")
    lines.append("")
  lines.append(
      "For each id, in order:\n"
      "evidence: quote the words of what that person did in that same "
      "question that the rule is about, or \"none\" if the rule is about "
      "something they did not do.\n"
      f"verdict: {BREAKS} if those words go against the rule, {FOLLOWS} if "
      f"they keep it, {UNRELATED} if evidence is none.")
  return "\n".join(lines)


def answer_tokens(count: int) -> int:
  """The answer budget of `count` questions: one question's each."""
  return TOKENS_PER_ITEM * count + 16


def tokens(items: Sequence[Observed]) -> int:
  """A call's prompt and answers, in tokens (counted high, as a request
  must fit: models/request_budget.py)."""
  return prompt_tokens(prompt(items)) + answer_tokens(len(items))


def questions_in_calls(items: Sequence[Observed],
                       budget: int = CONTEXT_TOKENS) -> list[list[Observed]]:
  """`items` cut into calls that each fit `budget`, in their order."""
  return in_batches(items, tokens, budget)


def quoted(evidence: str, item: Observed) -> bool:
  """Whether `evidence` is words of the item's own deed."""
  return has_evidence(evidence) and repetition.quotes(
      evidence, item.behaviour, names=[item.actor])


def detect_conflicts_batched(model: StructuredModel,
                             items: Sequence[Observed],
                             on_failure: QuestionFailure | None
                             ) -> list[Judgement | None]:
  """A judgement per item (in order) from one call; None for each item
  when the call gave no valid answer twice (each recorded through
  `on_failure` with the question's index). An endpoint's own failure is
  raised, as a single question's is."""
  if not items:
    return []
  asked, answer_schema = prompt(items), schema(items)
  error = None
  for _ in range(TRIES):
    try:
      answer = model.sample_json(asked, answer_schema,
                                 max_tokens=answer_tokens(len(items)),
                                 temperature=0.0)
      break
    except StructuredOutputError as e:
      error = e
  else:
    if on_failure is not None:
      for k, item in enumerate(items):
        on_failure(k, {"kind": FAILURE, "op": OP, "error": str(error),
                       "raw": error.raw[:2000], "question": question_id(k),
                       "actor": item.actor, "norm": item.norm.content,
                       "batched": len(items)})
    return [None for _ in items]
  judgements: list[Judgement | None] = []
  for k, item in enumerate(items):
    one = answer[question_id(k)]
    evidence = " ".join(one["evidence"].split())
    judgements.append(Judgement(
        item, one["verdict"] == BREAKS and quoted(evidence, item), evidence))
  return judgements

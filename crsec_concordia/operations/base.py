"""What every CRSEC operation shares: one schema-constrained call, no defaults.

An operation either returns the model's validated answer or `None` after
reporting a `failure` record (operation name, error, raw text) through the
caller's `on_failure`. It never substitutes an answer: the original code
counted a fallback string as "yes", which inflated conflicts and adoption.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from crsec_concordia.models.base import StructuredModel, StructuredOutputError
from crsec_concordia.rundir.format import FAILURE

FailureSink = Callable[[Mapping[str, Any]], None]


def structured_call(
    model: StructuredModel,
    op: str,
    prompt: str,
    schema: Mapping[str, Any],
    *,
    on_failure: FailureSink | None,
    max_tokens: int = 256,
    temperature: float = 0.2,
) -> dict[str, Any] | None:
  """Asks `model` (a StructuredLanguageModel or tagged view) for `schema`."""
  try:
    return model.sample_json(prompt, schema, max_tokens=max_tokens,
                             temperature=temperature)
  except StructuredOutputError as e:
    if on_failure is not None:
      on_failure({"kind": FAILURE, "op": op, "error": str(e),
                  "raw": e.raw[:2000]})
    return None


def checked_call(
    model: StructuredModel,
    op: str,
    prompt: str,
    schema: Mapping[str, Any],
    problem: Callable[[dict[str, Any]], str | None],
    *,
    on_failure: FailureSink | None,
    max_tokens: int = 256,
    temperature: float = 0.2,
    keep_last: bool = False,
) -> dict[str, Any] | None:
  """`structured_call`, then a check the schema cannot express.

  `problem` says what is wrong with a valid answer (None: nothing). Such an
  answer is asked for once more, the problem said, then recorded as a
  failure; never repaired or replaced (a plan hour whose activity is only a
  clock, "10:00-10:15", would have the agent act out a time). With
  `keep_last`, the second answer is returned problem and all, for a caller
  that rejects the wrong parts one by one and records them (CreateNorm:
  one norm of five naming its person loses that norm, not the others).
  """
  wrong, answer = None, None
  for attempt in range(2):
    asked = prompt if attempt == 0 else (
        f"{prompt}\nYour answer did not work: {wrong}. Answer again.")
    answer = structured_call(model, op, asked, schema, on_failure=on_failure,
                             max_tokens=max_tokens, temperature=temperature)
    if answer is None:
      return None
    wrong = problem(answer)
    if wrong is None or (keep_last and attempt == 1):
      return answer
  if on_failure is not None:
    on_failure({"kind": FAILURE, "op": op, "error": wrong,
                "raw": str(answer)[:2000]})
  return None


def obj(properties: Mapping[str, Any], required: list[str] | None = None
        ) -> dict[str, Any]:
  """A closed JSON object schema whose keys are all required, in order."""
  return {"type": "object", "additionalProperties": False,
          "properties": dict(properties),
          "required": list(required if required is not None else properties)}


def text(max_length: int = 160) -> dict[str, Any]:
  return {"type": "string", "minLength": 1, "maxLength": max_length}


def integer(lo: int, hi: int) -> dict[str, Any]:
  return {"type": "integer", "minimum": lo, "maximum": hi}


BOOLEAN = {"type": "boolean"}
NORM_TYPE = {"type": "string", "enum": ["injunctive", "descriptive"]}
UTILITY = integer(1, 100)

# Sentence frames, never example norms: a small model copies examples
# (docs/trials/operations.md#createnorm; tests/test_prompt_leak.py).
NORM_TYPE_HELP = (
    "'injunctive' if it tells people what they must, should or must not do "
    "(a rule or a prohibition, worded like \"Do not ...\", \"No ...\" or "
    "\"People should ...\"); 'descriptive' if it tells what most people "
    "usually do, without requiring it (a custom, worded like \"People "
    "usually ...\" or \"Most people ...\").")


def has_evidence(evidence: str) -> bool:
  """Whether a model quoted anything ("none", "n/a", "nothing" are not).

  Asked to quote the words of a behaviour before judging it, small models
  still give a verdict beside "none": the quote, not the verdict, decides.
  """
  return evidence.strip(" .\"'").lower() not in (
      "", "none", "n/a", "null", "nothing", "no evidence")


def numbered(items: list[str]) -> str:
  return "\n".join(f"{i}. {item}" for i, item in enumerate(items, 1))

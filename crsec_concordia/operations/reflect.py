"""Reflect: thoughts an agent forms about what it has been observing.

The observation path of spreading (as in Generative Agents' reflection):
thoughts are later read by IdentifyNorm. The original triggered reflection on
summed importance; we reflect every `reflect_every` observed behaviours of
others, which costs one call instead of one importance score per event.
"""

from __future__ import annotations

from crsec_concordia.operations.base import (FailureSink, numbered, obj,
                                              structured_call, text)

OP = "Reflect"
SCHEMA = obj({"thoughts": {"type": "array", "items": text(120),
                           "minItems": 1, "maxItems": 3}})


def prompt(name: str, persona: str, observations: list[str]) -> str:
  """Who reflects first, then what they saw, then the question.

  Tried and dropped (2026-11-27): what happened first, the agent's own
  deeds listed too, then the persona and the question. All 10 agents of
  the 12-slot café reflect in one slot on nearly the same list (27 to 29
  of their 31 to 33 items), so the list would be a prefix the server
  reuses: Reflect's reuse went from 2% to 64% and the run's from 42% to
  50% (seed 1, `bench/prompt_reuse.py`). But the 1.5B model then retold
  the persona read just before the question ("Tamara Rodriguez is a quiet
  and careful person who saves every cent..."): 5 of the 10 agents'
  thoughts held five or more words of the persona in a row, against 1 of
  10 in the run before, and the thoughts are the observation path's
  input. With each thought after the numbers of the events it rests on
  (evidence first), it cited runs of numbers and still retold the
  persona; with the question between the list and the persona, it retold
  the persona in 9 of 10 (the run's 10 prompts replayed). With a retold
  thought (five words of the persona in a row) asked for once more,
  saying it retells the description and not what happened
  (2026-11-27, the same 10 prompts): 5 of 10 retold at first and 5 of 10
  after the second ask, 4 of them word for word the first answer again
  (2 of 10 in the shipped order, in the same replay).

  Also tried (2026-11-27, the same 10 prompts replayed, each followed by
  IdentifyNorm): thoughts of up to 200 characters, since 15 of the run's
  22 thoughts stop at 120, mid-sentence. At 200 the 1.5B model wrote
  until 200 as well (13 of 16 thoughts cut; 14 of 22 at 120 in the same
  replay), so the limit is kept; and
  with the persona left out (the paper's Reflect(observations)) it retold
  no persona, but its thoughts were rarely about a deed ("people should
  be respectful and considerate"): 2 of 10 named one, against 5 of 10
  with the persona.
  """
  return (
      f"{name}: {persona}\n\n"
      f"What {name} has seen others do recently:\n{numbered(observations)}\n\n"
      f"thoughts: up to three short insights {name} draws from this about how "
      "people behave here and how they should behave, in the first person.")


def reflect(model, *, name: str, persona: str, observations: list[str],
            on_failure: FailureSink | None) -> list[str] | None:
  answer = structured_call(model, OP, prompt(name, persona, observations),
                           SCHEMA, on_failure=on_failure, max_tokens=160,
                           temperature=0.5)
  return None if answer is None else answer["thoughts"]

"""Test doubles for your own compositions: a schema-answering model, a
deterministic embedder.

To test a composition of CRSEC's prefabs or components (your own game
master, your own components beside them) without a model server or
torch, build it with these two in place of your model and embedder:

  from crsec_concordia.testing import SchemaModel, bag_of_words

  model = SchemaModel()                       # a Concordia LanguageModel
  bank = basic_associative_memory.AssociativeMemoryBank(
      sentence_embedder=bag_of_words)
  agent = prefab.build(model, bank)

`SchemaModel` is a plain Concordia `LanguageModel` (text in, text out), so
it goes through the same adapter as yours: every CRSEC operation states
its JSON schema in the prompt, and the model answers with the plainest
value valid for it, except that it judges every deed it is shown a breach
of the rule shown with it, quoting the deed (so conflicts, the talk they
start and the norms learnt from it all happen), and splits a plan's block
into hour-long tasks; asked what rules people follow (the stated-belief
question every run asks at its start and end), it states none, unless
`stating(...)` says which rules each agent states. `rules` put your own
answers first: a regular
expression on the prompt and an answer (a dict, a string, or a function of
the prompt and the schema). `prompts` keeps every prompt asked, in order.

On the command line, `--model-factory
crsec_concordia.testing:scripted_model_factory` (a SchemaModel) and
`--embedder crsec_concordia.testing:bag_of_words` try every command with
no model and no torch at all:

  crsec run --model-factory crsec_concordia.testing:scripted_model_factory \
      --embedder crsec_concordia.testing:bag_of_words --steps 2

The agents then do what the plainest valid answers make them do: a run
to see the command line work, not one to read results from.

`bag_of_words` hashes each word into one of 63 directions and adds one
direction every text shares, so any two texts are at least somewhat alike
(cosine about 0.3 or more): every similarity gate lets a judgement through,
and the same text always gives the same vector. It is a stand-in for
tests, not an embedder to measure with: its scale is not MiniLM's
(crsec_concordia/embedding/identity.py).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from concordia.language_model import language_model

from crsec_concordia.interviews.stated import STATED_QUESTION

# How the structured adapter states a schema to a text-only model.
_SCHEMA = re.compile(r"JSON schema:\n(\{.*?\})(?:\n\n|$)", re.S)
# The block DecomposePlan asks about.
_BLOCK = re.compile(r"about to begin (\d\d):(\d\d)-(\d\d):(\d\d)")
# DetectConflict's prompt, and how it shows each deed.
DETECT_CONFLICT_PROMPT = r"holds some rules about how people should behave"
_DEED = re.compile(r'^(.+?) \([^)]*\): "(.*)"$', re.M)

Answer = Mapping[str, Any] | str | Callable[[str, Mapping[str, Any]], Any]
# The stated-belief question (interviews/stated.py), and whom it asks.
STATED_BELIEF_PROMPT = re.escape(STATED_QUESTION)
_ASKED = re.compile(r'\n(.+?) is asked: "' + STATED_BELIEF_PROMPT)


def plainest(schema: Mapping[str, Any]) -> Any:
  """The plainest value valid for `schema` (the shapes operations use):
  the first choice, the least count, a short phrase."""
  if "enum" in schema:
    return schema["enum"][0]
  kind = schema.get("type")
  if kind == "object":
    return {k: plainest(v) for k, v in schema["properties"].items()}
  if kind == "array":
    return [plainest(schema["items"])] * int(schema.get("minItems", 0))
  if kind == "integer":
    return int(schema.get("minimum", 1))
  if kind == "number":
    return 0.5
  if kind == "boolean":
    return False
  return "reads a book"[:int(schema.get("maxLength", 12))]


def hour_tasks(prompt: str, activity: str = "writes a poem"
               ) -> dict[str, Any] | None:
  """A DecomposePlan answer: the asked block in hour-long tasks (None if
  the prompt asks for no block)."""
  found = _BLOCK.search(prompt)
  if found is None:
    return None
  sh, sm, eh, em = map(int, found.groups())
  start, end = sh * 60 + sm, eh * 60 + em

  def clock(t: int) -> str:
    return f"{t // 60:02d}:{t % 60:02d}"

  return {"tasks": [{"start": clock(t), "end": clock(min(end, t + 60)),
                     "activity": activity}
                    for t in range(start, end, 60)]}


def every_deed_breaks(prompt: str, schema: Mapping[str, Any]
                      ) -> dict[str, Any]:
  """A DetectConflict answer: each person's deed breaks its rule, the deed
  quoted as evidence."""
  deeds = dict(_DEED.findall(prompt))
  limit = int(schema["properties"][next(iter(schema["properties"]))]
              ["properties"]["evidence"].get("maxLength", 200)) if (
                  schema.get("properties")) else 200
  return {person: {"evidence": deeds.get(person, "none")[:limit],
                   "verdict": "breaks"}
          for person in schema.get("properties", {})}


def stating(rules: Mapping[str, Sequence[str]] | Sequence[str]
            ) -> tuple[str, Callable[[str, Mapping[str, Any]], Any]]:
  """A rule for a scripted model (SchemaModel's `rules`, ScriptedModel's
  `add_rule`): the stated-belief question answered with `rules` (one list
  for every agent, or a list per agent by name; an agent not named states
  none). Put it first, so that a test's agents state, say, a target
  before they have met anyone."""
  def answer(prompt: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    del schema
    if isinstance(rules, Mapping):
      asked = _ASKED.search(prompt)
      return {"rules": list(rules.get(asked.group(1), ()) if asked else ())}
    return {"rules": list(rules)}
  return STATED_BELIEF_PROMPT, answer


class SchemaModel(language_model.LanguageModel):
  """A Concordia LanguageModel answering every CRSEC operation's schema."""

  def __init__(self, rules: Sequence[tuple[str, Answer]] = (),
               keep_prompts: bool = True):
    """`rules` answer first; `keep_prompts`: keep every prompt in
    `prompts` (a long run on the command line keeps none)."""
    self.prompts: list[str] = []
    self._keep = keep_prompts
    self._rules = [(re.compile(p, re.S | re.I), a) for p, a in rules]
    self._rules.append((re.compile(DETECT_CONFLICT_PROMPT), every_deed_breaks))

  def answer(self, prompt: str, schema: Mapping[str, Any]) -> Any:
    """The value answered for `prompt`, whose schema is `schema`."""
    for pattern, answer in self._rules:
      if pattern.search(prompt):
        return answer(prompt, schema) if callable(answer) else answer
    tasks = hour_tasks(prompt)
    return tasks if tasks is not None else plainest(schema)

  def sample_text(self, prompt: str, **kwargs) -> str:
    del kwargs
    if self._keep:
      self.prompts.append(prompt)
    found = _SCHEMA.search(prompt)
    if found is None:  # Not a CRSEC operation: a plain sentence.
      return "reads a book."
    answer = self.answer(prompt, json.loads(found.group(1)))
    return answer if isinstance(answer, str) else json.dumps(answer)

  def sample_choice(self, prompt: str, responses: Sequence[str], *,
                    seed: int | None = None
                    ) -> tuple[int, str, Mapping[str, Any]]:
    del prompt, seed
    return 0, responses[0], {}


def scripted_model_factory() -> SchemaModel:
  """A model for `--model-factory`: the command line with no model."""
  return SchemaModel(keep_prompts=False)


def bag_of_words(text: str) -> np.ndarray:
  """Hashed words and a direction every text shares (64 numbers)."""
  vector = np.zeros(64, dtype=np.float32)
  vector[0] = 2.0
  for word in re.findall(r"[a-z]+", text.lower()):
    vector[1 + zlib.crc32(word.encode()) % 63] += 1.0
  return vector

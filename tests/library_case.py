"""The README's composition with a model and an embedder of the user's own.

A Concordia `LanguageModel` written here (not the project's ScriptedModel:
it only samples text, as a user's model does, so the adapter states the
schemas) and a plain embedding function: hashed words plus a shared
direction, so that a behaviour is near enough to every rule for the model
to judge it. Used by tests/test_library_use.py and, in a venv with the core
alone, by scripts/check_core_install.sh (so nothing here needs pytest).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from concordia.language_model import language_model

from examples import compose_normative_agent as example

_SCHEMA = re.compile(r"JSON schema:\n(\{.*?\})(?:\n\n|$)", re.S)
_BLOCK = re.compile(r"about to begin (\d\d):(\d\d)-(\d\d):(\d\d)")


def _filled(schema: Mapping[str, Any]) -> Any:
  """The plainest value valid for `schema` (the shapes operations use)."""
  if "enum" in schema:
    return schema["enum"][0]
  kind = schema.get("type")
  if kind == "object":
    return {k: _filled(v) for k, v in schema["properties"].items()}
  if kind == "array":
    return [_filled(schema["items"])] * int(schema.get("minItems", 0))
  if kind == "integer":
    return int(schema.get("minimum", 1))
  if kind == "number":
    return 0.5
  if kind == "boolean":
    return False
  return "reads a book"[:int(schema.get("maxLength", 12))]


def _tasks(prompt: str) -> dict[str, Any]:
  """A DecomposePlan answer: the block in hour-long tasks."""
  sh, sm, eh, em = map(int, _BLOCK.search(prompt).groups())
  start, end = sh * 60 + sm, eh * 60 + em

  def clock(t: int) -> str:
    return f"{t // 60:02d}:{t % 60:02d}"

  return {"tasks": [{"start": clock(t), "end": clock(min(end, t + 60)),
                     "activity": "writes a poem"}
                    for t in range(start, end, 60)]}


class UsersModel(language_model.LanguageModel):
  """Text in, text out: judges every behaviour it is shown a breach."""

  def __init__(self):
    self.prompts: list[str] = []

  def sample_text(self, prompt: str, **kwargs) -> str:
    del kwargs
    self.prompts.append(prompt)
    schema = json.loads(_SCHEMA.search(prompt).group(1))
    if "holds some rules about how people should behave" in prompt:
      answer = {person: {"evidence": "lights a cigarette",
                         "verdict": "breaks"}
                for person in schema["properties"]}
    elif _BLOCK.search(prompt):
      answer = _tasks(prompt)
    elif "Reply as Carlos Gomez" in prompt:
      answer = {k: "Carlos Gomez asks Tom to smoke outside."
                for k in schema["properties"]}
    else:
      answer = _filled(schema)
    return json.dumps(answer)

  def sample_choice(self, prompt: str, responses: Sequence[str], *,
                    seed: int | None = None
                    ) -> tuple[int, str, Mapping[str, Any]]:
    del prompt, seed
    return 0, responses[0], {}


def plain_embedder(text: str) -> np.ndarray:
  """Hashed words and a direction every text shares."""
  vector = np.zeros(64, dtype=np.float32)
  vector[0] = 2.0
  for word in re.findall(r"[a-z]+", text.lower()):
    vector[1 + zlib.crc32(word.encode()) % 63] += 1.0
  return vector


def run() -> list[dict[str, Any]]:
  """The README's composition; the conflicts Carlos recorded."""
  return example.conflicts(example.compose(UsersModel(), plain_embedder))


if __name__ == "__main__":
  found = run()
  assert found and found[0]["actor"] == "Tom Gomez", found
  print(f"library use: a conflict recorded: {found[0]['actor']} against "
        f"{found[0]['norm']!r}")

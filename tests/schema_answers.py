"""Schema-valid, varied JSON answers for a fake OpenAI-compatible server.

Benchmarks and tests that need a whole society to run against a fake
endpoint cannot script every prompt; this answers any request whose
`response_format` carries a JSON schema with a random instance of it,
seeded from the request's messages (the same prompt gets the same answer),
with words drawn from a neutral vocabulary so that answers differ from one
another as real ones do (an agent's action is not another's copy).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Mapping
from typing import Any

import rstr

from tests.fake_openai import Reply, Request

WORDS = (
    "morning window table chair light paper letter garden river bread "
    "music friend book story quiet bright slowly carefully walks reads "
    "writes listens waits opens closes carries builds counts notes plans "
    "visits answers sketches folds sorts measures paints repairs waters "
    "the a small large green blue old new warm cold second simple careful "
    "near across under beside after before around while with about into"
).split()


def _words(rng: random.Random, lo: int, hi: int) -> str:
  return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def instance(schema: Mapping[str, Any], rng: random.Random) -> Any:
  """A random value valid for `schema` (the subset our operations use)."""
  if "enum" in schema:
    return rng.choice(list(schema["enum"]))
  kind = schema.get("type")
  if kind == "object":
    return {key: instance(sub, rng)
            for key, sub in schema.get("properties", {}).items()}
  if kind == "array":
    lo = int(schema.get("minItems", 0))
    hi = int(schema.get("maxItems", lo + 2))
    return [instance(schema.get("items", {}), rng)
            for _ in range(rng.randint(lo, max(lo, min(hi, lo + 2))))]
  if kind == "string":
    if "pattern" in schema:
      return rstr.Rstr(rng).xeger(schema["pattern"])
    lo = max(1, int(schema.get("minLength", 1)))
    text = _words(rng, 4, 10).capitalize() + "."
    text = text[:int(schema.get("maxLength", 400))]
    return text if len(text) >= lo else text + "x" * (lo - len(text))
  if kind == "integer":
    return rng.randint(int(schema.get("minimum", 0)),
                       int(schema.get("maximum", 100)))
  if kind == "number":
    return rng.uniform(float(schema.get("minimum", 0)),
                       float(schema.get("maximum", 1)))
  if kind == "boolean":
    return rng.random() < 0.5
  raise ValueError(f"no instance for schema {schema!r}")


def request_schema(body: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
  """The JSON schema a chat request asks for, in any of the three forms."""
  fmt = (body or {}).get("response_format") or {}
  if fmt.get("type") == "json_schema":
    return fmt["json_schema"]["schema"]
  if fmt.get("type") == "json_object":
    return fmt.get("schema")
  return None


def responder(latency: float = 0.0, seed: int = 0
              ) -> Callable[[Request], Reply]:
  """A FakeOpenAI responder answering every request after `latency` s."""
  def respond(request: Request) -> Reply:
    body = request.body or {}
    messages = json.dumps(body.get("messages"), sort_keys=True)
    digest = hashlib.sha256(f"{seed}:{messages}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    schema = request_schema(body)
    content = (json.dumps(instance(schema, rng)) if schema is not None
               else _words(rng, 4, 10))
    return Reply(content, delay=latency,
                 prompt_tokens=max(1, len(messages) // 4),
                 completion_tokens=max(1, len(content) // 4))
  return respond

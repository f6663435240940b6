"""The scripted café behind a real HTTP endpoint that can go down.

A run against an endpoint must meet the endpoint's failures (connection
refused, 5xx, 429) through the real `openai` client, yet end with the
records of a run on the scripted model: so the fake server
(tests/fake_openai.py) answers each request as the scripted model answers
its prompt, with the scripted model's token counts, and `Outage` makes it
answer 503 from its Nth chat request on for a while (or for good).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from crsec_concordia.models import OpenAICompatibleModel
from crsec_concordia.models.scripted import ScriptedModel
from tests.fake_openai import FakeOpenAI, Reply, Request, error


def _prompt(request: Request) -> tuple[str, dict[str, Any] | None]:
  body = request.body or {}
  prompt = body["messages"][-1]["content"]
  response_format = body.get("response_format") or {}
  schema = (response_format.get("json_schema") or {}).get("schema")
  return prompt, schema


def scripted_reply(model: ScriptedModel, request: Request) -> Reply:
  """The scripted model's answer to the request, as a chat completion
  (a run's probe, one token long, gets one)."""
  if (request.body or {}).get("max_tokens") == 1:
    return Reply(content="pong", prompt_tokens=1, completion_tokens=1)
  prompt, schema = _prompt(request)
  answer = model._answer(prompt, schema)  # pylint: disable=protected-access
  if schema is not None and not isinstance(answer, str):
    content = json.dumps(answer)
  else:
    content = answer if isinstance(answer, str) else json.dumps(answer)
  return Reply(content=content, prompt_tokens=len(prompt.split()),
               completion_tokens=1)


class Outage:
  """From the `after`-th chat request on, every request (probes too) is
  answered 503 for `seconds` (None: for good) after the first of them."""

  def __init__(self, after: int, seconds: float | None):
    self.after, self.seconds = after, seconds
    self.began: float | None = None
    self.refused = 0
    self._count = 0
    self._lock = threading.Lock()

  def down(self) -> bool:
    with self._lock:
      self._count += 1
      if self._count < self.after:
        return False
      now = time.monotonic()
      if self.began is None:
        self.began = now
      if self.seconds is not None and now - self.began >= self.seconds:
        return False
      self.refused += 1
      return True


def serve(model: ScriptedModel, outage: Outage | None = None) -> FakeOpenAI:
  """A started fake server answering as `model`, down as `outage` says."""
  fake = FakeOpenAI()

  def respond(request: Request) -> Reply:
    if outage is not None and outage.down():
      return error(503, "the server is down for maintenance")
    return scripted_reply(model, request)

  fake.responder = respond
  return fake.start()


def client(fake: FakeOpenAI, *, retries: int = 1,
           timeout: float = 10.0) -> OpenAICompatibleModel:
  """A model on the fake server, retrying little (tests stay short)."""
  return OpenAICompatibleModel(fake.base_url, "none", "fake-model", seed=1,
                               max_retries=retries, timeout=timeout)

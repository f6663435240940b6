"""A society in which nothing new happens: the cost of a quiet slot.

Plan-driven agents ask the model only for a reason (a task begins, an
occasion, a conversation ended, something their components found new, a
failed turn). This module gives society_scaling.py a fake endpoint whose
answers bring nothing new (no conflict, no talk, no norm, hour-long tasks)
and the figure the plan-driven design is judged by: model calls per agent
per slot once the first plans and acts are made (slot 3 on).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tests import schema_answers
from tests.fake_openai import Reply, Request

QUIET_SLOTS = 6
FIRST_QUIET_SLOT = 3
_BLOCK = re.compile(r"is about to begin (\d\d:\d\d)-(\d\d:\d\d)")
# Answers that bring nothing new, by field name (any schema that has them).
_NOTHING_NEW: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "talk": lambda s: False,
    "is_rule": lambda s: False,
    "verdict": lambda s: next(v for v in s["enum"] if v != "breaks"),
    "behaviour": lambda s: s["enum"][-1],
    "also": lambda s: s["enum"][-1],
}


def _stretches(start: str, end: str, minutes: int) -> list[dict[str, str]]:
  lo, hi = (int(t[:2]) * 60 + int(t[3:]) for t in (start, end))
  clock = lambda t: f"{t // 60:02d}:{t % 60:02d}"
  return [{"start": clock(t), "end": clock(min(hi, t + minutes)),
           "activity": f"read at the table, part {i + 1}"}
          for i, t in enumerate(range(lo, hi, minutes))]


def _shaped(value: Any, schema: Mapping[str, Any], prompt: str,
            task_minutes: int, quiet: bool) -> Any:
  """`value` (a random valid answer) with day plans in hour-long blocks,
  tasks of `task_minutes`, and (`quiet`) every news-bearing field quiet."""
  if schema.get("type") != "object" or not isinstance(value, dict):
    return value
  for key, sub in schema.get("properties", {}).items():
    if quiet and key in _NOTHING_NEW:
      value[key] = _NOTHING_NEW[key](sub)
    elif key == "hours":
      # The hourly schedule. Quiet: an activity of its own each hour (hour
      # long blocks, no decomposition); busy: the same all day (one block,
      # decomposed into 10-minute tasks).
      value[key] = [{"activity": f"read at the table, hour {i + 1}" if quiet
                     else "read at the table", "habit": "none"}
                    for i in range(sub["minItems"])]
    elif key == "tasks" and (block := _BLOCK.search(prompt)):
      value[key] = _stretches(*block.groups(), task_minutes)[
          :sub.get("maxItems", 8)]
    elif quiet and key == "norms_observed":
      value[key] = []
    elif quiet and key == "thoughts":
      value[key] = value[key][:sub.get("minItems", 0)]
    else:
      value[key] = _shaped(value[key], sub, prompt, task_minutes, quiet)
  return value


def responder(latency: float, quiet: bool = True
              ) -> Callable[[Request], Reply]:
  """schema_answers' fake endpoint with either (`quiet`) hour-long plan
  blocks and tasks and answers that bring nothing new, or one block a day
  decomposed into 10-minute tasks (every agent begins a task, and so
  acts, every slot: the scaling bench's load) with the rest random."""
  plain = schema_answers.responder(latency=latency)
  task_minutes = 60 if quiet else 10

  def respond(request: Request) -> Reply:
    reply = plain(request)
    schema = schema_answers.request_schema(request.body)
    if schema is None:
      return reply
    prompt = json.dumps((request.body or {}).get("messages"))
    content = json.dumps(_shaped(json.loads(reply.content), schema,
                                 prompt.replace("\\n", "\n"), task_minutes,
                                 quiet))
    return Reply(content, delay=reply.delay,
                 prompt_tokens=reply.prompt_tokens,
                 completion_tokens=reply.completion_tokens)
  return respond


def quiet_calls_per_agent_slot(run_dir: Path, agents: int) -> float:
  """Model calls per agent per slot from slot FIRST_QUIET_SLOT on (the step
  records carry cumulative call counts)."""
  steps = [json.loads(line) for line in
           open(run_dir / "events.jsonl", encoding="utf-8")]
  calls = {r["step"]: r["calls"] for r in steps if r["kind"] == "step"}
  last = max(calls)
  quiet = calls[last] - calls[FIRST_QUIET_SLOT - 1]
  return quiet / (agents * (last - FIRST_QUIET_SLOT + 1))

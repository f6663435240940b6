"""DecomposePlan: one block of the day plan as tasks of 10 to 60 minutes.

Generative Agents plans a day in broad strokes, then decomposes the hour it
is about to live into tasks; CRSEC's Act works from such a plan item. An
agent then acts from its task and the model is asked again only when
something new happens (components/structured_act.py): a task that begins is
one such thing, so the length of tasks sets most of a run's cost.

Called once per block, when the block begins (not for the whole day at
once: a plan revised after a norm was qualified would throw the rest away).
The grammar keeps the times inside the block; the lengths are checked in
code, and an answer whose tasks are not 10 to 60 minutes long, or leave
the block's start uncovered, is asked for once more, saying why, then
recorded as a failure. Nothing is made up for the agent: the caller then
follows the block itself (see `block_as_tasks`), in hour-long stretches.
In a scenario that declares its places, each task says where it happens
(one of the places' ids, the block's place first in view); a block that
is not decomposed keeps its own place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia.models.base import StructuredModel
from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations.base import FailureSink, checked_call, obj
from crsec_concordia.operations.names import DECOMPOSE_PLAN
from crsec_concordia.operations.normative_plan import (
    Places, activities_problem, clock_of, items_schema, minutes,
    persona_lines, plain_activity)

OP = DECOMPOSE_PLAN
MIN_TASK, MAX_TASK = 10, 60


def task_bounds(start: str, end: str) -> tuple[int, int]:
  """(fewest, most) tasks a block from `start` to `end` may hold."""
  length = max(0, minutes(end) - minutes(start))
  fewest = max(1, -(-length // MAX_TASK))
  return fewest, max(fewest, min(8, length // MIN_TASK))


def schema(start: str, end: str, places: Places | None = None) -> dict:
  lo, hi = task_bounds(start, end)
  return obj({"tasks": items_schema(start, end, lo, hi, places=places)})


def at_place(item: Mapping[str, str]) -> str:
  """" (at reading_room)" for a plan item that says where, else ""."""
  return f" (at {item['place']})" if item.get("place") else ""


def prompt(*, name: str, persona: str, goal: str, setting: str,
           norms: list[PersonalNorm] | None, plan: Sequence[Mapping[str, str]],
           block: Mapping[str, str], places: Places | None = None) -> str:
  day = "\n".join(f"{i['start']}-{i['end']}: {i['activity']}{at_place(i)}"
                  for i in plan)
  where = (", and the id of the place each happens at" if places else "")
  return (
      persona_lines(name, persona, goal, setting, norms, places) + "\n"
      f"{name}'s plan for today:\n{day}\n\n"
      f"{name} is about to begin {block['start']}-{block['end']}: "
      f"{block['activity']}{at_place(block)}. Break that time into tasks of "
      f"10 to 60 minutes each, in order, from {block['start']} to "
      f"{block['end']}: start and end as HH:MM, and each task in a few words "
      f"(at most 8), concrete things {name} would really do{where}.")


def problem(tasks: Sequence[Mapping[str, str]], start: str, end: str
            ) -> str | None:
  """Why `tasks` do not decompose the block, or None if they do."""
  ordered = sorted(tasks, key=lambda t: t["start"])
  if not ordered or ordered[0]["start"] != start:
    return f"the first task must start at {start}"
  for t in ordered:
    length = minutes(t["end"]) - minutes(t["start"])
    if not MIN_TASK <= length <= MAX_TASK:
      return (f"\"{t['activity']}\" runs {t['start']}-{t['end']}; every task "
              f"lasts {MIN_TASK} to {MAX_TASK} minutes")
  for a, b in zip(ordered, ordered[1:]):
    if b["start"] < a["end"]:
      return f"tasks overlap at {b['start']}"
  return activities_problem(ordered)


def block_as_tasks(block: Mapping[str, str]) -> list[dict[str, Any]]:
  """The block itself in stretches of at most an hour (no decomposition).

  What an agent follows when DecomposePlan failed: its own plan's activity,
  with a new stretch (and so a new decision) at least every hour.
  """
  lo, hi = minutes(block["start"]), minutes(block["end"])
  where = {"place": block["place"]} if block.get("place") else {}
  return [{"start": clock_of(t), "end": clock_of(min(hi, t + MAX_TASK)),
           "activity": block["activity"], **where, "decomposed": False}
          for t in range(lo, hi, MAX_TASK)]


def decompose_plan(model: StructuredModel, *, name: str, persona: str,
                   goal: str, setting: str, norms: list[PersonalNorm] | None,
                   plan: Sequence[Mapping[str, str]], block: Mapping[str, str],
                   on_failure: FailureSink | None,
                   places: Places | None = None) -> list[dict] | None:
  """The block's tasks, in order, or None (the failure recorded); with
  `places`, each says where it happens."""
  start, end = block["start"], block["end"]
  if minutes(end) - minutes(start) <= MAX_TASK:
    # Already a task: nothing to decompose, no call.
    where = {"place": block["place"]} if block.get("place") else {}
    return [{"start": start, "end": end, "activity": block["activity"],
             **where}]
  text = prompt(name=name, persona=persona, goal=goal, setting=setting,
                norms=norms, plan=plan, block=block, places=places)
  answer = checked_call(model, OP, text, schema(start, end, places),
                        lambda answer: problem(answer["tasks"], start, end),
                        on_failure=on_failure,
                        max_tokens=320 + (80 if places else 0),
                        temperature=0.3)
  if answer is None:
    return None
  return [{**t, "activity": plain_activity(t["activity"])}
          for t in sorted(answer["tasks"], key=lambda t: t["start"])]

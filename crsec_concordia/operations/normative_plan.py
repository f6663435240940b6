"""NormativePlan: a day plan made with the agent's qualified norms in view.

The norms go into the prompt with their utilities and the agent weighs them
(100 = must follow, 1 = may disregard); compliance is chosen, not forced.
`norms_observed` lists the norms the plan deliberately respects: the plan
side of the compliance metric.

Baseline agents (and the compliance ablation) plan with the same operation,
norms absent (`norms=None`): no norm section, no `norms_observed`, so a
comparison of the arms isolates CRSEC and not a planner. The plan's shape
(an entry per hour, times in the grammar, a habit beside each activity) is
what kept a small model's plans whole: docs/trials/acting-and-planning.md.
In a scenario that declares its places, each hour also says where it is
spent (`place`, one of the places' ids, listed in the prompt); without,
the prompt and the answer are as they were.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from crsec_concordia.models.base import StructuredModel
from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations.base import (FailureSink, checked_call,
                                              has_evidence, integer, obj,
                                              text)
from crsec_concordia.operations.names import DAY_PLAN, NORMATIVE_PLAN

OP = NORMATIVE_PLAN
# The same prompt asked for a day without norms by a planner that never
# weighs any (a baseline agent's, or with the compliance module off).
DAY_PLAN_OP = DAY_PLAN


def _minutes_between(lo: int, hi: int) -> str:
  """A regex for the two-digit minutes lo..hi (0 <= lo <= hi <= 59)."""
  if (lo, hi) == (0, 59):
    return "[0-5][0-9]"
  parts = []
  for tens in range(lo // 10, hi // 10 + 1):
    first = lo % 10 if tens == lo // 10 else 0
    last = hi % 10 if tens == hi // 10 else 9
    parts.append(f"{tens}{first}" if first == last else
                 f"{tens}[{first}-{last}]")
  return "(" + "|".join(parts) + ")"


def clock_pattern(start: str, end: str) -> str:
  """A regex for the times "HH:MM" from `start` to `end`, both included:
  in the grammar, so that a plan keeps to the time it is for."""
  (sh, sm), (eh, em) = (map(int, t.split(":")) for t in (start, end))
  if (sh, sm) > (eh, em):
    raise ValueError(f"a day cannot run from {start} to {end}")
  if sh == eh:
    times = [f"{sh:02d}:{_minutes_between(sm, em)}"]
  else:
    times = ([f"{sh:02d}:{_minutes_between(sm, 59)}"]
             + [f"{h:02d}:[0-5][0-9]" for h in range(sh + 1, eh)]
             + [f"{eh:02d}:{_minutes_between(0, em)}"])
  return "^(" + "|".join(times) + ")$"


Places = Sequence[Mapping[str, str]]


def place_field(places: Places) -> dict:
  """The choice of one of the scenario's places, by id."""
  return {"type": "string", "enum": [p["id"] for p in places]}


def items_schema(start: str, end: str, lo: int, hi: int,
                 activity_chars: int = 60, places: Places | None = None
                 ) -> dict:
  """A list of lo..hi timed items ("HH:MM" from `start` to `end`), each
  with its place when `places` are given."""
  clock = {"type": "string", "pattern": clock_pattern(start, end)}
  fields = {"start": clock, "end": clock, "activity": text(activity_chars)}
  if places:
    fields["place"] = place_field(places)
  return {"type": "array", "items": obj(fields), "minItems": lo,
          "maxItems": hi}


def hours_of(start: str, end: str) -> list[tuple[str, str]]:
  """The hours of the time from `start` to `end`: (from, to) pairs cut at
  the full hours ("09:20"-"10:00", "10:00"-"11:00", ...)."""
  lo, hi = minutes(start), minutes(end)
  cuts = [lo] + [h * 60 for h in range(lo // 60 + 1, -(-hi // 60))] + [hi]
  cuts = sorted(set(c for c in cuts if lo <= c <= hi))
  return [(clock_of(a), clock_of(b)) for a, b in zip(cuts, cuts[1:])]


def schema(n_norms: int | None, start: str = "00:00",
           end: str = "23:59", places: Places | None = None) -> dict:
  """The day plan's shape: one activity per hour of the time planned (an
  hourly schedule, as in Generative Agents), with its place where the
  scenario declares places, and with norms, the numbers of those the plan
  respects; `n_norms=None`: planned without norms. One entry per hour, by
  the grammar, so that the plan covers the day.
  """
  n = len(hours_of(start, end))
  hour = obj({"activity": text(60),
              **({"place": place_field(places)} if places else {}),
              "habit": text(60)})
  fields = {"hours": {"type": "array", "items": hour,
                      "minItems": n, "maxItems": n}}
  if n_norms is not None:
    fields["norms_observed"] = {
        "type": "array", "items": integer(1, max(1, n_norms)),
        "maxItems": max(0, n_norms)}
  return obj(fields)


# A clock range the model wrote before an hour's activity ("09:00-10:00:
# reads the paper"): the hours are the schema's, so the range is dropped.
_CLOCK_RANGE = re.compile(
    r"^\s*\d{1,2}:\d{2}\s*(?:-|\u2013|to)\s*\d{1,2}:\d{2}\s*[:.,-]?\s*")


def plain_activity(text: str) -> str:
  """An activity on one line, without a clock range written before it."""
  text = " ".join(str(text).split())
  return _CLOCK_RANGE.sub("", text) or text


_NONE_FIRST = re.compile(r"^\W*(?:none|nothing|n/a|no habit)\b", re.I)


def activity_problem(activity: str) -> str | None:
  """Why `activity` names nothing to do (only a clock, "10:00-10:15" or
  "09:45"), or None."""
  words = _CLOCK_RANGE.sub("", " ".join(str(activity).split()))
  if any(ch.isalpha() for ch in words):
    return None
  return f"\"{activity}\" is a time, not an activity"


def activities_problem(items: Sequence[Mapping[str, str]]) -> str | None:
  """The problem of the first of the plan's hours (or a block's tasks)
  that names no activity, or None."""
  return next((p for p in (activity_problem(i["activity"]) for i in items)
               if p), None)


def hour_activity(hour: dict[str, str]) -> str:
  """An hour of the schedule as the task an agent follows: the activity,
  and the habit that goes with it, if any (a field of its own makes the
  planner weigh the persona's habits at every hour, a habit a norm forbids
  included)."""
  activity = plain_activity(hour["activity"])
  habit = " ".join(str(hour.get("habit", "")).split()).rstrip(".")
  # "none (Carlos usually doesn't ...)": none, with a reason after it.
  said_none = _NONE_FIRST.match(habit) is not None
  if said_none or not has_evidence(habit) or habit.lower() in activity.lower():
    return activity
  return f"{activity.rstrip('.')}; {habit}"


def blocks(hours: list[tuple[str, str]], activities: list[str],
           places: Sequence[str | None] | None = None
           ) -> list[dict[str, str]]:
  """An hourly schedule as blocks: the same activity in the same place in
  hours in a row is one block (decomposed into tasks as one,
  DecomposePlan); `places`: each hour's place, if the plan says."""
  items: list[dict[str, str]] = []
  wheres = list(places) if places is not None else [None] * len(hours)
  for (a, b), activity, where in zip(hours, activities, wheres):
    activity = plain_activity(activity)
    if (items and items[-1]["activity"].lower() == activity.lower()
        and items[-1].get("place") == where):
      items[-1]["end"] = b
    else:
      items.append({"start": a, "end": b, "activity": activity,
                    **({"place": where} if where else {})})
  return items


def place_lines(places: Places | None) -> str:
  """The scenario's places, one a line, or "" where it declares none."""
  if not places:
    return ""
  return "Places:\n" + "".join(f"- {p['id']}: {p['description']}\n"
                               for p in places)


def persona_lines(name: str, persona: str, goal: str, setting: str,
                  norms: list[PersonalNorm] | None,
                  places: Places | None = None) -> str:
  """Who plans, where, and the norms they weigh (none for a plan without
  norms).

  The same opening for the day plan and its decomposition, so a server's
  prompt cache reuses it.
  """
  head = (f"{name}: {persona}\n" + (f"Goal: {goal}\n" if goal else "") +
          (f"Setting: {setting}\n" if setting else "") + place_lines(places))
  if norms is None:
    return head
  norm_lines = "\n".join(
      f"{i}. {n.content} ({n.utility}/100)"
      for i, n in enumerate(norms, 1)) or "(none)"
  return (head + "\n"
          f"Norms {name} holds (importance 100 = must follow, 1 = may "
          f"disregard):\n{norm_lines}\n")


def prompt(name: str, persona: str, goal: str, setting: str, day: int,
           start: str, end: str, norms: list[PersonalNorm] | None,
           places: Places | None = None) -> str:
  weigh = ("" if norms is None else
           f" Weigh the norms as {name} would. norms_observed: numbers of "
           "the norms the plan respects.")
  hours = ", ".join(f"{a}-{b}" for a, b in hours_of(start, end))
  where = (f"place: where {name} spends it, the id of one of the places "
           "above; " if places else "")
  return (
      persona_lines(name, persona, goal, setting, norms, places) + "\n"
      f"{name} spends all of day {day} at this place, from {start} to {end}. "
      f"Plan that time hour by hour ({hours}): for each, in order, "
      f"activity: what {name} does, in a few words (at most 8), as {name} "
      "would really spend it, the same words for an activity that goes on; "
      f"{where}"
      f"habit: what {name} habitually does alongside it, as the description "
      "above tells, in a few words, or \"none\"." + weigh)


def minutes(clock: str) -> int:
  """"HH:MM" as minutes since midnight."""
  return int(clock[:2]) * 60 + int(clock[3:])


def clock_of(total: int) -> str:
  """Minutes since midnight as "HH:MM"."""
  return f"{total // 60:02d}:{total % 60:02d}"


def normative_plan(model: StructuredModel, *, name: str, persona: str,
                   goal: str, setting: str, day: int, start: str, end: str,
                   norms: list[PersonalNorm] | None,
                   on_failure: FailureSink | None,
                   places: Places | None = None, op: str = OP) -> dict | None:
  """The day plan as blocks of the hourly schedule (`items`, each with its
  `place` where `places` are given), or None (the failure recorded as
  `op`'s); `norms=None` plans without norms (the baseline's)."""
  answer = checked_call(
      model, op,
      prompt(name, persona, goal, setting, day, start, end, norms, places),
      schema(None if norms is None else len(norms), start, end, places),
      lambda answer: activities_problem(answer["hours"]),
      on_failure=on_failure, max_tokens=320 + (80 if places else 0),
      temperature=0.5)
  if answer is None:
    return None
  held = norms or []
  return {"items": blocks(hours_of(start, end),
                         [hour_activity(h) for h in answer["hours"]],
                         [h.get("place") for h in answer["hours"]]
                         if places else None),
          "norms_observed": [held[i - 1].id for i in
                             dict.fromkeys(answer.get("norms_observed", ()))
                             if i <= len(held)]}

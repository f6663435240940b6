"""NormativePlan: a day plan made with the agent's qualified norms in view.

The norms go into the prompt with their utilities and the agent weighs them
(100 = must follow, 1 = may disregard); compliance is chosen, not forced.
`norms_observed` lists the norms the plan deliberately respects: the plan
side of the compliance metric.

Baseline agents (and the compliance ablation) plan with the same operation,
norms absent (`norms=None`): no norm section, no `norms_observed`, so a
comparison of the arms isolates CRSEC and not a planner.
"""

from __future__ import annotations

from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations.base import (FailureSink, integer, obj,
                                              structured_call, text)

OP = "NormativePlan"


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
  """A regex for the times "HH:MM" from `start` to `end`, both included.

  In the grammar, not after the fact: told "from 09:00 to 12:00", the 1.5B
  model planned 12:00-14:30 for one agent and 10:00-12:00 for another, so
  the plan's "Now" line never matched the morning it was meant for.
  """
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


def items_schema(start: str, end: str, lo: int, hi: int,
                 activity_chars: int = 60) -> dict:
  """A list of lo..hi timed items ("HH:MM" from `start` to `end`)."""
  clock = {"type": "string", "pattern": clock_pattern(start, end)}
  item = obj({"start": clock, "end": clock, "activity": text(activity_chars)})
  return {"type": "array", "items": item, "minItems": lo, "maxItems": hi}


def schema(n_norms: int | None, start: str = "00:00",
           end: str = "23:59") -> dict:
  """The day plan's shape; `n_norms=None`: planned without norms."""
  fields = {"items": items_schema(start, end, 2, 4)}
  if n_norms is not None:
    fields["norms_observed"] = {
        "type": "array", "items": integer(1, max(1, n_norms)),
        "maxItems": max(0, n_norms)}
  return obj(fields)


def persona_lines(name: str, persona: str, goal: str, setting: str,
                  norms: list[PersonalNorm] | None) -> str:
  """Who plans, and the norms they weigh (none for a plan without norms).

  The same opening for the day plan and its decomposition, so a server's
  prompt cache reuses it.
  """
  head = (f"{name}: {persona}\n" + (f"Goal: {goal}\n" if goal else "") +
          (f"Setting: {setting}\n" if setting else ""))
  if norms is None:
    return head
  norm_lines = "\n".join(
      f"{i}. {n.content} (importance {n.utility}/100)"
      for i, n in enumerate(norms, 1)) or "(none)"
  return (head + "\n"
          f"Norms {name} holds (importance 100 = must follow, 1 = may "
          f"disregard):\n{norm_lines}\n")


def prompt(name: str, persona: str, goal: str, setting: str, day: int,
           start: str, end: str, norms: list[PersonalNorm] | None) -> str:
  weigh = ("" if norms is None else
           f" Weigh the norms as {name} would. norms_observed: numbers of "
           "the norms the plan respects.")
  return (
      persona_lines(name, persona, goal, setting, norms) + "\n"
      f"{name} spends all of day {day} at this place, from {start} to {end}. "
      "Plan that time in 2 to 4 blocks: start and end as HH:MM, and the "
      f"activity in a few words (at most 8), as {name} would really spend "
      "it, habits included." + weigh)


MIN_BLOCK = 30


def _minutes(clock: str) -> int:
  return int(clock[:2]) * 60 + int(clock[3:])


def problem(items: list[dict], start: str, end: str) -> str | None:
  """Why `items` do not plan the time from `start` to `end`, or None.

  Checked in code, not by the grammar: the 1.5B model planned three
  quarter-hour blocks from 09:00 for a day to 16:00, or began at 11:00, and
  an agent whose plan covers a quarter of its day begins a "task" (and
  asks the model) every slot, or follows the wrong block all morning.
  """
  ordered = sorted(items, key=lambda i: i["start"])
  if ordered[0]["start"] != start:
    return f"the first block must start at {start}"
  if ordered[-1]["end"] != end:
    return f"the last block must end at {end}"
  for i in ordered:
    if _minutes(i["end"]) - _minutes(i["start"]) < MIN_BLOCK:
      return (f"\"{i['activity']}\" runs {i['start']}-{i['end']}; every "
              f"block lasts at least {MIN_BLOCK} minutes")
  for a, b in zip(ordered, ordered[1:]):
    if b["start"] < a["end"]:
      return f"blocks overlap at {b['start']}"
  return None


def normative_plan(model, *, name: str, persona: str, goal: str, setting: str,
                   day: int, start: str, end: str,
                   norms: list[PersonalNorm] | None,
                   on_failure: FailureSink | None) -> dict | None:
  """The day plan; `norms=None` plans without norms (the baseline's).

  A plan that does not cover the time (see `problem`) is asked for once
  more, saying why, then recorded as a failure: None, never a plan made up.
  """
  text = prompt(name, persona, goal, setting, day, start, end, norms)
  shape = schema(None if norms is None else len(norms), start, end)
  wrong = None
  for attempt in range(2):
    asked = text if attempt == 0 else (
        f"{text}\nYour answer did not work: {wrong}. Answer again.")
    answer = structured_call(model, OP, asked, shape, on_failure=on_failure,
                             max_tokens=256, temperature=0.5)
    if answer is None:
      return None
    wrong = problem(answer["items"], start, end)
    if wrong is None:
      break
  if wrong is not None:
    if on_failure is not None:
      on_failure({"kind": "failure", "op": OP, "error": wrong,
                  "raw": str(answer)[:2000]})
    return None
  held = norms or []
  answer["norms_observed"] = [held[i - 1].id for i in
                              dict.fromkeys(answer.get("norms_observed", ()))
                              if i <= len(held)]
  return answer

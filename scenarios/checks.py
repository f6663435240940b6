"""What a scenario's values must be: the field types and the checks across
fields.

Each field check raises a PydanticCustomError whose type explain.py knows,
so every message carries a fix written for this file format; `cross_check`
finds what no single field can know (duplicate names, unknown behaviour
ids, times outside the clock) on raw data, so it runs even when some
fields are wrong and one pass reports everything.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal, get_args

import pydantic
from pydantic_core import PydanticCustomError

from crsec_concordia.norms import MAX_UTILITY, MIN_UTILITY, NORM_TYPES, ROLES
from crsec_concordia.scenarios.network_checks import network_problems
from crsec_concordia.scenarios.place_checks import PLACES, place_problems
from crsec_concordia.scenarios.problems import Problem, show
from crsec_concordia.scenarios.schedule_checks import interview_problems
from crsec_concordia.scenarios.intervention_checks import intervention_problems
from crsec_concordia.scenarios.models_block import models_block_problems


Role = Literal["entrepreneur", "ordinary"]
NormType = Literal["descriptive", "injunctive"]
assert get_args(Role) == ROLES
assert get_args(NormType) == NORM_TYPES


MAX_DIGITS = 30  # More is out of range for every number of the file.


def as_whole(value: Any, lo: int, hi: int | None = None) -> int:
  """An int in [lo, hi]; YAML's 10, 10.0 and "10" all count, true does not."""
  ctx = {"lo": lo} if hi is None else {"lo": lo, "hi": hi}
  number = None
  if isinstance(value, bool):
    pass
  elif isinstance(value, int):
    number = value
  elif isinstance(value, float) and value.is_integer():
    number = int(value)
  elif isinstance(value, str) and re.fullmatch(r"[-+]?\d+", value.strip()):
    if len(value.strip().lstrip("+-")) > MAX_DIGITS:  # int() refuses 4300.
      raise PydanticCustomError("out_of_range", "is out of range", ctx)
    number = int(value)
  if number is None:
    raise PydanticCustomError("whole_number", "is not a whole number", ctx)
  if number < lo or (hi is not None and number > hi):
    raise PydanticCustomError("out_of_range", "is out of range", ctx)
  return number


def whole(lo: int, hi: int | None = None) -> Any:
  return Annotated[int, pydantic.BeforeValidator(lambda v: as_whole(v, lo, hi))]


Utility = whole(MIN_UTILITY, MAX_UTILITY)
Positive = whole(1)
Minutes = whole(1, 24 * 60)
# Upper bounds, so that a slip of the keyboard (a few zeros too many) is a
# line here, not a run that never ends or a request no server takes
# (CreateNorm asks for 90 tokens per initial norm; a conversation of a
# million rounds never ends).
MAX_DAYS, MAX_ROUNDS, MAX_INITIAL_NORMS, MAX_THRESHOLD = 366, 20, 20, 100_000
Days = whole(1, MAX_DAYS)
Rounds = whole(1, MAX_ROUNDS)
InitialNormCount = whole(0, MAX_INITIAL_NORMS)
Threshold = whole(1, MAX_THRESHOLD)  # reflect_every, synthesis_threshold
MAX_EVENTS = 1000
MaxEvents = whole(1, MAX_EVENTS)  # perception.max_events

_TIME = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")


def _time(value: Any) -> str:
  if isinstance(value, str) and (m := _TIME.fullmatch(value.strip())):
    return f"{int(m[1]):02d}:{m[2]}"
  raise PydanticCustomError("time_format", "is not a time")


def _slot_or_time(value: Any) -> int | str:
  """A slot (a whole number from 1) or, written with a colon, a clock time;
  one error either way, naming both (a union of the two types would
  report each type's failure, under the validators' internal names)."""
  if isinstance(value, str) and ":" in value:
    return _time(value)
  try:
    return as_whole(value, 1)
  except PydanticCustomError:
    raise PydanticCustomError("slot_or_time", "is not a slot or a time") from None


def minutes_of(clock: str) -> int:
  """Minutes after midnight of "HH:MM"."""
  hours, minutes = clock.split(":")
  return int(hours) * 60 + int(minutes)


def _text(value: str) -> str:
  if not value:
    raise PydanticCustomError("empty", "is empty")
  return value


def _line(value: str) -> str:
  if "\n" in _text(value):
    raise PydanticCustomError("multi_line", "spans several lines")
  return value


# The observation format (`Carlos Gomez (indoors): ...`, `Conversation
# between A and B about ...:`, `A: "..."`) must be parsable back into names.
_NAME_BREAKERS = re.compile(r'[:()\[\]"|\n]| and ')


def _name(value: str) -> str:
  if m := _NAME_BREAKERS.search(_text(value)):
    raise PydanticCustomError("bad_name", "breaks the observation format",
                              {"found": "a line break" if m[0] == "\n" else m[0]})
  if found := _unsafe_in_name(value):
    raise PydanticCustomError("unsafe_name", "holds a character no name may",
                              {"found": found})
  return _short(value)


# A name is printed to terminals, written into pages and prompts and used in
# file names: markup (`<`, `>`) and characters that are not text (controls,
# NUL, invisible formatting such as a bidirectional override, line and
# paragraph separators) have no place in it.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _unsafe_in_name(value: str) -> str | None:
  """What in `value` a name may not hold, described (None: nothing)."""
  for char in value:
    if char in "<>":
      return f"the angle bracket {char}"
    if unicodedata.category(char) in _UNSAFE_CATEGORIES:
      return f"the invisible or control character U+{ord(char):04X}"
  return None


# Names become parts of file names (run directories, questionnaire pages),
# which few file systems allow past 255 bytes.
MAX_NAME = 80


def _short(value: str) -> str:
  if len(value) > MAX_NAME:
    raise PydanticCustomError("too_long", "is too long", {"hi": MAX_NAME})
  return value


def _scenario_name(value: str) -> str:
  """The scenario's name starts the default run directory's name, so it
  must not lead elsewhere (`../..`, `/tmp/x`) or be hidden (`.x`)."""
  if m := re.search(r"[/\\]", _line(value)):
    raise PydanticCustomError("path_name", "leads out of runs/",
                              {"found": json.dumps(m[0])})
  if value.startswith("."):
    raise PydanticCustomError("path_name", "is hidden", {"found": "a leading dot"})
  return _short(value)


def _ident(value: str) -> str:
  if not re.fullmatch(r"[a-z][a-z0-9_]*", value):
    raise PydanticCustomError("ident", "is not a valid id")
  return value


ClockTime = Annotated[str, pydantic.BeforeValidator(_time)]
SlotOrTime = Annotated[int | str, pydantic.BeforeValidator(_slot_or_time)]
Text = Annotated[str, pydantic.AfterValidator(_text)]
Line = Annotated[str, pydantic.AfterValidator(_line)]
Name = Annotated[str, pydantic.AfterValidator(_name)]
ScenarioName = Annotated[str, pydantic.AfterValidator(_scenario_name)]
Ident = Annotated[str, pydantic.AfterValidator(_ident)]


def cross_check(data: Any) -> list[Problem]:
  """What no single field can know, on raw data: it tolerates any shape,
  so it can run even when some fields are wrong and report everything."""
  if not isinstance(data, Mapping):
    return []
  problems: list[Problem] = []
  names = [n for n in _unique(data, "agents", "name", "agent", problems) if n]
  known = list(dict.fromkeys(
      b for b in _unique(data, "behaviours", "id", "behaviour", problems) if b))
  _unique(data, "target_norms", "id", "target norm", problems)
  problems += _target_norm_problems(data, known)
  _unique(data, "occasions", "id", "occasion", problems)
  problems += _occasion_problems(data, known, names)
  problems += _clock_problems(data)
  problems += place_problems(data)
  problems += _committed_problems(data)
  problems += network_problems(data)
  problems += intervention_problems(data, _slot_finder(data))
  problems += models_block_problems(data)
  return problems


def _slot_finder(data: Mapping[str, Any]):
  """`slot_of(at, day)` on the file's clock (a slot number, or the first
  slot of the day at or after a time; None off the clock), or None when
  the clock has problems of its own."""
  clock = data.get("clock")
  if not isinstance(clock, Mapping) or not data.get("interventions"):
    return None
  try:
    start = minutes_of(_time(clock.get("start")))
    end = minutes_of(_time(clock.get("end")))
    per_step = as_whole(clock.get("minutes_per_step"), 1, 24 * 60)
    days = as_whole(clock.get("days", 1), 1, MAX_DAYS)
  except PydanticCustomError:
    return None
  if end <= start:
    return None
  # The clock's slots (a `max_steps` that shortens the run, as --steps
  # does, leaves a later intervention unplayed rather than wrong).
  per_day = math.ceil((end - start) / per_step)
  total = days * per_day

  def slot_of(at: Any, day: Any) -> int | None:
    at = _slot_or_time(at)  # A value neither is a field error of its own.
    if isinstance(at, int):
      return at if at <= total else None
    at_minutes = minutes_of(at)
    day = as_whole(day, 1)
    index = max(0, math.ceil((at_minutes - start) / per_step))
    slot = (day - 1) * per_day + index + 1
    return slot if index < per_day and slot <= total else None
  return slot_of


def _committed_problems(data: Mapping[str, Any]) -> list[Problem]:
  """A committed agent starts with norms to hold: given, or (an
  entrepreneur's) written by CreateNorm."""
  return [Problem(("agents", i, "committed"), "is true, but the agent starts "
                  "with no norms to hold",
                  "give it initial_norms (or make it an entrepreneur, whose "
                  "norms CreateNorm writes, or set committed: false)")
          for i, agent in _entries(data, "agents")
          if agent.get("committed") is True and agent.get("role") == "ordinary"
          and not agent.get("initial_norms")]


def _entries(data: Mapping[str, Any],
             key: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
  """The mappings of the list under `key`, with their indices."""
  items = data.get(key)
  if isinstance(items, list):
    for i, item in enumerate(items):
      if isinstance(item, Mapping):
        yield i, item


def _unique(data: Mapping[str, Any], key: str, field: str, what: str,
            problems: list[Problem]) -> list[str]:
  """The values of `field` under `key`; a value used twice (ignoring case)
  is added to `problems`."""
  seen: dict[str, int] = {}
  for i, item in _entries(data, key):
    value = item.get(field)
    if not isinstance(value, str) or not value.strip():
      continue
    folded = value.strip().casefold()
    if folded in seen:
      problems.append(Problem(
          (key, i, field), f"{show(value)} is already used by {key}[{seen[folded]}]",
          f"give every {what} a different {field}"))
    else:
      seen[folded] = i
  return [v.strip() for v in
          (item.get(field) for _, item in _entries(data, key)) if isinstance(v, str)]


def _unknown_behaviour(bid: str, loc: tuple, known: list[str],
                       match: str) -> Problem:
  """`bid` is no behaviour id; the nearest to `match` is suggested."""
  near = difflib.get_close_matches(match, known, n=1)
  guess = f" (did you mean {near[0]}?)" if near else ""
  return Problem(loc, f"{show(bid)} is not a behaviour id{guess}",
                 f"use an id defined under behaviours: {', '.join(known)}")


def _target_norm_problems(data: Mapping[str, Any],
                          known: list[str]) -> list[Problem]:
  """Aliases said twice, and the behaviours a target norm names."""
  problems: list[Problem] = []
  for i, target in _entries(data, "target_norms"):
    aliases = target.get("aliases")
    wordings = [target.get("text"), *(aliases if isinstance(aliases, list) else [])]
    said: set[str] = set()
    for j, wording in enumerate(wordings):
      if isinstance(wording, str) and wording.strip():
        if wording.strip().casefold() in said:
          problems.append(Problem(
              ("target_norms", i, "aliases", j - 1), f"{show(wording)} is said twice",
              "give each alias a wording of its own, different from text"))
        said.add(wording.strip().casefold())
    lists = {k: target.get(k) for k in ("complies", "violates")}
    if all(v is None or v == [] for v in lists.values()):
      example = f" (known ids: {', '.join(known)})" if known else ""
      problems.append(Problem(
          ("target_norms", i), "names no behaviour that complies with or violates it",
          f"add complies: [...] and/or violates: [...] with behaviour ids{example}"))
      continue
    if not known:
      continue  # Missing behaviours are reported on their own.
    complies = lists["complies"] if isinstance(lists["complies"], list) else []
    for key, ids in lists.items():
      if not isinstance(ids, list):
        continue
      for j, bid in enumerate(ids):
        if not isinstance(bid, str):
          continue  # Reported as a field error.
        if bid.strip() not in known:
          problems.append(_unknown_behaviour(
              bid, ("target_norms", i, key, j), known, match=bid))
        elif key == "violates" and bid.strip() in complies:
          problems.append(Problem(
              ("target_norms", i, key, j), f"{show(bid)} is also listed under complies",
              "a behaviour cannot both comply with and violate a norm, so "
              "remove it from one of the lists"))
  return problems


def _occasion_problems(data: Mapping[str, Any], known: list[str],
                       names: list[str]) -> list[Problem]:
  """An occasion's fields in braces, and the behaviours and agents it names."""
  problems: list[Problem] = []
  for i, occasion in _entries(data, "occasions"):
    for key in ("situation", "question"):
      value = occasion.get(key)
      if not isinstance(value, str):
        continue
      for field in sorted(set(re.findall(r"\{[^{}]*\}", value)) - {"{actor}"}):
        problems.append(Problem(
            ("occasions", i, key), f"{show(field)} is not a field",
            "write {actor} for the agent's name; no other braces"))
    ids = occasion.get("behaviours")
    for j, bid in enumerate(ids if isinstance(ids, list) and known else []):
      if isinstance(bid, str) and bid.strip() not in known:
        problems.append(_unknown_behaviour(
            bid, ("occasions", i, "behaviours", j), known, match=bid.strip()))
    agents = occasion.get("agents")
    for j, name in enumerate(agents if isinstance(agents, list) else []):
      if isinstance(name, str) and names and name.strip() not in names:
        near = difflib.get_close_matches(name.strip(), names, n=1)
        guess = f" (did you mean {near[0]}?)" if near else ""
        problems.append(Problem(
            ("occasions", i, "agents", j), f"{show(name)} is not an agent{guess}",
            f"use names from agents: {', '.join(names)}"))
  return problems


def _clock_problems(data: Mapping[str, Any]) -> list[Problem]:
  """The clock's span, the occasions' times within it, and max_steps."""
  clock = data.get("clock")
  if not isinstance(clock, Mapping):
    return []
  try:
    start, end = minutes_of(_time(clock.get("start"))), minutes_of(_time(clock.get("end")))
  except PydanticCustomError:
    return []  # Reported as a field error.
  if end <= start:
    return [Problem(
        ("clock", "end"),
        f"{show(clock.get('end'))} is not after start {show(clock.get('start'))}",
        "set end later than start on the same day (a day cannot run past midnight)")]
  problems: list[Problem] = []
  for i, occasion in _entries(data, "occasions"):
    try:
      at = minutes_of(_time(occasion.get("at")))
    except PydanticCustomError:
      continue  # Reported as a field error.
    if not start <= at < end:
      problems.append(Problem(
          ("occasions", i, "at"),
          f"{show(occasion.get('at'))} is outside the clock's "
          f"{clock.get('start')}-{clock.get('end')}, so nobody would meet it",
          "set a time from clock.start up to (not including) clock.end"))
  try:
    per_step = as_whole(clock.get("minutes_per_step"), 1, 24 * 60)
    days = as_whole(clock.get("days", 1), 1, MAX_DAYS)
    max_steps = data.get("max_steps")
    max_steps = None if max_steps is None else as_whole(max_steps, 1)
  except PydanticCustomError:
    return problems
  covered = days * math.ceil((end - start) / per_step)
  problems += interview_problems(data, min(max_steps or covered, covered))
  if max_steps is not None and max_steps > covered:
    problems.append(Problem(
        ("max_steps",),
        f"{max_steps} is more than the {covered} steps the clock covers "
        f"({days} day(s) of {covered // days} steps)",
        f"lower it to at most {covered}, or add days to clock"))
  return problems

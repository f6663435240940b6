"""The scenario file: its pydantic models, and a loader that explains itself.

A scenario is the whole set-up of an episode (who sits in the café, the
clock, the behaviours the game master adjudicates, the norms the metrics
measure). A mistake in it can waste a run that takes hours on a CPU, so the
file is checked completely before anything starts and every problem is
reported at once, one line each, in the form editors and people both read:

  bad.yaml:14: agents[2].initial_norms[0].utility: 140 is out of range; use a whole number from 1 to 100

The line number comes from the YAML node tree (the same parse that produced
the data), walked along the pydantic error location.

YAML 1.1 quirks are switched off on purpose: `16:00` stays the text "16:00"
(YAML 1.1 reads it as the number 960) and `no`, `yes`, `on`, `off` stay
text (YAML 1.1 reads them as booleans, which would turn the preference
`smoking: no` into False).
"""

from __future__ import annotations

import difflib
import json
import math
import re
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pydantic
import yaml
from pydantic_core import PydanticCustomError

from crsec_concordia.errors import UserError
from crsec_concordia.norms import MAX_UTILITY, MIN_UTILITY, NORM_TYPES
from crsec_concordia.observations import Stamp

HERE = Path(__file__).resolve().parent

Role = Literal["entrepreneur", "ordinary"]
NormType = Literal["descriptive", "injunctive"]
ROLES: tuple[str, ...] = get_args(Role)
assert get_args(NormType) == NORM_TYPES

_DESIGN = "see docs/design.md, 'Scenario file (YAML)'"


class ScenarioError(UserError):
  """A scenario that cannot be used, with every problem found, one per line.

  Each problem reads `FILE:LINE: field.path: what is wrong; how to fix it`
  (no LINE when the file itself is missing).
  """

  def __init__(self, problems: list[str]):
    self.problems = list(problems)
    super().__init__("\n".join(self.problems))

  def __str__(self) -> str:
    return "\n".join(self.problems)


# -- field types ---------------------------------------------------------------
# Each custom check raises a PydanticCustomError whose type `_explain` knows,
# so every message carries a fix written for this file format.


_MAX_DIGITS = 30  # More is out of range for every number of the file.


def _as_whole(value: Any, lo: int, hi: int | None = None) -> int:
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
    if len(value.strip().lstrip("+-")) > _MAX_DIGITS:  # int() refuses 4300.
      raise PydanticCustomError("out_of_range", "is out of range", ctx)
    number = int(value)
  if number is None:
    raise PydanticCustomError("whole_number", "is not a whole number", ctx)
  if number < lo or (hi is not None and number > hi):
    raise PydanticCustomError("out_of_range", "is out of range", ctx)
  return number


def _whole(lo: int, hi: int | None = None) -> Any:
  return Annotated[int, pydantic.BeforeValidator(lambda v: _as_whole(v, lo, hi))]


Utility = _whole(MIN_UTILITY, MAX_UTILITY)
Positive = _whole(1)
Minutes = _whole(1, 24 * 60)
# Upper bounds, so that a slip of the keyboard (a few zeros too many) is a
# line here, not a run that never ends or a request no server takes
# (CreateNorm asks for 90 tokens per initial norm; a conversation of a
# million rounds never ends).
MAX_DAYS, MAX_ROUNDS, MAX_INITIAL_NORMS, MAX_THRESHOLD = 366, 20, 20, 100_000
Days = _whole(1, MAX_DAYS)
Rounds = _whole(1, MAX_ROUNDS)
InitialNormCount = _whole(0, MAX_INITIAL_NORMS)
Threshold = _whole(1, MAX_THRESHOLD)  # reflect_every, synthesis_threshold

_TIME = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")


def _time(value: Any) -> str:
  if isinstance(value, str) and (m := _TIME.fullmatch(value.strip())):
    return f"{int(m[1]):02d}:{m[2]}"
  raise PydanticCustomError("time_format", "is not a time")


def _minutes(clock: str) -> int:
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
  return _short(value)


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
Text = Annotated[str, pydantic.AfterValidator(_text)]
Line = Annotated[str, pydantic.AfterValidator(_line)]
Name = Annotated[str, pydantic.AfterValidator(_name)]
ScenarioName = Annotated[str, pydantic.AfterValidator(_scenario_name)]
Ident = Annotated[str, pydantic.AfterValidator(_ident)]


# -- the models ----------------------------------------------------------------


class _Model(pydantic.BaseModel):
  # Frozen: one Scenario is shared by the runner, game master and metrics.
  model_config = pydantic.ConfigDict(extra="forbid", str_strip_whitespace=True,
                                     frozen=True)


class Clock(_Model):
  """Simulated time. Step 1 is at `start` on day 1; a day has
  ceil((end - start) / minutes_per_step) steps, each starting before `end`."""
  start: ClockTime
  end: ClockTime
  minutes_per_step: Minutes
  days: Days = 1

  @property
  def steps_per_day(self) -> int:
    span = _minutes(self.end) - _minutes(self.start)
    return max(1, math.ceil(span / self.minutes_per_step))


class Conversation(_Model):
  max_rounds: Rounds = 2  # Rounds of two utterances.


class Modules(_Model):
  """Which CRSEC modules a normative agent runs (for ablations)."""
  communication: bool = True
  observation: bool = True
  immediate_evaluation: bool = True
  synthesis: bool = True
  compliance: bool = True


class Crsec(_Model):
  initial_norm_count: InitialNormCount = 5
  synthesis_threshold: Threshold = 350
  reflect_every: Threshold = 6  # Own observations of others between Reflects.
  modules: Modules = pydantic.Field(default_factory=Modules)


class InitialNorm(_Model):
  content: Text
  type: NormType
  utility: Utility


class Agent(_Model):
  """One agent. Without `initial_norms`, an entrepreneur's are written by
  CreateNorm at the start and an ordinary agent starts with none."""
  name: Name
  role: Role
  persona: Text
  preferences: dict[str, str] = pydantic.Field(default_factory=dict)
  initial_norms: list[InitialNorm] | None = None
  goal: Text | None = None

  @property
  def is_entrepreneur(self) -> bool:
    return self.role == "entrepreneur"


class Behaviour(_Model):
  id: Ident
  description: Text


class TargetNorm(_Model):
  """A norm the metrics look for; its behaviours say what complying means."""
  id: Ident
  text: Text
  type: NormType
  complies: list[str] = pydantic.Field(default_factory=list)
  violates: list[str] = pydantic.Field(default_factory=list)
  # Other wordings of the same norm, for the metrics' matcher: agents phrase
  # a norm many ways, and one reference sentence misses long or hedged ones.
  aliases: list[Line] = pydantic.Field(default_factory=list)


class Occasion(_Model):
  """A moment the game master puts to each agent once a day, from `at`:
  their first turn since opens with `situation` (see game_masters/occasions.py)."""
  id: Ident
  at: ClockTime
  situation: Text
  question: Text | None = None  # Instead of "What does {actor} do next?"
  # Behaviour ids the referee asks about in a second, focused call.
  behaviours: list[str] = pydantic.Field(default_factory=list)
  agents: list[Name] = pydantic.Field(default_factory=list)


class Scenario(_Model):
  """A validated scenario. Build it with `load_scenario` or `from_dict`."""
  name: ScenarioName
  premise: Text
  setting: Line
  clock: Clock
  max_steps: Positive | None = None
  conversation: Conversation = pydantic.Field(default_factory=Conversation)
  crsec: Crsec = pydantic.Field(default_factory=Crsec)
  agents: Annotated[list[Agent], pydantic.Field(min_length=1)]
  behaviours: Annotated[list[Behaviour], pydantic.Field(min_length=1)]
  target_norms: list[TargetNorm] = pydantic.Field(default_factory=list)
  occasions: list[Occasion] = pydantic.Field(default_factory=list)

  _source_path: Path | None = pydantic.PrivateAttr(default=None)

  @pydantic.model_validator(mode="after")
  def _consistent(self) -> "Scenario":
    # `load_scenario` reports these itself, with a precise location each;
    # this keeps a Scenario built any other way just as consistent.
    if problems := _cross_check(self.model_dump()):
      raise PydanticCustomError(
          "cross_check", "{problems}",
          {"problems": "; ".join(f"{_path(p.loc)}: {p.what}" for p in problems)})
    return self

  # -- building ----------------------------------------------------------------

  @classmethod
  def from_dict(cls, data: Any, source: str = "<dict>") -> "Scenario":
    """Validates plain data (e.g. a run's scenario.json); no line numbers."""
    return _validate(data, None, source)

  def to_dict(self) -> dict[str, Any]:
    """JSON-ready, defaults filled in and `max_steps` resolved."""
    data = self.model_dump(mode="json")
    data["max_steps"] = self.total_steps
    return data

  def with_max_steps(self, max_steps: int) -> "Scenario":
    """A copy that runs `max_steps` steps (validated like the file's value)."""
    data = {**self.model_dump(mode="json"), "max_steps": max_steps}
    copy = _validate(data, None, str(self._source_path or self.name))
    copy._source_path = self._source_path  # pylint: disable=protected-access
    return copy

  # -- reading -----------------------------------------------------------------

  @property
  def source_path(self) -> Path | None:
    """The file it was loaded from (None when built from a dict)."""
    return self._source_path

  @property
  def steps_per_day(self) -> int:
    return self.clock.steps_per_day

  @property
  def total_steps(self) -> int:
    return self.max_steps or self.clock.days * self.clock.steps_per_day

  def stamp_for(self, step: int) -> Stamp:
    """The simulated time of `step` (1-based): step 1 is day 1 at clock.start;
    when a day's steps are used up the next step is at start of the next day."""
    if step < 1:
      raise ValueError(f"steps count from 1, not {step}")
    day, index = divmod(step - 1, self.clock.steps_per_day)
    minutes = _minutes(self.clock.start) + index * self.clock.minutes_per_step
    return Stamp(day=day + 1, clock=f"{minutes // 60:02d}:{minutes % 60:02d}",
                 step=step)

  def is_day_start(self, step: int) -> bool:
    """Whether `step` is the first of a day (when agents plan their day)."""
    return (step - 1) % self.clock.steps_per_day == 0

  @property
  def agent_names(self) -> list[str]:
    return [a.name for a in self.agents]

  def agent(self, name: str) -> Agent:
    for a in self.agents:
      if a.name == name:
        return a
    raise KeyError(f"no agent {name!r} in scenario {self.name!r}; "
                   f"agents: {', '.join(self.agent_names)}")

  @property
  def entrepreneurs(self) -> list[Agent]:
    return [a for a in self.agents if a.is_entrepreneur]

  @property
  def behaviour_ids(self) -> list[str]:
    return [b.id for b in self.behaviours]

  def behaviour(self, behaviour_id: str) -> Behaviour:
    for b in self.behaviours:
      if b.id == behaviour_id:
        return b
    raise KeyError(f"no behaviour {behaviour_id!r}; ids: "
                   f"{', '.join(self.behaviour_ids)}")

  def target_norm(self, norm_id: str) -> TargetNorm:
    for t in self.target_norms:
      if t.id == norm_id:
        return t
    raise KeyError(f"no target norm {norm_id!r}; ids: "
                   f"{', '.join(t.id for t in self.target_norms)}")

  def entity_params(self, name: str) -> dict[str, Any]:
    """The prefab params of docs/design.md for agent `name` (plain JSON).

    `initial_norms` is None when CreateNorm should write them; `goal` is ""
    when the file gives none.
    """
    a = self.agent(name)
    return {
        "name": a.name,
        "persona": a.persona,
        "role": a.role,
        "goal": a.goal or "",
        "initial_norm_count": self.crsec.initial_norm_count,
        "synthesis_threshold": self.crsec.synthesis_threshold,
        "reflect_every": self.crsec.reflect_every,
        "initial_norms": (None if a.initial_norms is None else
                          [n.model_dump(mode="json") for n in a.initial_norms]),
        "modules": self.crsec.modules.model_dump(mode="json"),
        "setting": self.setting,
    }


# -- problems ------------------------------------------------------------------


class _Problem:
  """One problem: where (a pydantic-style location), what, and the fix."""

  def __init__(self, loc: tuple, what: str, fix: str, line: int | None = None):
    self.loc, self.what, self.fix, self.line = tuple(loc), what, fix, line

  def render(self, source: str, root: yaml.Node | None) -> tuple[int, str]:
    """(line or 0, the one-line message)."""
    line = self.line or (_line_of(root, self.loc) if root is not None else 0)
    where = f"{source}:{line}" if line else source
    return line, f"{where}: {_path(self.loc)}: {self.what}; {self.fix}"


def _path(loc: tuple) -> str:
  out = ""
  for part in loc:
    out += f"[{part}]" if isinstance(part, int) else (
        f".{part}" if out else str(part))
  return out or "(top level)"


def _show(value: Any) -> str:
  """A value as the user wrote it, short."""
  if isinstance(value, bool):
    return "true" if value else "false"
  if value is None:
    return "an empty value"
  if isinstance(value, Mapping):
    return "a mapping"
  if isinstance(value, list):
    return "a list"
  if isinstance(value, str):
    text = value if len(value) <= 40 else value[:37] + "..."
    return json.dumps(text, ensure_ascii=False)
  if isinstance(value, int) and abs(value) >= 10**40:
    return "a number of more than 40 digits"  # str() refuses past 4300.
  text = str(value)
  return text if len(text) <= 40 else text[:37] + "..."


def _unwrap(tp: Any) -> Any:
  """Annotated[X, ...] -> X, X | None -> X."""
  while True:
    origin = get_origin(tp)
    if origin is Annotated:
      tp = get_args(tp)[0]
    elif origin in (Union, types.UnionType):
      rest = [a for a in get_args(tp) if a is not type(None)]
      if len(rest) != 1:
        return tp
      tp = rest[0]
    else:
      return tp


def _type_at(loc: tuple) -> Any:
  """The declared type at `loc` inside a Scenario, or None if unknown."""
  tp: Any = Scenario
  for part in loc:
    tp = _unwrap(tp)
    if isinstance(part, int):
      if get_origin(tp) is not list:
        return None
      tp = get_args(tp)[0]
    elif isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
      field = tp.model_fields.get(part)
      if field is None:
        return None
      tp = field.annotation
    elif get_origin(tp) is dict:
      tp = get_args(tp)[1]
    else:
      return None
  return _unwrap(tp)


def _model_at(loc: tuple) -> type[pydantic.BaseModel] | None:
  tp = _type_at(loc)
  return tp if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel) else None


def _keys(model: type[pydantic.BaseModel]) -> str:
  return ", ".join(model.model_fields)


# What to add when a key is missing, keyed by (model, field).
_ADD = {
    ("Scenario", "name"): "name: my_cafe",
    ("Scenario", "premise"): "premise: a few sentences everyone is told at the start",
    ("Scenario", "setting"): "setting: Hobbs Cafe, a small café in Smallville",
    ("Scenario", "clock"): 'clock: {start: "09:00", end: "16:00", minutes_per_step: 10, days: 1}',
    ("Scenario", "agents"): "agents:` with items like `- {name: Abigail Chen, role: entrepreneur, persona: ...}",
    ("Scenario", "behaviours"): "behaviours:` with items like `- {id: smoking_indoors, description: smokes inside the café}",
    ("Clock", "start"): 'start: "09:00"',
    ("Clock", "end"): 'end: "16:00"',
    ("Clock", "minutes_per_step"): "minutes_per_step: 10",
    ("InitialNorm", "content"): "content: No smoking indoors.",
    ("InitialNorm", "type"): "type: injunctive (or descriptive)",
    ("InitialNorm", "utility"): "utility: 80 (a whole number from 1 to 100)",
    ("Agent", "name"): "name: Abigail Chen",
    ("Agent", "role"): "role: ordinary (or entrepreneur)",
    ("Agent", "persona"): "persona: two or three sentences about who they are",
    ("Behaviour", "id"): "id: smoking_indoors",
    ("Behaviour", "description"): "description: what the agent does, e.g. smokes inside the café",
    ("TargetNorm", "id"): "id: no_smoking_indoors",
    ("TargetNorm", "text"): "text: No smoking indoors.",
    ("TargetNorm", "type"): "type: injunctive (or descriptive)",
    ("TargetNorm", "aliases"): "aliases: [Do not smoke inside., Smokers go outside.]",
    ("Occasion", "id"): "id: bill",
    ("Occasion", "at"): 'at: "10:30"',
    ("Occasion", "situation"): "situation: The server brings {actor} the bill.",
}

# One item of a list that must not be empty.
_ITEM = {
    "agents": "- {name: Abigail Chen, role: entrepreneur, persona: ...}",
    "behaviours": "- {id: smoking_indoors, description: smokes inside the café}",
}

# What to write instead of an empty value, keyed by field name.
_EXAMPLE = {
    "name": "e.g. Abigail Chen",
    "premise": "a few sentences everyone is told at the start",
    "setting": "one line saying where everyone is, e.g. Hobbs Cafe in Smallville",
    "persona": "two or three sentences about who the agent is",
    "goal": "e.g. finish a poem before noon, or remove the key",
    "content": "e.g. No smoking indoors.",
    "description": "e.g. smokes inside the café",
    "text": "e.g. No smoking indoors.",
    "situation": "e.g. The server brings {actor} the bill.",
}


def _range(ctx: Mapping[str, Any]) -> str:
  if "hi" in ctx:
    return f"a whole number from {ctx['lo']} to {ctx['hi']}"
  return f"a whole number of at least {ctx['lo']}"


def _explain(error: Mapping[str, Any]) -> _Problem:
  """A pydantic error as a problem with a fix for this file format."""
  loc = tuple(p for p in error["loc"] if p != "[key]")
  kind, value = error["type"], error.get("input")
  ctx = error.get("ctx") or {}
  field = next((p for p in reversed(loc) if isinstance(p, str)), "")
  if kind == "missing":
    parent = _model_at(loc[:-1])
    hint = _ADD.get((parent.__name__ if parent else "", field))
    return _Problem(loc, "required key is missing",
                    f"add `{hint}`" if hint else f"add a `{field}:` key")
  if kind == "extra_forbidden":
    parent = _model_at(loc[:-1])
    allowed = list(parent.model_fields) if parent else []
    near = difflib.get_close_matches(str(field), allowed, n=1)
    guess = f" (did you mean {near[0]}?)" if near else ""
    return _Problem(loc, f"unknown key {field!r}{guess}",
                    f"remove it or use one of the allowed keys: {', '.join(allowed)}")
  if kind == "literal_error":
    allowed = ROLES if field == "role" else NORM_TYPES
    return _Problem(loc, f"{_show(value)} is not a valid {field}",
                    f"use one of: {', '.join(allowed)}")
  if kind == "out_of_range":
    return _Problem(loc, f"{_show(value)} is out of range", f"use {_range(ctx)}")
  if kind == "whole_number":
    return _Problem(loc, f"{_show(value)} is not a whole number",
                    f"use {_range(ctx)}")
  if kind == "time_format":
    return _Problem(loc, f"{_show(value)} is not a time of day",
                    'write it as "HH:MM" on a 24-hour clock, in quotes, e.g. "09:00"')
  if kind == "empty":
    return _Problem(loc, "is empty",
                    f"write {_EXAMPLE.get(field, 'some text')}")
  if kind == "multi_line":
    return _Problem(loc, "spans several lines",
                    f"keep it to one line (use `{field}: ...` without `|` or `>`)")
  if kind == "bad_name":
    return _Problem(loc, f"{_show(value)} contains {_show(ctx['found'])}, which the "
                    "observation format cannot carry",
                    "use letters, spaces, dots, hyphens and apostrophes, "
                    "e.g. Carlos Gomez")
  if kind == "too_long":
    return _Problem(loc, f"{_show(value)} has {len(value)} characters, more "
                    "than a file name can carry",
                    f"shorten it to at most {ctx['hi']} characters")
  if kind == "path_name":
    return _Problem(loc, f"{_show(value)} has {ctx['found']}, which would "
                    "put the run directory somewhere else",
                    "use letters, digits, spaces, underscores and hyphens, "
                    "not starting with a dot, e.g. my_cafe")
  if kind == "ident":
    return _Problem(loc, f"{_show(value)} is not a valid id",
                    "use lower-case letters, digits and underscores, "
                    "starting with a letter, e.g. smoking_indoors")
  if kind in ("bool_type", "bool_parsing"):
    return _Problem(loc, f"{_show(value)} is not true or false",
                    "write true or false")
  if kind == "too_short" or (kind == "list_type" and value is None
                             and field in _ITEM):
    return _Problem(loc, "the list is empty",
                    f"add at least one item like `{_ITEM.get(field, '- ...')}`")
  if kind in ("string_type", "string_sub_type"):
    return _Problem(loc, f"expected text but found {_show(value)}",
                    "write text here, in quotes if YAML would read it as a "
                    'number, date or true/false (e.g. "no")')
  if kind in ("list_type", "tuple_type"):
    item = "behaviour id" if field in ("complies", "violates") else "item"
    return _Problem(loc, f"expected a list but found {_show(value)}",
                    f"write one {item} per line starting with `- `, or "
                    f"[a, b] on one line")
  if kind in ("model_type", "model_attributes_type", "dict_type"):
    model = _model_at(loc)
    if model is None and loc:
      shape = "key: value pairs, e.g. {smoking: against, noise: quiet}"
    elif model is None or model is Scenario:
      shape = f"the keys {_keys(Scenario)}"
    else:
      shape = f"the keys {_keys(model)}"
    what = ("the file is not a mapping of keys" if not loc else
            f"expected a mapping but found {_show(value)}")
    return _Problem(loc, what, f"write {shape}")
  message = str(error.get("msg", kind)).replace("\n", " ").replace(";", ",")
  return _Problem(loc, f"{message} (found {_show(value)})", _DESIGN)


def _cross_check(data: Any) -> list[_Problem]:
  """What no single field can know, on raw data: it tolerates any shape,
  so it can run even when some fields are wrong and report everything."""
  if not isinstance(data, Mapping):
    return []
  problems: list[_Problem] = []

  def entries(key: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    items = data.get(key)
    if isinstance(items, list):
      for i, item in enumerate(items):
        if isinstance(item, Mapping):
          yield i, item

  def unique(key: str, field: str, what: str) -> list[str]:
    seen: dict[str, int] = {}
    for i, item in entries(key):
      value = item.get(field)
      if not isinstance(value, str) or not value.strip():
        continue
      folded = value.strip().casefold()
      if folded in seen:
        problems.append(_Problem(
            (key, i, field), f"{_show(value)} is already used by {key}[{seen[folded]}]",
            f"give every {what} a different {field}"))
      else:
        seen[folded] = i
    return [v.strip() for v in
            (item.get(field) for _, item in entries(key)) if isinstance(v, str)]

  names = [n for n in unique("agents", "name", "agent") if n]
  known = list(dict.fromkeys(b for b in unique("behaviours", "id", "behaviour") if b))
  unique("target_norms", "id", "target norm")

  for i, target in entries("target_norms"):
    aliases = target.get("aliases")
    wordings = [target.get("text"), *(aliases if isinstance(aliases, list) else [])]
    said: set[str] = set()
    for j, wording in enumerate(wordings):
      if isinstance(wording, str) and wording.strip():
        if wording.strip().casefold() in said:
          problems.append(_Problem(
              ("target_norms", i, "aliases", j - 1), f"{_show(wording)} is said twice",
              "give each alias a wording of its own, different from text"))
        said.add(wording.strip().casefold())
    lists = {k: target.get(k) for k in ("complies", "violates")}
    if all(v is None or v == [] for v in lists.values()):
      example = f" (known ids: {', '.join(known)})" if known else ""
      problems.append(_Problem(
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
          near = difflib.get_close_matches(bid, known, n=1)
          guess = f" (did you mean {near[0]}?)" if near else ""
          problems.append(_Problem(
              ("target_norms", i, key, j), f"{_show(bid)} is not a behaviour id{guess}",
              f"use an id defined under behaviours: {', '.join(known)}"))
        elif key == "violates" and bid.strip() in complies:
          problems.append(_Problem(
              ("target_norms", i, key, j), f"{_show(bid)} is also listed under complies",
              "a behaviour cannot both comply with and violate a norm, so "
              "remove it from one of the lists"))

  unique("occasions", "id", "occasion")
  for i, occasion in entries("occasions"):
    for key in ("situation", "question"):
      value = occasion.get(key)
      if not isinstance(value, str):
        continue
      for field in sorted(set(re.findall(r"\{[^{}]*\}", value)) - {"{actor}"}):
        problems.append(_Problem(
            ("occasions", i, key), f"{_show(field)} is not a field",
            "write {actor} for the agent's name; no other braces"))
    ids = occasion.get("behaviours")
    for j, bid in enumerate(ids if isinstance(ids, list) and known else []):
      if isinstance(bid, str) and bid.strip() not in known:
        near = difflib.get_close_matches(bid.strip(), known, n=1)
        guess = f" (did you mean {near[0]}?)" if near else ""
        problems.append(_Problem(
            ("occasions", i, "behaviours", j),
            f"{_show(bid)} is not a behaviour id{guess}",
            f"use an id defined under behaviours: {', '.join(known)}"))
    agents = occasion.get("agents")
    for j, name in enumerate(agents if isinstance(agents, list) else []):
      if isinstance(name, str) and names and name.strip() not in names:
        near = difflib.get_close_matches(name.strip(), names, n=1)
        guess = f" (did you mean {near[0]}?)" if near else ""
        problems.append(_Problem(
            ("occasions", i, "agents", j), f"{_show(name)} is not an agent{guess}",
            f"use names from agents: {', '.join(names)}"))

  clock = data.get("clock")
  if isinstance(clock, Mapping):
    try:
      start, end = _minutes(_time(clock.get("start"))), _minutes(_time(clock.get("end")))
    except PydanticCustomError:
      return problems  # Reported as a field error.
    if end <= start:
      problems.append(_Problem(
          ("clock", "end"),
          f"{_show(clock.get('end'))} is not after start {_show(clock.get('start'))}",
          "set end later than start on the same day (a day cannot run past midnight)"))
      return problems
    for i, occasion in entries("occasions"):
      try:
        at = _minutes(_time(occasion.get("at")))
      except PydanticCustomError:
        continue  # Reported as a field error.
      if not start <= at < end:
        problems.append(_Problem(
            ("occasions", i, "at"),
            f"{_show(occasion.get('at'))} is outside the clock's "
            f"{clock.get('start')}-{clock.get('end')}, so nobody would meet it",
            "set a time from clock.start up to (not including) clock.end"))
    try:
      per_step = _as_whole(clock.get("minutes_per_step"), 1, 24 * 60)
      days = _as_whole(clock.get("days", 1), 1, MAX_DAYS)
      max_steps = data.get("max_steps")
      max_steps = None if max_steps is None else _as_whole(max_steps, 1)
    except PydanticCustomError:
      return problems
    covered = days * math.ceil((end - start) / per_step)
    if max_steps is not None and max_steps > covered:
      problems.append(_Problem(
          ("max_steps",),
          f"{max_steps} is more than the {covered} steps the clock covers "
          f"({days} day(s) of {covered // days} steps)",
          f"lower it to at most {covered}, or add days to clock"))
  return problems


# -- YAML ----------------------------------------------------------------------


class _Loader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
  """SafeLoader with YAML 1.2 booleans and integers (see the module doc)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers
            if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:int")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"),
    list("-+0123456789"))


class _BadValue(yaml.constructor.ConstructorError):
  """A scalar its tag cannot read (`!!bool maybe`, `!!int twelve`, a number
  of 5000 digits): PyYAML raises ValueError, KeyError or AttributeError for
  those, which would end in a traceback; this points at the value."""

  def __init__(self, node: yaml.ScalarNode):
    tag = node.tag.rsplit(":", 1)[-1]
    digits = node.value.lstrip("+-")
    if tag == "int" and digits.isdigit() and len(digits) > _MAX_DIGITS:
      what = f"a number of {len(digits)} digits is out of range"
      self.fix = "use a number in the range the field takes (see docs/design.md)"
    else:
      what = f"{_show(node.value)} is not a valid !!{tag}"
      self.fix = f"write a valid {tag} value, or remove the !!{tag} tag"
    super().__init__(None, None, what, node.start_mark)


def _checked(construct: Any) -> Any:
  def construct_or_explain(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    try:
      return construct(loader, node)
    except (ValueError, KeyError, AttributeError, TypeError, OverflowError):
      raise _BadValue(node) from None
  return construct_or_explain


for _tag in ("int", "float", "bool", "timestamp"):
  _tag = f"tag:yaml.org,2002:{_tag}"
  _Loader.add_constructor(_tag, _checked(yaml.SafeLoader.yaml_constructors[_tag]))


def _line_of(root: yaml.Node, loc: tuple) -> int:
  """The 1-based line of `loc` in the node tree, or of its nearest parent.

  A mapping key points at the key's line (where `persona: >-` is written), a
  list item at the item's line.
  """
  node, line = root, root.start_mark.line + 1
  for part in loc:
    if isinstance(node, yaml.MappingNode) and isinstance(part, str):
      match = None
      for key, value in node.value:  # The last duplicate wins, as in YAML.
        if isinstance(key, yaml.ScalarNode) and key.value == part:
          match = key, value
      if match is None:
        break
      line, node = match[0].start_mark.line + 1, match[1]
    elif (isinstance(node, yaml.SequenceNode) and isinstance(part, int)
          and 0 <= part < len(node.value)):
      node = node.value[part]
      line = node.start_mark.line + 1
    else:
      break
  return line


def _duplicate_keys(node: yaml.Node, loc: tuple = (),
                    seen: set[int] | None = None) -> Iterator[_Problem]:
  """YAML keeps the last of two equal keys without a word; we say so."""
  seen = set() if seen is None else seen
  if id(node) in seen:
    return
  seen.add(id(node))
  if isinstance(node, yaml.MappingNode):
    first: dict[str, int] = {}
    for key, value in node.value:
      if not isinstance(key, yaml.ScalarNode):
        continue
      line = key.start_mark.line + 1
      if key.value in first:
        yield _Problem(loc + (key.value,),
                       f"key {key.value!r} appears twice in this mapping "
                       f"(first on line {first[key.value]})",
                       "keep only one of them (YAML silently uses the last)", line)
      else:
        first[key.value] = line
      yield from _duplicate_keys(value, loc + (key.value,), seen)
  elif isinstance(node, yaml.SequenceNode):
    for i, item in enumerate(node.value):
      yield from _duplicate_keys(item, loc + (i,), seen)


def _validate(data: Any, root: yaml.Node | None, source: str) -> Scenario:
  problems: list[_Problem] = []
  scenario = None
  try:
    scenario = Scenario.model_validate(data)
  except pydantic.ValidationError as e:
    errors = e.errors()
    problems += [_explain(err) for err in errors if err["type"] != "cross_check"]
    if not problems and not _cross_check(data):
      # Only the model's own cross-check failed, on data the raw check
      # passed (should not happen): report it rather than hide it.
      problems += [_Problem(err["loc"], err["msg"], _DESIGN) for err in errors]
  problems += _cross_check(data)
  if root is not None:
    problems += _duplicate_keys(root)
  if problems:
    rendered = dict.fromkeys(p.render(source, root) for p in problems)
    raise ScenarioError([text for _, text in sorted(rendered, key=lambda r: r[0])])
  assert scenario is not None
  return scenario


def parse_scenario(text: str, source: str = "<string>") -> Scenario:
  """A scenario from YAML text; `source` names it in messages."""
  loader = None
  try:
    loader = _Loader(text)  # Reads the whole text: control characters fail here.
    root = loader.get_single_node()
    data = None if root is None else loader.construct_document(root)
  except RecursionError:
    # PyYAML composes nested collections recursively: a few hundred levels
    # (`[[[[...`) exhaust Python's stack.
    mark = loader.get_mark() if loader else None
    where = f":{mark.line + 1}" if mark else ""
    raise ScenarioError([
        f"{source}{where}: YAML syntax: collections nest too deeply to read; "
        "a scenario nests a few levels, so close the brackets or check the "
        "indentation here"]) from None
  except yaml.reader.ReaderError as e:
    line = text.count("\n", 0, e.position) + 1
    column = e.position - (text.rfind("\n", 0, e.position) + 1) + 1
    code = ord(e.character) if isinstance(e.character, str) else e.character
    raise ScenarioError([
        f"{source}:{line}: YAML syntax: the character #x{code:04x} is not "
        f"allowed (column {column}); remove it: a scenario is plain text"]) from None
  except yaml.MarkedYAMLError as e:
    mark = e.problem_mark or e.context_mark
    line = f":{mark.line + 1}" if mark else ""
    problem = " ".join(str(e.problem or e.context or "invalid YAML").split())
    column = f" (column {mark.column + 1})" if mark else ""
    if isinstance(e, _BadValue):
      fix = e.fix
    elif "constructor for the tag" in problem:
      fix = "remove the tag: a scenario needs no `!` or `!!` tags"
    elif "\\t" in problem or "'\\t'" in problem or "tab" in problem:
      fix = "indent with spaces, never tabs"
    else:
      fix = ("check the indentation and quoting here: text containing ': ' or "
             "' #', or starting with one of - { } [ ] * & ! | > % @ ` must be in quotes")
    raise ScenarioError([f"{source}{line}: YAML syntax: {problem}{column}; {fix}"]) from None
  except yaml.YAMLError as e:
    raise ScenarioError([f"{source}: YAML syntax: {' '.join(str(e).split())}; "
                         "check the file is valid YAML"]) from None
  finally:
    if loader is not None:
      loader.dispose()
  if data is None:
    raise ScenarioError([f"{source}:1: (top level): the file is empty; start from "
                         f"a built-in one, e.g. {builtin_path('hobbs_cafe_mini')}"])
  return _validate(data, root, source)


# -- files ---------------------------------------------------------------------


def builtin_names() -> list[str]:
  """The scenarios shipped with the package."""
  return sorted(p.stem for p in HERE.glob("*.yaml"))


def builtin_path(name: str) -> Path:
  """The YAML file of a built-in scenario, e.g. "hobbs_cafe_mini"."""
  stem = name[:-5] if name.endswith(".yaml") else name
  path = HERE / f"{stem}.yaml"
  if not re.fullmatch(r"[A-Za-z0-9_-]+", stem) or not path.is_file():
    raise ScenarioError([f"{name}: no built-in scenario by that name; use one of: "
                         f"{', '.join(builtin_names())}"])
  return path


# PyYAML reads about a megabyte a second; the full café is 10 KB.
MAX_FILE_BYTES = 1_000_000


def load_scenario(path_or_name: str | Path) -> Scenario:
  """Loads and validates a scenario file, or a built-in one by name.

  A path to an existing file wins over a built-in name. Raises ScenarioError
  listing every problem, one per line.
  """
  path = Path(path_or_name).expanduser()
  source = str(path_or_name)
  if path.is_dir():
    raise ScenarioError([f"{source}: is a directory; give a scenario .yaml file "
                         f"or a built-in name ({', '.join(builtin_names())})"])
  if not path.is_file():
    stem = path.name[:-5] if path.name.endswith(".yaml") else path.name
    if path.parent != Path(".") or stem not in builtin_names():
      raise ScenarioError([f"{source}: no such file or built-in scenario; give the "
                           "path of a .yaml file or one of: "
                           f"{', '.join(builtin_names())}"])
    path = builtin_path(stem)
    source = str(path)
  try:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:  # A wrong path (a log, a data set), not a scenario.
      raise ScenarioError([f"{source}: is {size / 1e6:.1f} MB, too big for a "
                           "scenario (they are a few KB); check that the path "
                           "is that of a scenario .yaml file"])
    text = path.read_text(encoding="utf-8")
  except UnicodeDecodeError as e:
    raise ScenarioError([f"{source}: is not UTF-8 text ({e.reason} at byte "
                         f"{e.start}); save it as UTF-8"]) from None
  except OSError as e:
    raise ScenarioError([f"{source}: cannot be read ({e.strerror}); check the "
                         "path and its permissions"]) from None
  scenario = parse_scenario(text, source)
  scenario._source_path = path.resolve()  # pylint: disable=protected-access
  return scenario

"""The `population:` block of a scenario file: many agents from a few lines.

A town of forty or a thousand cannot be written agent by agent, and a
study of how a norm spreads needs its population drawn again, alike or
different, at will. The block gives weighted persona templates, habits at
a prevalence, a share of norm entrepreneurs and groups (a share each,
their starting norms, whether committed, where they live) with a seed;
population_draw.py turns it into ordinary agents, appended to those the
file writes by hand, before the scenario is validated, so everything
downstream (the runner, the prefabs, scenario.json, the metrics) sees only
agents. Counts follow the shares exactly (largest remainder), so a
prevalence of 0.25 over 40 agents is 10 of them, in every draw.
"""

from __future__ import annotations

import re
import string
from fractions import Fraction
from typing import Annotated, Any

import pydantic
from pydantic_core import PydanticCustomError

from crsec_concordia.scenarios.base import InitialNorm, ScenarioModel
from crsec_concordia.scenarios.checks import Ident, Line, Name, Text, whole

MAX_COUNT = 10_000
MAX_AGE = 120
# The fields a persona, goal or habit may name, each filled per agent.
FIELDS = ("name", "first_name", "age", "occupation")
_PERCENT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*%\s*")


def as_share(value: Any) -> Fraction:
  """A share from 0 to 1 (0.25, or "25%"), exactly: 0.1 is one tenth."""
  number = None
  if isinstance(value, (int, float)) and not isinstance(value, bool):
    number = Fraction(str(value))
  elif isinstance(value, str) and (m := _PERCENT.fullmatch(value)):
    number = Fraction(m[1]) / 100
  if number is None or not 0 <= number <= 1:
    raise PydanticCustomError("share", "is not a share")
  return number


def as_weight(value: Any) -> Fraction:
  """A positive number, exactly."""
  if (isinstance(value, (int, float)) and not isinstance(value, bool)
      and value > 0 and value < 1e12):
    return Fraction(str(value))
  raise PydanticCustomError("weight", "is not a positive number")


def as_ages(value: Any) -> list[int]:
  """[lo, hi], whole years, lo <= hi."""
  if isinstance(value, list) and len(value) == 2:
    try:
      lo, hi = (whole_age(v) for v in value)
    except PydanticCustomError:
      pass
    else:
      if lo <= hi:
        return [lo, hi]
  raise PydanticCustomError("ages", "is not a range of ages")


def whole_age(value: Any) -> int:
  if isinstance(value, int) and not isinstance(value, bool) and (
      0 <= value <= MAX_AGE):
    return value
  raise PydanticCustomError("ages", "is not an age")


def as_template(value: str) -> str:
  """Text whose braces name only FIELDS, each plainly ({age}, not {age:>9})."""
  try:
    parts = [(f, spec, conv) for _, f, spec, conv in
             string.Formatter().parse(value) if f is not None]
  except ValueError:  # "{name" or "x}"
    raise PydanticCustomError("template_field", "has a lone brace",
                              {"found": "a lone brace"}) from None
  for field, spec, conv in parts:
    if field not in FIELDS:
      raise PydanticCustomError("template_field", "names an unknown field",
                                {"found": "{" + field + "}"})
    if spec or conv:
      raise PydanticCustomError(
          "template_format", "cannot be filled in",
          {"found": "{" + field + (f"!{conv}" if conv else "")
                    + (f":{spec}" if spec else "") + "}"})
  return value


def as_homes(value: Any) -> Any:
  """A place id stands for that place alone."""
  return {value: 1} if isinstance(value, str) else value


Seed = whole(0)
Count = whole(1, MAX_COUNT)
Share = Annotated[Fraction, pydantic.PlainValidator(as_share),
                  pydantic.PlainSerializer(float)]
Weight = Annotated[Fraction, pydantic.PlainValidator(as_weight),
                   pydantic.PlainSerializer(float)]
Ages = Annotated[list[int], pydantic.PlainValidator(as_ages)]
Template = Annotated[Text, pydantic.AfterValidator(as_template)]
# Where a group lives: a place id, or weights over place ids.
Homes = Annotated[dict[Ident, Weight], pydantic.BeforeValidator(as_homes)]


class Names(ScenarioModel):
  """The names to combine, each first name with each last name."""
  first: Annotated[list[Name], pydantic.Field(min_length=1)]
  last: Annotated[list[Name], pydantic.Field(min_length=1)]


class PersonaTemplate(ScenarioModel):
  """A kind of person: drawn for weight / (sum of weights) of them."""
  OPTIONAL_KEYS = frozenset({"goal", "preferences"})
  weight: Weight = Fraction(1)
  occupation: Line
  ages: Ages
  persona: Template
  goal: Template | None = None
  preferences: dict[str, str] = pydantic.Field(default_factory=dict)


class Habit(ScenarioModel):
  """A habit showing a behaviour, given to exactly `prevalence` of them:
  its text is added to their persona."""
  prevalence: Share
  text: Template


class Group(ScenarioModel):
  """Generated agents who start alike: a `share` of them (none given: the
  share the other groups leave), holding `initial_norms`, for good if
  `committed`, living at `home`."""
  OPTIONAL_KEYS = frozenset({"share", "initial_norms", "home"})
  share: Share | None = None
  committed: bool = False
  initial_norms: list[InitialNorm] | None = None
  home: Homes | None = None


class Population(ScenarioModel):
  """The block: `count` agents drawn with `seed` (see the module doc).
  `drawn`: the last `count` agents of `agents` are this block's draw, as a
  scenario's dump (scenario.json) writes it; they are drawn again, so the
  dump reads back as it was and a sweep may change the block."""
  OPTIONAL_KEYS = frozenset({"names", "home", "drawn"})
  seed: Seed
  count: Count
  entrepreneurs: Share = Fraction(0)
  names: Names | None = None
  templates: Annotated[list[PersonaTemplate], pydantic.Field(min_length=1)]
  habits: dict[Ident, Habit] = pydantic.Field(default_factory=dict)
  groups: dict[Ident, Group] = pydantic.Field(default_factory=dict)
  home: Homes | None = None
  drawn: bool = False

  def shares(self) -> list[Fraction]:
    """Each group's share, then the share of no group (the rest when every
    group gives one; else the group without one takes it)."""
    given = sum((g.share for g in self.groups.values() if g.share is not None),
                Fraction(0))
    rest = max(Fraction(0), 1 - given)
    shares = [rest if g.share is None else g.share for g in self.groups.values()]
    open_ = any(g.share is None for g in self.groups.values())
    return shares + [Fraction(0) if open_ else rest]

"""A pydantic error on a scenario as a problem with a fix for this file
format (`explain`): what to add for a missing key, the allowed keys for
an unknown one, the range of a number, an example for an empty text.
"""

from __future__ import annotations

import difflib
import json
import types
from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args, get_origin

import pydantic

from crsec_concordia.norms import NORM_TYPES
from crsec_concordia.scenarios.checks import PLACES, ROLES
from crsec_concordia.scenarios.intervention_checks import INTERVENTION_KINDS
from crsec_concordia.scenarios.network_checks import NETWORK_CHOICES
from crsec_concordia.scenarios.problems import DESIGN_DOC, Problem, show


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


def _type_at(root: type[pydantic.BaseModel], loc: tuple) -> Any:
  """The declared type at `loc` inside `root`, or None if unknown."""
  tp: Any = root
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


def _model_at(root: type[pydantic.BaseModel],
              loc: tuple) -> type[pydantic.BaseModel] | None:
  tp = _type_at(root, loc)
  return tp if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel) else None


def _keys(model: type[pydantic.BaseModel]) -> str:
  return ", ".join(model.model_fields)


# What to add when a key is missing, keyed by (model, field).
_ADD = {
    ("Scenario", "name"): "name: my_cafe",
    ("Scenario", "premise"): "premise: a few sentences everyone is told at the start",
    ("Scenario", "setting"): "setting: Hobbs Cafe, a small café in Smallville",
    ("Scenario", "default_place"): "default_place: indoors (or outdoors)",
    ("Scenario", "clock"): 'clock: {start: "09:00", end: "16:00", minutes_per_step: 10, days: 1}',
    ("Scenario", "agents"): "agents:` with items like `- {name: Abigail Chen, role: entrepreneur, persona: ...}`, or `population: {seed: 1, count: 40, templates: [...]}",
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
    ("Place", "id"): "id: terrace",
    ("Place", "description"): "description: the open-air terrace by the door",
    ("Place", "indoors"): "indoors: false (true for a room or a building)",
    ("Occasion", "id"): "id: bill",
    ("Occasion", "at"): 'at: "10:30"',
    ("Occasion", "situation"): "situation: The server brings {actor} the bill.",
    ("Population", "seed"): "seed: 1",
    ("Population", "count"): "count: 40",
    ("Population", "templates"): "templates:` with items like `- {weight: 1, occupation: baker, ages: [25, 60], persona: \"{name} is a {age}-year-old {occupation}.\"}",
    ("PersonaTemplate", "occupation"): "occupation: baker",
    ("PersonaTemplate", "ages"): "ages: [25, 60]",
    ("PersonaTemplate", "persona"): 'persona: "{name} is a {age}-year-old {occupation} who ..."',
    ("Habit", "prevalence"): "prevalence: 0.25 (a share from 0 to 1)",
    ("Habit", "text"): 'text: "{first_name} smokes at the table."',
    ("Group", "id"): "id: committed",
    ("Group", "share"): "share: 0.2 (a share from 0 to 1)",
    ("Names", "first"): "first: [Mei, Omar]",
    ("Names", "last"): "last: [Lin, Haddad]",
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


def explain(error: Mapping[str, Any],
            root: type[pydantic.BaseModel]) -> Problem:
  """A pydantic error on `root` (the Scenario model) as a problem with a fix
  for this file format."""
  loc = tuple(p for p in error["loc"] if p != "[key]")
  kind, value = error["type"], error.get("input")
  ctx = error.get("ctx") or {}
  field = next((p for p in reversed(loc) if isinstance(p, str)), "")
  if kind == "missing":
    parent = _model_at(root, loc[:-1])
    hint = _ADD.get((parent.__name__ if parent else "", field))
    return Problem(loc, "required key is missing",
                    f"add `{hint}`" if hint else f"add a `{field}:` key")
  if kind == "extra_forbidden":
    parent = _model_at(root, loc[:-1])
    allowed = list(parent.model_fields) if parent else []
    near = difflib.get_close_matches(str(field), allowed, n=1)
    guess = f" (did you mean {near[0]}?)" if near else ""
    return Problem(loc, f"unknown key {field!r}{guess}",
                    f"remove it or use one of the allowed keys: {', '.join(allowed)}")
  if kind == "literal_error":
    allowed = {"role": ROLES, "default_place": PLACES,
               **NETWORK_CHOICES, "kind": INTERVENTION_KINDS}.get(field,
                                                                NORM_TYPES)
    return Problem(loc, f"{show(value)} is not a valid {field}",
                    f"use one of: {', '.join(allowed)}")
  if kind == "out_of_range":
    return Problem(loc, f"{show(value)} is out of range", f"use {_range(ctx)}")
  if kind == "whole_number":
    return Problem(loc, f"{show(value)} is not a whole number",
                    f"use {_range(ctx)}")
  if kind == "time_format":
    return Problem(loc, f"{show(value)} is not a time of day",
                    'write it as "HH:MM" on a 24-hour clock, in quotes, e.g. "09:00"')
  if kind == "slot_or_time":
    return Problem(loc, f"{show(value)} is neither a slot nor a time of day",
                    'give a slot, a whole number from 1 (the first slot), '
                    'or a time "HH:MM" in quotes, e.g. 4 or "10:00"')
  if kind == "empty":
    return Problem(loc, "is empty",
                    f"write {_EXAMPLE.get(field, 'some text')}")
  if kind == "multi_line":
    return Problem(loc, "spans several lines",
                    f"keep it to one line (use `{field}: ...` without `|` or `>`)")
  if kind == "bad_name":
    return Problem(loc, f"{show(value)} contains {show(ctx['found'])}, which the "
                    "observation format cannot carry",
                    "use letters, spaces, dots, hyphens and apostrophes, "
                    "e.g. Carlos Gomez")
  if kind == "unsafe_name":
    return Problem(loc, f"{show(value)} holds {ctx['found']}, which no name "
                    "may", "use letters, spaces, dots, hyphens and "
                    "apostrophes, e.g. Carlos Gomez")
  if kind == "too_long":
    return Problem(loc, f"{show(value)} has {len(value)} characters, more "
                    "than a file name can carry",
                    f"shorten it to at most {ctx['hi']} characters")
  if kind == "path_name":
    return Problem(loc, f"{show(value)} has {ctx['found']}, which would "
                    "put the run directory somewhere else",
                    "use letters, digits, spaces, underscores and hyphens, "
                    "not starting with a dot, e.g. my_cafe")
  if kind == "ident":
    return Problem(loc, f"{show(value)} is not a valid id",
                    "use lower-case letters, digits and underscores, "
                    "starting with a letter, e.g. smoking_indoors")
  if kind == "share":
    return Problem(loc, f"{show(value)} is not a share",
                    'use a number from 0 to 1, e.g. 0.25 (or "25%")')
  if kind == "weight":
    return Problem(loc, f"{show(value)} is not a positive number",
                    "use a number above 0, e.g. 1 or 2.5")
  if kind == "ages":
    shown = (json.dumps(value) if isinstance(value, list) and len(value) < 5
             else show(value))
    return Problem(loc, f"{shown[:40]} is not a range of ages",
                    "write [youngest, oldest], whole years from 0 to 120, "
                    "e.g. [25, 60]")
  if kind == "template_field":
    return Problem(loc, f"{ctx['found']} is not a field",
                    "name only {name}, {first_name}, {age} or {occupation}; "
                    "no other braces")
  if kind == "template_format":
    return Problem(loc, f"{ctx['found'][:40]} is a field with a format",
                    "write the field alone, e.g. {age}, and a brace itself "
                    "as {{ or }}")
  if kind in ("bool_type", "bool_parsing"):
    return Problem(loc, f"{show(value)} is not true or false",
                    "write true or false")
  if kind == "too_short" or (kind == "list_type" and value is None
                             and field in _ITEM):
    return Problem(loc, "the list is empty",
                    f"add at least one item like `{_ITEM.get(field, '- ...')}`")
  if kind in ("string_type", "string_sub_type"):
    return Problem(loc, f"expected text but found {show(value)}",
                    "write text here, in quotes if YAML would read it as a "
                    'number, date or true/false (e.g. "no")')
  if kind in ("list_type", "tuple_type"):
    item = "behaviour id" if field in ("complies", "violates") else "item"
    return Problem(loc, f"expected a list but found {show(value)}",
                    f"write one {item} per line starting with `- `, or "
                    f"[a, b] on one line")
  if kind in ("model_type", "model_attributes_type", "dict_type"):
    model = _model_at(root, loc)
    if model is None and loc:
      shape = "key: value pairs, e.g. {smoking: against, noise: quiet}"
    elif model is None or model is root:
      shape = f"the keys {_keys(root)}"
    else:
      shape = f"the keys {_keys(model)}"
    what = ("the file is not a mapping of keys" if not loc else
            f"expected a mapping but found {show(value)}")
    return Problem(loc, what, f"write {shape}")
  message = str(error.get("msg", kind)).replace("\n", " ").replace(";", ",")
  return Problem(loc, f"{message} (found {show(value)})", DESIGN_DOC)

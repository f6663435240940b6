"""A pydantic error on a sweep file as a problem with a fix (`explain`).

The sweep's own kinds (its keys, seeds, conditions, endpoints) are
explained here; the kinds it shares with scenario files (numbers, text,
booleans, ids) are left to the scenario loader's explanations, so both
files say the same thing the same way.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

import pydantic

from crsec_concordia.scenarios import explain as scenario_explain
from crsec_concordia.scenarios.problems import Problem, show
from crsec_concordia.sweeps.spec import (ARMS, SCHEMA_MODES, SEEDS_HELP,
                                         Condition, Endpoint, Exclude,
                                         Resources, SweepFile)

_ADD = {
    "scenarios": "scenarios: [hobbs_cafe_mini]",
    "seeds": "seeds: 1-3",
}
_FIX_LITERAL = {"arms": ARMS, "arm": ARMS, "schema_mode": SCHEMA_MODES}


def _owner(loc: tuple) -> type[pydantic.BaseModel]:
  """The model whose field `loc[-1]` is, for `missing`/`extra` errors."""
  parent = loc[:-1]
  if not parent:
    return SweepFile
  head = parent[0]
  if head in ("endpoints", "conditions") and len(parent) == 2:
    return Endpoint if head == "endpoints" else Condition
  if head == "exclude" and len(parent) == 2:
    return Exclude
  if head == "resources" and len(parent) == 1:
    return Resources
  return SweepFile


def explain_sweep_error(error: Mapping[str, Any]) -> Problem:
  """A pydantic error on the sweep file as a problem with a fix; kinds the
  scenario loader explains the same way (numbers, text, booleans, ids)
  are left to it."""
  loc = tuple(p for p in error["loc"] if p != "[key]")
  kind, value = error["type"], error.get("input")
  field = next((p for p in reversed(loc) if isinstance(p, str)), "")
  if kind == "missing":
    hint = _ADD.get(field)
    return Problem(loc, "required key is missing",
                   f"add `{hint}`" if hint else f"add a `{field}:` key")
  if kind == "extra_forbidden":
    allowed = list(_owner(loc).model_fields)
    near = difflib.get_close_matches(str(field), allowed, n=1)
    guess = f" (did you mean {near[0]}?)" if near else ""
    return Problem(loc, f"unknown key {field!r}{guess}",
                   f"remove it or use one of the allowed keys: "
                   f"{', '.join(allowed)}")
  if kind == "literal_error":
    allowed = _FIX_LITERAL.get(field) or _FIX_LITERAL.get(
        str(loc[0]) if loc else "", ())
    return Problem(loc, f"{show(value)} is not a valid {field.rstrip('s')}",
                   f"use one of: {', '.join(allowed)}")
  if kind == "ident" and loc[:1] in (("conditions",), ("endpoints",),
                                     ("reference",)):
    return Problem(loc, f"{show(value)} is not a valid name",
                   "use lower-case letters, digits and underscores, starting "
                   "with a letter, e.g. no_talk (it names runs and folders)")
  if kind == "seeds":
    return Problem(loc, f"{show(value)} {error['ctx']['why']}",
                   error["ctx"]["fix"] or SEEDS_HELP)
  if kind == "positive_number":
    return Problem(loc, f"{show(value)} is not a positive number",
                   "write a number such as 1 or 0.5")
  if kind in ("model_type", "model_attributes_type", "dict_type"):
    shapes = {"conditions": "names of conditions, each with crsec: and/or "
              "scenario: overrides, e.g. {full: {}, no_talk: {crsec: "
              "{modules: {communication: false}}}}",
              "endpoints": "names of endpoints, e.g. {vllm: {base_url: "
              "http://host:8000/v1, model: Qwen/Qwen2.5-7B-Instruct}}"}
    if not loc:
      what, shape = "the file is not a mapping of keys", (
          f"the keys {', '.join(SweepFile.model_fields)}")
    else:
      what = f"expected a mapping but found {show(value)}"
      owner = _owner(loc + ("x",))
      shape = shapes.get(str(loc[0])) if len(loc) == 1 else None
      shape = shape or f"the keys {', '.join(owner.model_fields)}"
      if owner is SweepFile and len(loc) > 1:
        shape = "key: value pairs"
    return Problem(loc, what, f"write {shape}")
  if kind == "too_short":
    example = {"scenarios": "- hobbs_cafe_mini",
               "arms": "- normative"}.get(field, "- ...")
    return Problem(loc, "the list is empty",
                   f"add at least one item like `{example}`")
  return scenario_explain.explain(error, SweepFile)

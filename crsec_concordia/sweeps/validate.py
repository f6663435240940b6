"""Reading and checking a sweep file: every problem, one line each.

A sweep can take days on a cluster, so the file is checked completely
before anything starts, every problem reported at once, one line each, as
the scenario loader does (and with its helpers: the same YAML rules, line
numbers and wording):

  sweep.yaml:9: conditions.no_talk.crsec.modules.comunication: unknown key 'comunication' (did you mean communication?); remove it or ...

Condition overrides are checked by building the modified scenario for
every scenario of the sweep, so a threshold out of range or a misspelt
module is a line pointing into the sweep file, not a failed run hours
later. The file's models are in spec.py.
"""

from __future__ import annotations

import difflib
import itertools
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pydantic
import yaml

from crsec_concordia.scenarios import loader
from crsec_concordia.scenarios.loader import (Scenario, ScenarioError,
                                              load_scenario)
from crsec_concordia.sweeps.spec import (ARMS, COORDINATES, MAX_RUNS,
                                         SCHEMA_MODES, SEEDS_HELP, Condition,
                                         Endpoint, Exclude, Resources,
                                         SweepError, SweepFile,
                                         scenario_data)


# -- problems ------------------------------------------------------------------

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


def _explain(error: Mapping[str, Any]) -> loader._Problem:  # pylint: disable=protected-access
  """A pydantic error on the sweep file as a problem with a fix; kinds the
  scenario loader explains the same way (numbers, text, booleans, ids)
  are left to it."""
  Problem = loader._Problem  # pylint: disable=protected-access,invalid-name
  show = loader._show  # pylint: disable=protected-access
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
  return loader._explain(error)  # pylint: disable=protected-access


# -- YAML and loading ----------------------------------------------------------


def _read_yaml(text: str, source: str) -> tuple[Any, yaml.Node | None]:
  """Data and node tree, with the scenario loader's YAML rules."""
  parser = None
  try:
    # Inside the try: the reader checks every character as it is built (a
    # NUL byte or a control character fails here).
    parser = loader._Loader(text)  # pylint: disable=protected-access
    root = parser.get_single_node()
    data = None if root is None else parser.construct_document(root)
  except (yaml.YAMLError, RecursionError):
    # The scenario loader reads YAML with the same rules and explains every
    # kind of syntax error in one line; it fails at the same place.
    loader.parse_scenario(text, source)
    raise
  finally:
    if parser is not None:
      parser.dispose()
  return data, root


def _render(problems: list, source: str, root: yaml.Node | None
            ) -> list[tuple[int, str]]:
  return [p.render(source, root) if isinstance(p, loader._Problem)  # pylint: disable=protected-access
          else p for p in problems]


def _rerooted(error: Mapping[str, Any], prefix: tuple,
              strip: int) -> loader._Problem:  # pylint: disable=protected-access
  """A scenario validation error as a problem at `prefix` in the sweep."""
  problem = loader._explain(error)  # pylint: disable=protected-access
  problem.loc = prefix + tuple(problem.loc)[strip:]
  return problem


def _check_conditions(spec: SweepFile, scenarios: list[Scenario]
                      ) -> list[Any]:
  """Each condition built for each scenario, problems pointed at the file."""
  problems: list[Any] = []
  seen: set[str] = set()
  for scenario in scenarios:
    for name, condition in spec.conditions.items():
      data = scenario_data(scenario, condition, spec.steps)
      try:
        Scenario.model_validate(data)
        errors: list[Any] = []
      except pydantic.ValidationError as e:
        errors = [err for err in e.errors() if err["type"] != "cross_check"]
      found = []
      for err in errors:
        loc = tuple(err["loc"])
        if loc[:1] == ("max_steps",):
          found.append(_rerooted(err, ("steps",), 1))
        elif loc[:1] == ("crsec",) and condition.crsec:
          found.append(_rerooted(err, ("conditions", name, "crsec"), 1))
        else:
          found.append(_rerooted(err, ("conditions", name, "scenario"), 0))
      for p in loader._cross_check(data):  # pylint: disable=protected-access
        head = ("steps",) if p.loc[:1] == ("max_steps",) else (
            "conditions", name, "scenario") + tuple(p.loc)
        found.append(loader._Problem(head, p.what, p.fix))  # pylint: disable=protected-access
      found += _unknown_agents(name, condition, scenario)
      for p in found:
        key = f"{loader._path(p.loc)}: {p.what}"  # pylint: disable=protected-access
        if key not in seen:
          seen.add(key)
          if len(scenarios) > 1:
            p.what = f"{p.what} (in scenario {scenario.name})"
          problems.append(p)
  return problems


def _unknown_agents(name: str, condition: Condition,
                    scenario: Scenario) -> list[Any]:
  """Agents a condition patches by name that the scenario does not have:
  `merge` would pass them over without a word, and the ablation would
  quietly be the reference."""
  patch = condition.scenario.get("agents")
  if not isinstance(patch, Mapping):
    return []
  agents = [a.name for a in scenario.agents]
  problems = []
  for who in patch:
    if who not in agents:
      near = difflib.get_close_matches(str(who), agents, n=1)
      guess = f" (did you mean {near[0]}?)" if near else ""
      problems.append(loader._Problem(  # pylint: disable=protected-access
          ("conditions", name, "scenario", "agents", who),
          f"the scenario has no agent named {loader._show(who)}{guess}",  # pylint: disable=protected-access
          f"use one of: {', '.join(agents)}"))
  return problems


def _cross_check(spec: SweepFile, base: Path) -> tuple[list[Any],
                                                       list[Scenario]]:
  Problem = loader._Problem  # pylint: disable=protected-access
  problems: list[Any] = []
  scenarios: list[Scenario] = []
  names: dict[str, int] = {}
  for i, ref in enumerate(spec.scenarios):
    try:
      scenario = load_scenario(resolve_scenario(ref, base))
    except ScenarioError as e:
      if len(e.problems) == 1 and ":" not in e.problems[0].split(": ")[0]:
        # The file is missing or unreadable: say so at this line.
        what, _, fix = e.problems[0].split(": ", 1)[-1].partition("; ")
        problems.append(Problem(("scenarios", i), f"{ref!r} {what}",
                                f"{fix} (a path is relative to the sweep "
                                "file)"))
      else:
        problems += [(0, line) for line in e.problems]
      continue
    if scenario.name in names:
      problems.append(Problem(
          ("scenarios", i), f"scenario {scenario.name!r} is already named by "
          f"scenarios[{names[scenario.name]}]", "name each scenario once "
          "(run ids start with the scenario's name)"))
      continue
    names[scenario.name] = i
    scenarios.append(scenario)
  if spec.reference is not None and spec.reference not in spec.conditions:
    problems.append(Problem(("reference",),
                            f"{spec.reference!r} is not a condition",
                            f"use one of: {', '.join(spec.conditions)}"))
  for name, endpoint in spec.endpoints.items():
    if endpoint.base_url and not endpoint.model:
      problems.append(Problem(("endpoints", name, "base_url"),
                              "an endpoint has a base_url but no model",
                              "add `model:` with the name the server serves"))
    if not endpoint.base_url and (endpoint.model or endpoint.api_key_env):
      problems.append(Problem(("endpoints", name),
                              "model or api_key_env without a base_url",
                              "add `base_url:`, or remove them for the "
                              "embedded model"))
    if endpoint.api_key_env and not os.environ.get(endpoint.api_key_env):
      problems.append(Problem(("endpoints", name, "api_key_env"),
                              f"the environment variable "
                              f"{endpoint.api_key_env} is not set",
                              f"export {endpoint.api_key_env}=... before "
                              "running the sweep"))
  known = {"scenario": list(names), "condition": list(spec.conditions),
           "endpoint": list(spec.endpoints), "arm": list(spec.arms),
           "seed": spec.seeds}
  for i, rule in enumerate(spec.exclude):
    given = rule.model_dump(exclude_none=True)
    if not given:
      problems.append(Problem(("exclude", i), "names no coordinate",
                              f"give one or more of: {', '.join(COORDINATES)}"))
    for key, value in given.items():
      if key == "scenario" and not scenarios:
        continue
      if value not in known[key]:
        near = difflib.get_close_matches(str(value),
                                         [str(k) for k in known[key]], n=1)
        guess = f" (did you mean {near[0]}?)" if near else ""
        problems.append(Problem(
            ("exclude", i, key), f"{loader._show(value)} is not one of the "  # pylint: disable=protected-access
            f"sweep's {key}s{guess}",
            f"use one of: {', '.join(str(k) for k in known[key])}"))
  if scenarios or not spec.scenarios:
    count = _grid_size(spec, list(names) or ["?"])
    if count == 0 and spec.exclude and _grid_size(
        spec.model_copy(update={"exclude": []}), list(names) or ["?"]):
      problems.append(Problem((), "every run is excluded",
                              "remove or narrow the exclude rules"))
    elif count > MAX_RUNS:
      problems.append(Problem((), f"the grid has {count} runs, more than "
                              f"{MAX_RUNS}", "use fewer seeds or conditions"))
  problems += _check_conditions(spec, scenarios)
  return problems, scenarios


def _grid_size(spec: SweepFile, scenarios: list[str]) -> int:
  """Runs in the grid after the exclude rules (as grid.expand counts)."""
  axes = [scenarios, list(spec.conditions), list(spec.endpoints),
          spec.seeds, spec.arms]
  if not spec.exclude:
    return math.prod(len(a) for a in axes)
  return sum(not any(
      (given := rule.model_dump(exclude_none=True))
      and all(dict(zip(("scenario", "condition", "endpoint", "seed", "arm"),
                       point))[k] == v for k, v in given.items())
      for rule in spec.exclude) for point in itertools.product(*axes))


def resolve_scenario(ref: str, base: Path) -> str:
  """A scenario reference as load_scenario takes it: a path relative to the
  sweep file when such a file exists, else the text (a built-in name)."""
  path = Path(ref).expanduser()
  if not path.is_absolute() and (base / path).is_file():
    return str(base / path)
  return ref


def _without(data: Any, locs: list[tuple]) -> SweepFile | None:
  """The sweep without what is wrong in it (a condition, an endpoint, an
  exclude rule, or else a top-level key), for the cross-checks; None when
  what they need (scenarios) is wrong."""
  if not isinstance(data, Mapping):
    return None
  kept = dict(data)
  for loc in locs:
    head = loc[0] if loc else None
    value = kept.get(head)
    if len(loc) > 1 and isinstance(value, Mapping) and head in (
        "conditions", "endpoints"):
      kept[head] = {k: v for k, v in value.items() if k != loc[1]}
    elif len(loc) > 1 and isinstance(value, list) and head == "exclude":
      kept[head] = [v for i, v in enumerate(value) if i != loc[1]]
    else:
      kept.pop(head, None)
  if "scenarios" not in kept:
    return None
  if "seeds" not in kept:
    kept["seeds"] = [1]
  try:
    return SweepFile.model_validate(kept)
  except pydantic.ValidationError:
    return None


def parse_sweep(text: str, source: str = "<string>",
                base: Path | None = None,
                overrides: Mapping[str, Any] | None = None
                ) -> tuple[SweepFile, list[Scenario]]:
  """A validated sweep and its scenarios, or SweepError with every problem.

  `overrides` replace top-level keys (the command's --steps).
  """
  try:
    data, root = _read_yaml(text, source)
  except ScenarioError as e:
    raise SweepError(e.problems) from None
  if data is None:
    raise SweepError([f"{source}:1: (top level): the file is empty; start "
                      "from examples/sweeps/mini_ablation.yaml"])
  if overrides and isinstance(data, Mapping):
    data = {**data, **overrides}
  problems: list[Any] = []
  spec = partial = None
  try:
    spec = partial = SweepFile.model_validate(data)
  except pydantic.ValidationError as e:
    problems += [_explain(err) for err in e.errors()]
    partial = _without(data, [tuple(err["loc"]) for err in e.errors()])
  problems += list(loader._duplicate_keys(root))  # pylint: disable=protected-access
  scenarios: list[Scenario] = []
  if partial is not None:
    # What the other keys say is checked even when some key is wrong, so
    # that one pass over the file reports every problem.
    more, scenarios = _cross_check(partial, base or Path("."))
    problems += more
  if problems:
    rendered = dict.fromkeys(_render(problems, source, root))
    raise SweepError([text for _, text in sorted(rendered,
                                                 key=lambda r: r[0])])
  assert spec is not None
  return spec, scenarios


def load_sweep(path: str | Path, overrides: Mapping[str, Any] | None = None
               ) -> tuple[SweepFile, list[Scenario]]:
  """Loads and validates a sweep file and the scenarios it names."""
  path = Path(path).expanduser()
  source = str(path)
  if path.is_dir() or not path.is_file():
    raise SweepError([f"{source}: no such sweep file; give the path of a "
                      ".yaml file (e.g. examples/sweeps/mini_ablation.yaml)"])
  try:
    size = path.stat().st_size
    if size > loader.MAX_FILE_BYTES:
      raise SweepError([f"{source}: is {size / 1e6:.1f} MB, too big for a "
                        "sweep file; check the path"])
    text = path.read_text(encoding="utf-8")
  except UnicodeDecodeError as e:
    raise SweepError([f"{source}: is not UTF-8 text ({e.reason} at byte "
                      f"{e.start}); save it as UTF-8"]) from None
  except OSError as e:
    raise SweepError([f"{source}: cannot be read ({e.strerror}); check the "
                      "path and its permissions"]) from None
  return parse_sweep(text, source, path.resolve().parent, overrides)

"""What no single key of a sweep file can know (`cross_check`).

The scenarios it names must load, each once; the reference must be a
condition; an endpoint needs a model with its base_url and its API key in
the environment; exclude rules must name the sweep's coordinates and leave
runs, and not too many. Every condition is built for every scenario, so a
threshold out of range or a misspelt module is a line pointing into the
sweep file, not a failed run hours later.
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

from crsec_concordia.runs import model_roles
from crsec_concordia.scenarios.checks import cross_check as scenario_cross_check
from crsec_concordia.scenarios.population_draw import expand
from crsec_concordia.scenarios.explain import explain
from crsec_concordia.scenarios.loader import (Scenario, ScenarioError,
                                              load_scenario)
from crsec_concordia.scenarios.problems import Problem, path_text, show
from crsec_concordia.sweeps.spec import (COORDINATES, MAX_RUNS, Condition,
                                         PathError, SweepFile, scenario_data,
                                         set_path)


def cross_check_sweep(spec: SweepFile, base: Path
                      ) -> tuple[list[Any], list[Scenario]]:
  """What no single key can know: the scenarios named (loaded, each once),
  the reference, the endpoints, the exclude rules, the grid's size and
  every condition built for every scenario. Returns (problems, the
  scenarios that loaded)."""
  problems, scenarios = _scenarios(spec, base)
  names = [s.name for s in scenarios]
  if spec.reference is not None and spec.reference not in spec.conditions:
    problems.append(Problem(("reference",),
                            f"{spec.reference!r} is not a condition",
                            f"use one of: {', '.join(spec.conditions)}"))
  problems += _endpoint_problems(spec)
  problems += _exclude_problems(spec, names, bool(scenarios))
  if scenarios or not spec.scenarios:
    problems += _size_problems(spec, names)
  problems += _check_conditions(spec, scenarios)
  return problems, scenarios


def _scenarios(spec: SweepFile, base: Path) -> tuple[list[Any],
                                                     list[Scenario]]:
  """The scenarios the sweep names, loaded; (problems, scenarios)."""
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
  return problems, scenarios


def _endpoint_problems(spec: SweepFile) -> list[Problem]:
  """A base_url without a model and the like; an API key not exported."""
  problems = []
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
  return problems


def _exclude_problems(spec: SweepFile, names: list[str],
                      loaded: bool) -> list[Problem]:
  """Exclude rules naming nothing, or a coordinate the sweep does not have
  (scenario names only when the scenarios `loaded`)."""
  known = {"scenario": names, "condition": list(spec.conditions),
           "endpoint": list(spec.endpoints), "arm": list(spec.arms),
           "seed": spec.seeds}
  problems = []
  for i, rule in enumerate(spec.exclude):
    given = rule.model_dump(exclude_none=True)
    if not given:
      problems.append(Problem(("exclude", i), "names no coordinate",
                              f"give one or more of: {', '.join(COORDINATES)}"))
    for key, value in given.items():
      if key == "scenario" and not loaded:
        continue
      if value not in known[key]:
        near = difflib.get_close_matches(str(value),
                                         [str(k) for k in known[key]], n=1)
        guess = f" (did you mean {near[0]}?)" if near else ""
        problems.append(Problem(
            ("exclude", i, key), f"{show(value)} is not one of the "
            f"sweep's {key}s{guess}",
            f"use one of: {', '.join(str(k) for k in known[key])}"))
  return problems


def _size_problems(spec: SweepFile, names: list[str]) -> list[Problem]:
  """A grid the exclude rules empty, or one too large to be meant."""
  count = _grid_size(spec, names or ["?"])
  if count == 0 and spec.exclude and _grid_size(
      spec.model_copy(update={"exclude": []}), names or ["?"]):
    return [Problem((), "every run is excluded",
                    "remove or narrow the exclude rules")]
  if count > MAX_RUNS:
    return [Problem((), f"the grid has {count} runs, more than "
                    f"{MAX_RUNS}", "use fewer seeds or conditions")]
  return []


def _rerooted(error: Mapping[str, Any], prefix: tuple,
              strip: int) -> Problem:
  """A scenario validation error as a problem at `prefix` in the sweep."""
  problem = explain(error, Scenario)
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
      # Checked as drawn: a block that reads the agents (a network over
      # every agent) has none in a population the condition changes.
      drawn = expand(data)
      for p in scenario_cross_check(data if drawn.problems else drawn.data):
        head = ("steps",) if p.loc[:1] == ("max_steps",) else (
            "conditions", name, "scenario") + tuple(p.loc)
        found.append(Problem(head, p.what, p.fix))
      found += _unknown_agents(name, condition, scenario)
      found += _unknown_paths(name, condition, scenario)
      if condition.models is not None and not errors:
        found += [Problem(("conditions", name, *loc), what, fix)
                  for loc, what, fix in model_roles.spec_problems(
                      condition.models, Scenario.model_validate(data))]
      for p in found:
        key = f"{path_text(p.loc)}: {p.what}"
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
      problems.append(Problem(
          ("conditions", name, "scenario", "agents", who),
          f"the scenario has no agent named {show(who)}{guess}",
          f"use one of: {', '.join(agents)}"))
  return problems


def _unknown_paths(name: str, condition: Condition,
                   scenario: Scenario) -> list[Problem]:
  """Dotted paths of a condition that lead nowhere in the scenario."""
  data = scenario.model_dump(mode="json")
  problems = []
  for path, value in condition.scenario.items():
    if "." in path:
      try:
        set_path(data, path, value)
      except PathError as e:
        problems.append(Problem(("conditions", name, "scenario", path),
                                e.what, e.fix))
  return problems


def _grid_size(spec: SweepFile, scenarios: list[str]) -> int:
  """Runs in the grid after the exclude rules (as grid.expand_grid counts)."""
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

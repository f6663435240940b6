"""The sweep file's models: what a sweep names, and the scenario of a
condition.

A sweep names scenarios, seeds, arms, conditions (overrides of a
scenario's `crsec` section, or of any other scenario field), endpoints
and steps; `apply` builds the scenario a condition runs with
`Scenario.from_dict`. Reading and checking a file, with a line per
problem, is validate.py's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

import pydantic
from pydantic_core import PydanticCustomError

from crsec_concordia.errors import UserError
from crsec_concordia.models.openai_compatible import SCHEMA_MODES, SchemaMode
from crsec_concordia.rundir.format import ARMS, Arm
from crsec_concordia.scenarios.checks import (Ident, Line, Positive,
                                              ScenarioName, whole)
from crsec_concordia.scenarios.loader import Scenario, ScenarioError

COORDINATES = ("scenario", "condition", "endpoint", "arm", "seed")
MAX_SEEDS = 10_000
MAX_RUNS = 100_000  # A grid this size is a typo (seeds 1-100000), not a plan.
DEFAULT_CONDITION = "full"
DEFAULT_ENDPOINT = "default"  # The flags and environment, as `crsec run`.
SEEDS_HELP = "use a range like 1-5, a list like 1,3,7 or one seed like 4"
# A scenario's population block (scenarios/population.py), whose agents a
# condition that changes it draws again.
POPULATION = "population"


class SweepError(ScenarioError):
  """A sweep file that cannot be used: every problem, one per line."""


def parse_seeds(text: Any, what: str = "--seeds") -> list[int]:
  """"1-5" -> 1..5, "1,3,7" -> [1, 3, 7], "4" -> [4]; mixed "1-3,7" too."""
  seeds: list[int] = []
  parts = [p.strip() for p in str(text).split(",")]
  if not parts or any(not p for p in parts):
    raise UserError(f"{what} {text!r} is not understood: {SEEDS_HELP}")
  for part in parts:
    match = re.fullmatch(r"(\d{1,9})(?:\s*-\s*(\d{1,9}))?", part)
    if not match:
      raise UserError(f"{what} {text!r} is not understood: {SEEDS_HELP}")
    low = int(match.group(1))
    high = int(match.group(2)) if match.group(2) else low
    if high < low:
      raise UserError(f"{what} {text!r} has a range that runs backwards "
                      f"({part}): write it low-high, e.g. {high}-{low}")
    if len(seeds) + high - low + 1 > MAX_SEEDS:
      raise UserError(f"{what} {text!r} names more than {MAX_SEEDS} seeds: "
                      "use fewer")
    seeds.extend(range(low, high + 1))
  if len(set(seeds)) != len(seeds):
    raise UserError(f"{what} {text!r} names a seed twice: {SEEDS_HELP}")
  return seeds


def _seeds(value: Any) -> list[int]:
  if isinstance(value, bool) or value is None:
    raise PydanticCustomError("seeds", "{why}", {"why": "is not seeds",
                                                 "fix": SEEDS_HELP})
  if isinstance(value, list):
    if not value:
      raise PydanticCustomError("seeds", "{why}", {"why": "is an empty list",
                                                   "fix": SEEDS_HELP})
    value = ",".join(str(v) for v in value)
  try:
    return parse_seeds(value, "seeds")
  except UserError as e:
    # "seeds '2-1' has a range that runs backwards (2-1): write it ..."
    message = str(e)[len(f"seeds {str(value)!r} "):]
    why, _, fix = message.partition(": ")
    raise PydanticCustomError("seeds", "{why}", {"why": why, "fix": fix}
                              ) from None


Seeds = Annotated[list[int], pydantic.BeforeValidator(_seeds)]
Seconds = whole(1, 24 * 3600)
Retries = whole(0, 5)


def _positive_number(value: Any) -> float:
  if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
      0 < value < 1e6):
    raise PydanticCustomError("positive_number", "is not a positive number")
  return float(value)


PositiveNumber = Annotated[float, pydantic.BeforeValidator(_positive_number)]


class _Model(pydantic.BaseModel):
  model_config = pydantic.ConfigDict(extra="forbid", str_strip_whitespace=True,
                                     frozen=True)


class Endpoint(_Model):
  """Where a run's model calls go: the embedded model when `base_url` is
  unset (started once per machine and shared by its runs)."""
  base_url: Line | None = None
  model: Line | None = None
  # The name of an environment variable holding the key: a sweep file is
  # shared and committed, a key is not.
  api_key_env: Line | None = None
  schema_mode: SchemaMode | None = None
  timeout: Seconds = 180
  # Runs at once against this endpoint, over the whole cluster: a shared
  # vLLM server serves a few societies well and many badly.
  max_concurrent_runs: Positive | None = None
  # Requests one run sends at once at most (default: the embedded server's
  # slots, else crsec_concordia.models.config.DEFAULT_IN_FLIGHT).
  max_in_flight: Positive | None = None
  # Which of the referee's structures its runs apply, as `crsec run
  # --referee-policy` takes it (calibration/run_policy.py); unset: the
  # command's flag, else every structure.
  referee_policy: Line | None = None
  # A Concordia LanguageModel of the user's own instead of a server, as
  # `--model-factory` takes it (models/factory.py): module:function.
  factory: Line | None = None


class Condition(_Model):
  """Overrides of the scenario for one condition of the sweep."""
  description: Line | None = None
  crsec: dict[str, Any] = pydantic.Field(default_factory=dict)
  # Any other scenario field, merged into the scenario (mappings key by
  # key, lists replaced; `agents` may be a mapping by agent name); a key
  # with dots is a path to one value (`set_path`), e.g. `agents.0.goal`,
  # `agents.Tom Gomez.goal` or `population.groups.committed.share`.
  scenario: dict[str, Any] = pydantic.Field(default_factory=dict)
  # Models by role for this condition's runs (runs/model_roles.py: the game
  # master, groups, named agents or a share on other endpoints).
  models: dict[str, Any] | None = None


class Resources(_Model):
  """What one run asks of a Ray node (a run is mostly waiting on HTTP; the
  embedded model's server is owned by a per-node actor, not by runs)."""
  num_cpus: PositiveNumber = 1.0
  memory_gb: PositiveNumber | None = None
  custom: dict[str, PositiveNumber] = pydantic.Field(default_factory=dict)


class Exclude(_Model):
  """Grid points to leave out: those matching every coordinate given."""
  scenario: Line | None = None
  condition: Ident | None = None
  endpoint: Ident | None = None
  arm: Arm | None = None
  seed: Positive | None = None


class SweepFile(_Model):
  """A validated sweep file (see docs/design.md, "Sweeps")."""
  name: ScenarioName | None = None
  scenarios: Annotated[list[Line], pydantic.Field(min_length=1)]
  seeds: Seeds
  arms: Annotated[list[Arm], pydantic.Field(min_length=1)] = list(ARMS)
  steps: Positive | None = None
  conditions: dict[Ident, Condition] = pydantic.Field(
      default_factory=lambda: {DEFAULT_CONDITION: Condition()})
  reference: Ident | None = None
  endpoints: dict[Ident, Endpoint] = pydantic.Field(
      default_factory=lambda: {DEFAULT_ENDPOINT: Endpoint()})
  exclude: list[Exclude] = pydantic.Field(default_factory=list)
  resources: Resources = pydantic.Field(default_factory=Resources)
  retries: Retries = 1
  cache: bool = True

  @property
  def reference_condition(self) -> str:
    return self.reference or next(iter(self.conditions))


# -- building modified scenarios -----------------------------------------------


def merge(base: Any, patch: Any) -> Any:
  """`patch` over `base`: mappings key by key, anything else replaced; a
  mapping patching the `agents` list patches the agents it names."""
  if isinstance(base, Mapping) and isinstance(patch, Mapping):
    out = dict(base)
    for key, value in patch.items():
      if (key == "agents" and isinstance(value, Mapping)
          and isinstance(base.get(key), list)):
        out[key] = [merge(a, value[a.get("name")])
                    if isinstance(a, Mapping) and a.get("name") in value
                    else a for a in base[key]]
      else:
        out[key] = merge(base.get(key), value) if key in base else value
    return out
  return patch


class PathError(ValueError):
  """A dotted path that leads nowhere in the scenario: what, and the fix."""

  def __init__(self, what: str, fix: str):
    super().__init__(f"{what}; {fix}")
    self.what, self.fix = what, fix


def _child(node: Any, part: str, done: str) -> Any:
  """The entry `part` of a mapping (its key) or a list (its index from 0,
  or the entry whose `id` or `name` is `part`), as an index or key."""
  if isinstance(node, Mapping):
    if part not in node:
      raise PathError(f"{done or 'the scenario'} has no key {part!r}",
                      f"use one of: {', '.join(map(str, node)) or 'none'}")
    return part
  if isinstance(node, list):
    if re.fullmatch(r"\d+", part):
      if int(part) >= len(node):
        raise PathError(f"{done} has {len(node)} entries, no entry {part}",
                        f"use an index from 0 to {len(node) - 1}")
      return int(part)
    names = [e.get("id", e.get("name")) if isinstance(e, Mapping) else None
             for e in node]
    if part not in names:
      raise PathError(f"{done} has no entry with id or name {part!r}",
                      "use an index from 0, or one of: "
                      + ", ".join(str(n) for n in names if n is not None))
    return names.index(part)
  raise PathError(f"{done} is a value, not a mapping or a list",
                  "end the path there")


def set_path(data: Any, path: str, value: Any) -> Any:
  """A copy of `data` with `value` at the dotted `path`: mapping keys,
  list entries by index (from 0) or by their `id` or `name`. The last key
  of a mapping may be new (a field the scenario leaves to its default);
  any other step must exist, or PathError says where it stops."""
  parts = path.split(".")
  if not all(parts):
    raise PathError(f"the path {path!r} has an empty part",
                    "write it as keys and indices joined by single dots")
  def put(node: Any, rest: list[str], done: str) -> Any:
    head = rest[0]
    if len(rest) == 1 and isinstance(node, Mapping):
      return {**node, head: value}
    key = _child(node, head, done)
    where = f"{done}.{head}" if done else head
    new = value if len(rest) == 1 else put(node[key], rest[1:], where)
    if isinstance(node, list):
      return [new if i == key else v for i, v in enumerate(node)]
    return {**node, key: new}
  return put(data, parts, "")


def _undrawn(data: dict[str, Any]) -> dict[str, Any]:
  """The data without the agents its population block drew (the last
  `count` of them, as a dump records it): the block, changed by a
  condition (another share, another count), draws them again."""
  population = data.get(POPULATION)
  if not isinstance(population, Mapping) or not population.get("drawn"):
    return data
  agents = list(data.get("agents") or [])
  kept = agents[:max(0, len(agents) - int(population.get("count") or 0))]
  return {**data, "agents": kept,
          POPULATION: {k: v for k, v in population.items() if k != "drawn"}}


def _changes_population(condition: Condition) -> bool:
  return any(key == POPULATION or key.startswith(f"{POPULATION}.")
             for key in condition.scenario)


def scenario_data(scenario: Scenario, condition: Condition,
                  steps: int | None) -> dict[str, Any]:
  """The scenario's data with the condition's overrides and the steps (a
  path that leads nowhere is left out here; checks.py reports it)."""
  data = scenario.model_dump(mode="json")
  if _changes_population(condition):
    data = _undrawn(data)
  data = merge(data, {k: v for k, v in condition.scenario.items()
                      if "." not in k})
  for path, value in condition.scenario.items():
    if "." in path:
      try:
        data = set_path(data, path, value)
      except PathError:
        pass
  if condition.crsec:
    data["crsec"] = merge(data.get("crsec") or {}, condition.crsec)
  if steps is not None:
    data["max_steps"] = steps
  return data


def apply(scenario: Scenario, condition: Condition) -> Scenario:
  """The scenario as the condition runs it (unchanged if it overrides
  nothing, so that its source path stays in run.json)."""
  if not condition.crsec and not condition.scenario:
    return scenario
  built = Scenario.from_dict(scenario_data(scenario, condition, None),
                             source=str(scenario.source_path or scenario.name))
  built._source_path = scenario.source_path  # pylint: disable=protected-access
  return built

"""Models by role: the game master on one model, agents on one or several.

A run has one model unless it is given a models spec (`crsec run --models
FILE`, `--gm-base-url`/`--gm-model`, `run_episode(models=...)`, or the
scenario's `models:` block, which a spec given replaces):

  endpoints:                       # ids of the models besides `main`
    big: {base_url: http://host:8000/v1, model: qwen-7b, api_key_env: KEY}
    lab: {factory: mymodule:make}  # a Concordia model of your own
  game_master: big                 # the referee's model (default: main)
  groups: {visitors: big}          # a population group's agents
  agents: {Abigail Chen: big}      # named agents
  share: {big: 0.3}                # a seeded draw among the agents left

`main` is the run's own model (the endpoint flags, or `model=`). Why a map
of entity name to model rather than a prefab param: a prefab's params are
plain JSON (config.json, checkpoints), and a one-model run's config must
stay as it was, so the simulation (runs/simulation.py) hands each agent its
model when it builds it. Each record of a run with more than one model
names the model that made it (`stamp`); usage is counted per model.
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from crsec_concordia.errors import UserError
from crsec_concordia.judgement_prompts import prompts_hash
from crsec_concordia.models import EndpointConfig
from crsec_concordia.models.base import redact_url, stable_seed
from crsec_concordia.models.concordia_adapter import as_structured
from crsec_concordia.operations import names
from crsec_concordia.rundir.format import FAILURE
from crsec_concordia.rundir import writing as rundir
from crsec_concordia.scenarios import Scenario
from crsec_concordia.scenarios.models_block import (MAIN_MODEL, SPEC_KEYS,
                                                     models_problems)
from crsec_concordia.scenarios.problems import Problem, path_text


@dataclasses.dataclass
class ModelRoles:
  """Which model makes which entity's calls, in a run with several."""

  models: dict[str, Any]  # Model id -> structured model.
  described: dict[str, dict[str, Any]]  # Model id -> what run.json says.
  game_master: str
  agents: dict[str, str]  # Agent name -> model id.
  spec: dict[str, Any]  # The spec as given (endpoints as described).
  base_usage: dict[str, dict[str, dict[str, int]]] = dataclasses.field(
      default_factory=dict)  # Model id -> usage before a resume.

  def used(self) -> list[str]:
    """The model ids some entity uses, the game master's first."""
    return list(dict.fromkeys([self.game_master, *self.agents.values()]))

  @property
  def mixed(self) -> bool:
    return len(self.used()) > 1

  def id_of(self, agent: str) -> str:
    return self.agents.get(agent, MAIN_MODEL)

  def entity_models(self) -> dict[str, Any]:
    return {name: self.models[i] for name, i in self.agents.items()}

  def usage_by_model(self) -> dict[str, dict[str, dict[str, int]]]:
    return {i: rundir.add_usage(self.base_usage.get(i, {}),
                                self.models[i].usage.by_tag())
            for i in self.used()}

  def listen(self, listener) -> Any:
    """Listens to every used model's usage meter (the progress bar follows
    all their calls); returns what stops listening."""
    stops = [self.models[i].usage.listen(listener) for i in self.used()]
    def stop() -> None:
      for s in stops:
        s()
    return stop

  def usage(self) -> dict[str, dict[str, int]]:
    total: dict[str, dict[str, int]] = {}
    for by_tag in self.usage_by_model().values():
      total = rundir.add_usage(total, by_tag)
    return total

  def describe(self) -> dict[str, Any]:
    """run.json's `models`: each used model, the game master's, each agent's."""
    return {"game_master": self.game_master,
            "agents": dict(sorted(self.agents.items())),
            "endpoints": {i: self.described[i] for i in self.used()}}

  def stamp(self, records: list[dict[str, Any]], maker: str | None) -> None:
    """Names the model of each record `maker` made (None: the game master's,
    whose action records also name the actor's model, talk records each
    speaker's, and an agent's failure to act the agent's)."""
    if maker is not None:
      for r in records:
        r["model"] = self.id_of(maker)
      return
    for r in records:
      # An agent's failure to act at all is recorded by the game master,
      # but the call that failed was the agent's.
      r["model"] = (self.id_of(r["agent"]) if r.get("kind") == FAILURE
                    and r.get("op") == names.ACT else self.game_master)
      if "actor" in r:
        r["actor_model"] = self.id_of(r["actor"])
      if "initiator" in r and "partner" in r:
        r["speaker_models"] = {n: self.id_of(n)
                               for n in (r["initiator"], r["partner"])}


def _problems_of(spec: Any, scenario: Scenario, given: Mapping[str, Any]
                 ) -> list[Problem]:
  """Every problem of a spec (scenarios/models_block.py), the variables
  its endpoints name checked in this environment."""
  return models_problems(spec, scenario.agent_names, scenario.groups, given,
                         os.environ)


def spec_problems(spec: Any, scenario: Scenario) -> list[tuple[tuple, str, str]]:
  """Each problem of a spec as (location under `models`, what, fix), for
  a file that holds the spec under its own key (a sweep's condition)."""
  return [(p.loc, p.what, p.fix) for p in _problems_of(spec, scenario, {})]


def read_spec(path: Path) -> dict[str, Any]:
  """A models file (YAML), or a UserError saying what is wrong with it."""
  try:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
  except OSError as e:
    raise UserError(f"--models {path}: cannot be read ({e.strerror}): give "
                    "an existing YAML file") from None
  except yaml.YAMLError as e:
    raise UserError(f"--models {path}: not YAML ({str(e).splitlines()[0]}): "
                    "fix the file") from None
  if not isinstance(data, dict):
    raise UserError(f"--models {path}: give a mapping with keys "
                    f"{', '.join(SPEC_KEYS)}")
  return data


def spec_of(given: Mapping[str, Any] | None, scenario: Scenario
            ) -> dict[str, Any] | None:
  """The run's models spec: the one given (`--models`, `--gm-base-url`, a
  sweep condition's, a program's) replaces the scenario's `models:` block
  whole (half of each would be a mix nobody wrote); None: one model."""
  if given:
    return dict(given)
  return dict(scenario.models) if scenario.models else None


def check_spec(spec: Any, scenario: Scenario,
               given: Mapping[str, Any] | None = None) -> None:
  """Raises a UserError, one line per problem, if `spec` has any (before
  any model is built)."""
  if spec:
    problems = _problems_of(spec, scenario, dict(given or {}))
    if problems:
      raise UserError("\n".join(f"{path_text(p.loc)}: {p.what}: {p.fix}"
                                 for p in problems))


def assign(spec: Mapping[str, Any], scenario: Scenario, seed: int
           ) -> dict[str, str]:
  """Each agent's model id: by name, else by group, else the share's
  seeded draw among the rest, else `main`."""
  agents: dict[str, str] = {}
  groups = dict(spec.get("groups") or {})
  named = dict(spec.get("agents") or {})
  rest = []
  for a in scenario.agents:
    if a.name in named:
      agents[a.name] = named[a.name]
    elif a.group in groups:
      agents[a.name] = groups[a.group]
    else:
      rest.append(a.name)
  random.Random(stable_seed("models", seed)).shuffle(rest)
  start = 0
  for i, fraction in (spec.get("share") or {}).items():
    count = round(float(fraction) * len(rest))
    for name in rest[start:start + count]:
      agents[name] = i
    start += count
  for name in rest[start:]:
    agents[name] = MAIN_MODEL
  return {a.name: agents[a.name] for a in scenario.agents}


def run_endpoints(info: Mapping[str, Any], main: EndpointConfig
                  ) -> dict[str, EndpointConfig | None]:
  """Each model a run used (run.json), as an endpoint to ask it again:
  `main` for the run's own (the flags' endpoint), the spec's for the
  others; None for a model a program handed over."""
  used = list(((info.get("models") or {}).get("endpoints") or {})
              or [MAIN_MODEL])
  spec = ((info.get("model_spec") or {}).get("endpoints") or {})
  found: dict[str, EndpointConfig | None] = {}
  for i in used:
    e = spec.get(i)
    found[i] = main if i == MAIN_MODEL else (
        None if not isinstance(e, Mapping) or "endpoint" in e
        else _endpoint(e))
  return found


def agent_models(info: Mapping[str, Any], endpoint: EndpointConfig,
                 make: Any, given: Mapping[str, Any] | None = None,
                 again: str = "") -> dict[str, Any]:
  """The models besides the run's own (`main`: the flags' `endpoint`)
  that a run's agents played with, by id, built again to ask them (an
  interview): from the spec's endpoints (`make` builds one from an
  EndpointConfig), or `given` ready by id. The game master's is not built
  unless an agent played with it too: nobody asks it.

  Raises:
    UserError: before any is built, a model a program handed over and not
      given again (`again` says how to give it), or an endpoint whose key
      variable is unset.
  """
  given = dict(given or {})
  ids = set(((info.get("models") or {}).get("agents") or {}).values())
  endpoints = run_endpoints(info, endpoint)
  spec = (info.get("model_spec") or {}).get("endpoints") or {}
  built = sorted(ids - {MAIN_MODEL} - set(given))
  for i in built:
    if endpoints.get(i) is None:
      raise UserError(f"this run's model {i!r} was handed over by a "
                      f"program: {again or 'give it again from Python'}")
    key_env = spec[i].get("api_key_env")
    if key_env and key_env not in os.environ:
      raise UserError(f"models.endpoints.{i}: ${key_env} is not set: export "
                      f"it (the run's model {i!r} reads its key from it)")
  return {i: given[i] if i in given else make(endpoints[i])
          for i in sorted(ids - {MAIN_MODEL})}


def _endpoint(e: Mapping[str, Any]) -> EndpointConfig:
  if e.get("factory"):
    return EndpointConfig(factory=str(e["factory"]), factory_dir=os.getcwd(),
                          max_in_flight=e.get("max_in_flight"))
  if e.get("embedded"):
    return EndpointConfig(schema_mode=e.get("schema_mode"))
  key_env = e.get("api_key_env")
  return EndpointConfig(
      base_url=e["base_url"], model=e["model"],
      api_key=os.environ.get(key_env) if key_env else None,
      schema_mode=e.get("schema_mode"),
      timeout=float(e.get("timeout") or 180.0),
      max_in_flight=e.get("max_in_flight"))


def game_master_endpoint(spec: Mapping[str, Any] | None,
                         given: Mapping[str, Any] | None = None
                         ) -> tuple[EndpointConfig | None, Any]:
  """The game master's endpoint, or ready model, when the spec puts it on
  one of its own (its referee policy is that model's calibration's), else
  (None, None)."""
  gm = (spec or {}).get("game_master", MAIN_MODEL)
  endpoint = ((spec or {}).get("endpoints") or {}).get(gm)
  if gm in (given or {}):
    return None, (given or {})[gm]
  if gm == MAIN_MODEL or not isinstance(endpoint, Mapping):
    return None, None
  return _endpoint(endpoint), None


def build_roles(spec: Mapping[str, Any] | None, scenario: Scenario, seed: int,
                main: Any, main_described: Mapping[str, Any],
                make: Any, given: Mapping[str, Any] | None = None
                ) -> ModelRoles | None:
  """The run's ModelRoles, or None for a one-model run (no spec, or one
  that gives every role `main`).

  Args:
    spec: the models spec (module docstring).
    main: the run's own model; `main_described` what run.json says of it.
    make: builds a model from an EndpointConfig (episode.model_for's way).
    given: ready models by id (a program's, or tests'), in place of
      endpoints.

  Raises:
    UserError: one line per problem of the spec.
  """
  if not spec:
    return None
  given = dict(given or {})
  check_spec(spec, scenario, given)
  agents = assign(spec, scenario, seed)
  gm = str(spec.get("game_master", MAIN_MODEL))
  used = set([gm, *agents.values()])
  if used == {MAIN_MODEL}:
    return None
  models = {MAIN_MODEL: as_structured(main)}
  described = {MAIN_MODEL: dict(main_described)}
  endpoints = dict(spec.get("endpoints") or {})
  for i in sorted(used - {MAIN_MODEL}):
    if i in given:
      models[i] = as_structured(given[i])
      described[i] = {"endpoint": "given",
                      "model": type(models[i]).__name__,
                      "judgement_prompts": prompts_hash()}
    else:
      models[i], described[i] = make(_endpoint(endpoints[i]))
  for i, m in models.items():
    # The failure notices name the model (operations/failure_notice.py).
    try:
      m.role_model_id = i
    except AttributeError:
      pass
  kept = {k: v for k, v in spec.items() if k != "endpoints"}
  # As run.json keeps it: credentials out of URLs (a key is named by its
  # variable, `api_key_env`, never written).
  kept["endpoints"] = {i: (described[i] if i in given else {
      **e, **({"base_url": redact_url(e["base_url"])} if e.get("base_url")
              else {})}) for i, e in endpoints.items()}
  return ModelRoles(models=models, described=described, game_master=gm,
                    agents=agents, spec=kept)

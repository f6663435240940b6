"""The Concordia `Config` of a scenario: one instance per agent, a game master.

Everything in it is plain JSON (prefab names and params), because component
objects survive neither a second Simulation nor a checkpoint: the prefabs
build their components from these params.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from concordia.typing import prefab as prefab_lib

from crsec_concordia import game_masters
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.calibration.run_policy import BATCHED_PARAM
from crsec_concordia.prefabs.params import CONFLICTS_BATCHED
from crsec_concordia.calibration.run_policy import PARAM as POLICY_PARAM
from crsec_concordia.errors import UserError
from crsec_concordia.prefabs import PREFABS
from crsec_concordia.rundir.format import ARMS
from crsec_concordia.scenarios import Scenario, load_scenario

DEFAULT_SCENARIO = "hobbs_cafe_mini"
GM_PREFAB = "venue__GameMaster"
GM_NAME = "Game Master"


def agent_prefabs() -> dict[str, prefab_lib.Prefab]:
  """The agents' prefabs (`normative__Entity`, `baseline__Entity`)."""
  return dict(PREFABS)


def load(scenario: Scenario | str | Path) -> Scenario:
  """A Scenario from a Scenario, a path or a built-in name."""
  return scenario if isinstance(scenario, Scenario) else load_scenario(scenario)


def entity_params(scenario: Scenario, name: str) -> dict[str, Any]:
  """The prefab params of one agent (plain JSON), with the venue's hours."""
  params = scenario.entity_params(name)
  # The loader says "no initial norms" with None; the prefabs take a list.
  params["initial_norms"] = list(params.get("initial_norms") or [])
  params["day_start"] = scenario.clock.start
  params["day_end"] = scenario.clock.end
  return params


def check_arm(arm: str) -> None:
  if arm not in ARMS:
    raise UserError(f"unknown arm {arm!r}: use --agents "
                    f"{' or --agents '.join(ARMS)}")


def build_config(scenario: Scenario, arm: str, seed: int,
                 referee_policy: RefereePolicy | None = None,
                 batched: bool = False,
                 conflicts_batched: bool = False) -> prefab_lib.Config:
  """The Concordia config: one instance per agent, and the game master
  (with `referee_policy` in its params when one is given; none: every
  structure, game_masters/prefab.py; `batched` in them when on: a place's
  slot judged together; `conflicts_batched` in each agent's when on:
  DetectConflict's questions of a place's slot asked together)."""
  check_arm(arm)
  prefabs = {**agent_prefabs(), **game_masters.GAME_MASTER_PREFABS}
  if f"{arm}__Entity" not in prefabs:
    raise UserError(f"no prefab {arm}__Entity is registered; is "
                    "crsec_concordia.prefabs complete?")
  extra = ({CONFLICTS_BATCHED: True}
           if conflicts_batched and arm == "normative" else {})
  instances = [
      prefab_lib.InstanceConfig(prefab=f"{arm}__Entity",
                                role=prefab_lib.Role.ENTITY,
                                params={**entity_params(scenario, a.name),
                                        **extra})
      for a in scenario.agents]
  gm_params = {"name": GM_NAME, "scenario": scenario.to_dict(), "seed": seed}
  if referee_policy is not None:
    gm_params[POLICY_PARAM] = referee_policy.to_dict()
  if batched:
    gm_params[BATCHED_PARAM] = True
  instances.append(prefab_lib.InstanceConfig(
      prefab=GM_PREFAB, role=prefab_lib.Role.GAME_MASTER, params=gm_params))
  return prefab_lib.Config(prefabs=prefabs, instances=instances,
                           default_premise=scenario.premise,
                           default_max_steps=scenario.total_steps)


def config_to_json(config: prefab_lib.Config) -> dict[str, Any]:
  """The resolved config as the run directory records it."""
  return {
      "prefabs": {name: f"{type(p).__module__}.{type(p).__qualname__}"
                  for name, p in config.prefabs.items()},
      "instances": [{"prefab": i.prefab, "role": i.role.value,
                     "params": i.params} for i in config.instances],
      "default_max_steps": config.default_max_steps,
  }

"""Scenario files: the YAML format of docs/design.md and its loader.

  scenario = load_scenario("hobbs_cafe_mini")   # or a path to a .yaml file
  scenario.stamp_for(7)                         # Stamp(day=1, clock="10:00", step=7)
  scenario.places                               # its places (indoors, outdoors if none declared)
"""

from crsec_concordia.scenarios.loader import (
    Agent,
    Behaviour,
    Place,
    Scenario,
    ScenarioError,
    TargetNorm,
    builtin_names,
    builtin_path,
    load_scenario,
    parse_scenario,
)
from crsec_concordia.scenarios.occasions import Occasion

__all__ = [
    "Agent",
    "Behaviour",
    "Occasion",
    "Place",
    "Scenario",
    "ScenarioError",
    "TargetNorm",
    "builtin_names",
    "builtin_path",
    "load_scenario",
    "parse_scenario",
]

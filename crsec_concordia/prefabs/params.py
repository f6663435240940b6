"""The entity prefabs' params, checked before anything is built.

A prefab's params come from a user's own code or config, as plain JSON; a
wrong one (a role not known, a module misspelt, a count given as text, a
day that starts after it ends) would otherwise surface later as a
component's odd behaviour or a traceback deep in a run. `check` names
every bad value with the values allowed, in one `ValueError` (one line per
problem).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from crsec_concordia import invalid_action
from crsec_concordia.norms import ROLES
from crsec_concordia.prefabs.agent_parts import DEFAULTS, MODULES

# The agent's param that has its DetectConflict questions of a slot asked
# with the place's others, in one call (ConflictDetector's `batched`;
# absent: off, so a run's config.json is as it was without it).
CONFLICTS_BATCHED = "conflicts_batched"
# Whole-number params and the least value each may take.
COUNTS = {"initial_norm_count": 0, "synthesis_threshold": 1,
          "reflect_every": 1, "observation_history": 1}
_CLOCK = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")


def _problems(params: Mapping[str, Any]) -> list[str]:
  modules = MODULES
  found = []
  name = params.get("name")
  if name is not None and (not isinstance(name, str) or not name.strip()):
    found.append(f"name {name!r}: give the agent's name as text")
  role = params.get("role")
  if role is not None and role not in ROLES:
    found.append(f"role {role!r}: one of {', '.join(ROLES)}")
  for key, least in COUNTS.items():
    value = params.get(key)
    if value is None:
      continue
    if isinstance(value, bool) or not isinstance(value, int):
      found.append(f"{key} {value!r}: a whole number (at least {least})")
    elif value < least:
      found.append(f"{key} {value!r}: at least {least}")
  clocks = {}
  for key in ("day_start", "day_end"):
    value = params.get(key, DEFAULTS[key])
    if value is None:
      continue
    if not isinstance(value, str) or not _CLOCK.match(value):
      found.append(f"{key} {value!r}: a time of day as HH:MM, e.g. 09:00")
    else:
      clocks[key] = value
  if len(clocks) == 2 and clocks["day_start"] >= clocks["day_end"]:
    found.append(f"day_start {clocks['day_start']!r}: before day_end "
                 f"{clocks['day_end']!r}")
  given = params.get("modules")
  if given is not None:
    if not isinstance(given, Mapping):
      found.append(f"modules {given!r}: a mapping of module names to "
                   f"true or false ({', '.join(modules)})")
    else:
      for key, value in given.items():
        if key not in modules:
          found.append(f"modules: unknown module {key!r}; known: "
                       f"{', '.join(modules)}")
        elif not isinstance(value, bool):
          found.append(f"modules.{key} {value!r}: true or false")
  for key in ("committed", CONFLICTS_BATCHED):
    value = params.get(key)
    if value is not None and not isinstance(value, bool):
      found.append(f"{key} {value!r}: true or false")
  norms = params.get("initial_norms")
  if norms is not None:
    if not isinstance(norms, (list, tuple)):
      found.append(f"initial_norms {norms!r}: a list of norms, each "
                   "{content, type, utility}")
    else:
      for i, norm in enumerate(norms):
        content = norm.get("content") if isinstance(norm, Mapping) else None
        if not isinstance(content, str) or not content.strip():
          found.append(f"initial_norms[{i}] {norm!r}: a mapping with the "
                       "norm's text as content")
  choice = params.get("on_invalid_action")
  if choice is not None and choice not in invalid_action.CHOICES:
    found.append(f"on_invalid_action {choice!r}: one of "
                 f"{', '.join(invalid_action.CHOICES)}")
  return found


def check(prefab: str, params: Mapping[str, Any]) -> None:
  """Raises ValueError naming every bad param of `prefab` (one per line)
  with the values allowed; params not given take their defaults."""
  found = _problems(params)
  if found:
    raise ValueError("\n".join(f"{prefab} param {p}" for p in found))

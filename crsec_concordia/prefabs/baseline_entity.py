"""baseline__Entity: the normative agent without CRSEC, the control arm.

The same persona, instructions, memory, observations, planner (its plan
made by the same operations, norms absent) and plan-driven act component
as `normative__Entity` (agent_parts.py), and none of the CRSEC components:
a comparison of the two arms isolates CRSEC, not a planner or a prompt.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from concordia.agents import entity_agent_with_logging
from concordia.language_model import language_model
from concordia.typing import prefab as prefab_lib

from crsec_concordia import components as crsec
from crsec_concordia.prefabs import agent_parts, params
from crsec_concordia.prefabs.agent_parts import DEFAULTS, param


@dataclasses.dataclass
class BaselineEntity(prefab_lib.Prefab):
  """The same agent without CRSEC: the comparison's control arm."""

  description: str = (
      "A non-normative baseline agent: the normative agent's persona, "
      "instructions, memory, observations, planner (its plan made without "
      "norms) and plan-driven act component, without the CRSEC "
      "components. Accepts (and ignores) the normative params.")
  params: Mapping[str, Any] = dataclasses.field(
      default_factory=lambda: dict(DEFAULTS))

  def build(self, model: language_model.LanguageModel,
            memory_bank: agent_parts.MemoryBank
            ) -> entity_agent_with_logging.EntityAgentWithLogging:
    params.check("baseline__Entity", self.params)
    context = agent_parts.base_components(self.params, memory_bank)
    context[crsec.NORMATIVE_PLANNER_KEY] = agent_parts.planner(
        model, self.params, norm_memory_key=None, use_norms=False)
    return agent_parts.entity(param(self.params, "name"), context, model,
                              self.params)

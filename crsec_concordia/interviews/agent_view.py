"""What an agent is and holds, read off its components.

An interview (restore.py) and the stated-belief question a run asks
(stated.py) both read an agent without calling its `act` or `observe`,
whose components would remember being asked: its instructions and
persona, its memory bank and its NormMemory are read as they are.
"""

from __future__ import annotations

import dataclasses

from concordia.components import agent as agent_components

from crsec_concordia.components.norm_memory import NORM_MEMORY_KEY
from crsec_concordia.scenarios import Scenario

_MEMORY_KEY = agent_components.memory.DEFAULT_MEMORY_COMPONENT_KEY


@dataclasses.dataclass(frozen=True)
class Interviewee:
  """What one agent is and holds after the slot."""
  name: str
  role: str
  instructions: str
  persona: str
  memories: tuple[str, ...]
  norms: tuple[str, ...]  # Held: activated and valid, as it plans with them.


def interviewee(entity, scenario: Scenario) -> Interviewee:
  """`entity` as its components hold it now (nothing of it is changed)."""
  components = entity.get_all_context_components()
  def text(key: str) -> str:
    component = components.get(key)
    return str(component.get_state().get("state", "")) if component else ""
  memory = components.get(_MEMORY_KEY)
  memories = (tuple(memory.get_all_memories_as_text())
              if memory is not None else ())
  norm_memory = components.get(NORM_MEMORY_KEY)
  norms = (tuple(n.content for n in norm_memory.database.qualified())
           if norm_memory is not None else ())
  role = (scenario.agent(entity.name).role
          if entity.name in scenario.agent_names else "")
  return Interviewee(name=entity.name, role=role,
                     instructions=text("Instructions"),
                     persona=text("Persona"), memories=memories, norms=norms)


def agents_of(simulation, scenario: Scenario) -> list[Interviewee]:
  """The simulation's agents, in name order."""
  agents = [interviewee(e, scenario) for e in simulation.get_entities()]
  return sorted(agents, key=lambda a: a.name)

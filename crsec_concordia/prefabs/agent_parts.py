"""What both entity prefabs are built from: params, shared components, act.

`baseline__Entity` is `normative__Entity` without the CRSEC components: the
same persona, instructions, memory, observations, planner (its day plan and
tasks made by the same operations, norms absent) and plan-driven act
component, so a comparison of the two isolates CRSEC. Components are built
inside `build()` from plain JSON params, so configs can be reused and
checkpoints restored. Memories live in a `ListMemoryBank` rather than
Concordia's pandas bank, and agents are `SlotAgent`s: neither changes what
an agent sees or does; both take per-agent Python work, which holds the
GIL, off the path to the agents' model calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from concordia.agents import entity_agent_with_logging
from concordia.associative_memory import basic_associative_memory
from concordia.components import agent as agent_components
from concordia.language_model import language_model

from crsec_concordia import components as crsec
from crsec_concordia import invalid_action
from crsec_concordia.components.crsec_port import CrsecPort
from crsec_concordia.components.list_memory_bank import ListMemoryBank
from crsec_concordia.components.port import PORT_KEY
from crsec_concordia.components.recent_events import RecentEvents
from crsec_concordia.models.concordia_adapter import as_structured
from crsec_concordia.operations.names import DAY_PLAN, NORMATIVE_PLAN
from crsec_concordia.slot_agent import SlotAgent

MODULES = ("communication", "observation", "immediate_evaluation",
           "synthesis", "compliance")

DEFAULTS: dict[str, Any] = {
    "name": "Alice",
    "persona": "",
    "role": crsec.ORDINARY,
    "goal": "",
    # No venue by default: a default place would reach CreateNorm and the
    # plan of every agent built without one.
    "setting": "",
    "initial_norm_count": 5,
    "initial_norms": [],
    # Whether the norms it starts with are held for good (NormMemory).
    "committed": False,
    "synthesis_threshold": 350,
    "reflect_every": 6,
    # Recent observations in the act prompt, in slots (every agent's
    # actions of a slot arrive as one observation): the act is most of a
    # run's prompt tokens, and a small model loses the thread in long
    # contexts.
    "observation_history": 1,
    "day_start": "09:00",
    "day_end": "16:00",
    "modules": {m: True for m in MODULES},
}

# What the prefabs build agents and memories with (tests swap in
# Concordia's own to show that the results are the same).
AGENT_CLASS: type[entity_agent_with_logging.EntityAgentWithLogging] = SlotAgent

# The act prompt's order: the stable parts first (instructions, persona,
# norms, the day's plan), so a server's prompt cache reuses them from one
# slot to the next; the slot's news last (the recent events, then, in the
# act's own lines, the current task and what is new).
ORDER = [
    "Instructions", "Persona", crsec.NORM_MEMORY_KEY,
    crsec.NORMATIVE_PLANNER_KEY,
    agent_components.observation.DEFAULT_OBSERVATION_COMPONENT_KEY]

MemoryBank = basic_associative_memory.AssociativeMemoryBank | ListMemoryBank


def param(params: Mapping[str, Any], key: str) -> Any:
  """A prefab param, or its default."""
  return params.get(key, DEFAULTS[key])


def memory_bank_for(memory_bank: MemoryBank) -> ListMemoryBank:
  """The bank an agent keeps its memories in: a ListMemoryBank holding what
  the given one holds (the Simulation passes Concordia's pandas bank)."""
  return ListMemoryBank.like(memory_bank)


def planner(model: language_model.LanguageModel, params: Mapping[str, Any],
            *, norm_memory_key: str | None,
            use_norms: bool) -> crsec.NormativePlanner:
  """The day plan and its tasks, which both arms act from (norms weighed
  only by a normative agent with its compliance module on: NormativePlan;
  otherwise a plan of the day, DayPlan)."""
  return crsec.NormativePlanner(
      as_structured(model).tagged(NORMATIVE_PLAN if use_norms else DAY_PLAN),
      goal=param(params, "goal"),
      setting=param(params, "setting"), day_start=param(params, "day_start"),
      day_end=param(params, "day_end"), norm_memory_key=norm_memory_key,
      use_norms=use_norms, agent_name=param(params, "name"),
      persona=param(params, "persona"), places=params.get("places"))


def base_components(params: Mapping[str, Any], memory_bank: MemoryBank
                    ) -> dict[str, Any]:
  """What both arms share: instructions, persona, memory, observations."""
  name = param(params, "name")
  setting = param(params, "setting")
  # Staying in character, true to the persona, the act's reply line asks
  # (components/_act_answer.py): not said twice in one prompt.
  instructions = (f"You play {name} in a simulation of everyday life"
                  + (f" at {setting}" if setting else "") + ".")
  return {
      "Instructions": agent_components.constant.Constant(
          state=instructions, pre_act_label="Instructions"),
      "Persona": agent_components.constant.Constant(
          state=param(params, "persona"), pre_act_label=f"About {name}"),
      "observation_to_memory":
          agent_components.observation.ObservationToMemory(),
      # What goes on from the slot before is named, not retold.
      agent_components.observation.DEFAULT_OBSERVATION_COMPONENT_KEY:
          RecentEvents(
              history_length=int(param(params, "observation_history")),
              pre_act_label="Recent events (oldest first)"),
      agent_components.memory.DEFAULT_MEMORY_COMPONENT_KEY:
          agent_components.memory.AssociativeMemory(
              memory_bank=memory_bank_for(memory_bank)),
  }


def entity(name: str, context: dict[str, Any],
           model: language_model.LanguageModel, params: Mapping[str, Any]
           ) -> entity_agent_with_logging.EntityAgentWithLogging:
  """The agent: `context` in ORDER, acting from its plan (StructuredAct),
  with its port (the world deals with it there: components/port.py)."""
  context = {**context, PORT_KEY: CrsecPort()}
  order = [k for k in ORDER if k in context]
  # Conversation turns see who the speaker is and what they hold, not the
  # recent events or the plan (see StructuredAct).
  speech = [k for k in order if k not in (
      agent_components.observation.DEFAULT_OBSERVATION_COMPONENT_KEY,
      crsec.NORMATIVE_PLANNER_KEY)]
  # Both arms act from their plan: the model is asked only for a reason.
  act = crsec.StructuredAct(
      as_structured(model).tagged("act"), component_order=order,
      speech_components=speech,
      plan_key=(crsec.NORMATIVE_PLANNER_KEY
                if crsec.NORMATIVE_PLANNER_KEY in context else None),
      on_invalid_action=params.get("on_invalid_action",
                                   invalid_action.DEFAULT_CHOICE))
  return AGENT_CLASS(
      agent_name=name, act_component=act, context_components=context,
      measurements=params.get("measurements"))

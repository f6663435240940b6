"""Entity prefabs: a normative CRSEC agent and its non-normative twin.

`baseline__Entity` is `normative__Entity` without the CRSEC components: the
same persona, instructions, memory, observations, planner (its day plan and
tasks made by the same operations, norms absent) and plan-driven act
component, so a comparison of the two isolates CRSEC. Components are built inside `build()`
from plain JSON params, so configs can be reused and checkpoints restored.

Both are built for a society that acts at once (every agent, every slot,
in its own thread): an agent's hooks run in its own thread unless two of
its components may wait on the model in the same hook (`SlotAgent`), and
its memories live in a `ListMemoryBank` instead of Concordia's pandas bank.
Neither changes what an agent sees or does; both take per-agent Python
work, which holds the GIL, off the path to the agents' model calls.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any

from concordia.agents import entity_agent_with_logging
from concordia.associative_memory import basic_associative_memory
from concordia.components import agent as agent_components
from concordia.typing import entity_component
from concordia.typing import prefab as prefab_lib

from crsec_concordia import components as crsec
from crsec_concordia.components.list_memory_bank import ListMemoryBank
from crsec_concordia.components.recent_events import RecentEvents
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.models.base import as_structured

MODULES = ("communication", "observation", "immediate_evaluation",
           "synthesis", "compliance")

_DEFAULTS: dict[str, Any] = {
    "name": "Alice",
    "persona": "",
    "role": crsec.ORDINARY,
    "goal": "",
    # No venue by default: a default place would reach CreateNorm and the
    # plan of every agent built without one.
    "setting": "",
    "initial_norm_count": 5,
    "initial_norms": [],
    "synthesis_threshold": 350,
    "reflect_every": 6,
    # Recent observations in the act prompt, in slots (every agent's
    # actions of a slot arrive as one observation): the act is most of a
    # run's prompt tokens, and the 1.5B model loses the thread in long
    # contexts.
    "observation_history": 1,
    "day_start": "09:00",
    "day_end": "16:00",
    "modules": {m: True for m in MODULES},
}


def _param(params: Mapping[str, Any], key: str) -> Any:
  return params.get(key, _DEFAULTS[key])


def waits_on_model(component: Any, hook: str) -> bool:
  """Whether `component`'s `hook` may wait on a model call this time.

  CRSEC components say so (`waits_on_model(hook)`); Concordia's stock ones
  in these prefabs (constants, observations, memory) never do.
  """
  ask = getattr(component, "waits_on_model", None)
  return bool(ask(hook)) if callable(ask) else False


class SlotAgent(entity_agent_with_logging.EntityAgentWithLogging):
  """Concordia's entity agent, its hooks run in its own thread when they can.

  Concordia runs every hook (pre_observe, post_observe, pre_act, post_act,
  update) of every component in a thread pool made for that call: six pools
  and dozens of threads per agent per slot, nearly all for hooks that
  return at once. With fifty agents in a slot that was thousands of thread
  starts and GIL hand-overs between the agents and their model calls. So a
  hook runs its components in this thread, in order, unless two or more of
  them may wait on the model this time (an entrepreneur's first observation:
  CreateNorm beside IdentifyNorm); then Concordia's pool runs them as before,
  so their calls still overlap. The components of one hook never depend on
  each other's order (each says so; NormMemory.note is idempotent), so
  either way gives the same contexts.
  """

  def _parallel_call_(self, method_name: str, *args, executor=None
                      ) -> entity_component.ComponentContextMapping:
    unique = list(dict.fromkeys(self._context_components.values()))
    if sum(waits_on_model(c, method_name) for c in unique) > 1:
      return super()._parallel_call_(method_name, *args, executor=executor)
    results = {id(c): getattr(c, method_name)(*args) for c in unique}
    return types.MappingProxyType({
        name: results[id(c)] for name, c in self._context_components.items()})


# What the prefabs build agents and memories with (tests swap in
# Concordia's own to show that the results are the same).
AGENT_CLASS: type[entity_agent_with_logging.EntityAgentWithLogging] = SlotAgent


def memory_bank_for(memory_bank: Any) -> Any:
  """The bank an agent keeps its memories in: a ListMemoryBank holding what
  the given one holds (the Simulation passes Concordia's pandas bank)."""
  return ListMemoryBank.like(memory_bank)


def _planner(model, params, *, norm_memory_key: str | None,
             use_norms: bool) -> crsec.NormativePlanner:
  """The day plan and its tasks, which both arms act from (norms weighed
  only by a normative agent with its compliance module on)."""
  return crsec.NormativePlanner(
      as_structured(model).tagged("NormativePlan"), goal=_param(params, "goal"),
      setting=_param(params, "setting"), day_start=_param(params, "day_start"),
      day_end=_param(params, "day_end"), norm_memory_key=norm_memory_key,
      use_norms=use_norms, agent_name=_param(params, "name"),
      persona=_param(params, "persona"))


def _base_components(params, memory_bank) -> dict[str, Any]:
  """What both arms share: instructions, persona, memory, observations."""
  name = _param(params, "name")
  setting = _param(params, "setting")
  instructions = (
      f"You play {name} in a simulation of everyday life"
      + (f" at {setting}" if setting else "") +
      ". Stay in character, true to the description below.")
  return {
      "Instructions": agent_components.constant.Constant(
          state=instructions, pre_act_label="Instructions"),
      "Persona": agent_components.constant.Constant(
          state=_param(params, "persona"), pre_act_label=f"About {name}"),
      "observation_to_memory":
          agent_components.observation.ObservationToMemory(),
      # What goes on from the slot before is named, not retold.
      agent_components.observation.DEFAULT_OBSERVATION_COMPONENT_KEY:
          RecentEvents(
              history_length=int(_param(params, "observation_history")),
              pre_act_label="Recent events (oldest first)"),
      agent_components.memory.DEFAULT_MEMORY_COMPONENT_KEY:
          agent_components.memory.AssociativeMemory(
              memory_bank=memory_bank_for(memory_bank)),
  }


# The act prompt's order: the stable parts first (instructions, persona,
# norms, the day's plan), so a server's prompt cache reuses them from one
# slot to the next; the slot's news last (the recent events, then, in the
# act's own lines, the current task and what is new).
_ORDER = ["Instructions", "Persona", crsec.NORM_MEMORY_KEY,
          crsec.NORMATIVE_PLANNER_KEY,
          agent_components.observation.DEFAULT_OBSERVATION_COMPONENT_KEY]


def _entity(name: str, context: dict[str, Any], order: list[str], model,
            params) -> entity_agent_with_logging.EntityAgentWithLogging:
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
                if crsec.NORMATIVE_PLANNER_KEY in context else None))
  return AGENT_CLASS(
      agent_name=name, act_component=act, context_components=context,
      measurements=params.get("measurements"))


@dataclasses.dataclass
class NormativeEntity(prefab_lib.Prefab):
  """An agent with the CRSEC architecture (all five modules, each ablatable)."""

  description: str = (
      "A CRSEC normative agent: a personal norm database, conflict detection "
      "and conversations, norm identification from conversations and "
      "observations, immediate evaluation and long-term synthesis, and "
      "norm-aware planning. Params: name, persona, role (entrepreneur | "
      "ordinary), goal, setting, initial_norm_count, initial_norms, "
      "synthesis_threshold, reflect_every, day_start, day_end, modules.")
  params: Mapping[str, Any] = dataclasses.field(
      default_factory=lambda: dict(_DEFAULTS))

  def build(self, model, memory_bank: basic_associative_memory.AssociativeMemoryBank
            ) -> entity_agent_with_logging.EntityAgentWithLogging:
    p = self.params
    name = _param(p, "name")
    modules = {**_DEFAULTS["modules"], **dict(_param(p, "modules"))}
    unknown = set(modules) - set(MODULES)
    if unknown:
      raise ValueError(f"unknown CRSEC modules {sorted(unknown)}; "
                       f"known: {', '.join(MODULES)}")
    structured = as_structured(model)
    context = _base_components(p, memory_bank)
    context[crsec.NORM_MEMORY_KEY] = crsec.NormMemory(
        structured.tagged("CreateNorm"), agent_name=name,
        persona=_param(p, "persona"), role=_param(p, "role"),
        setting=_param(p, "setting"),
        initial_norm_count=int(_param(p, "initial_norm_count")),
        initial_norms=list(_param(p, "initial_norms") or []),
        show_in_context=modules["compliance"])
    if modules["communication"]:
      context[crsec.CONFLICT_DETECTOR_KEY] = crsec.ConflictDetector(
          structured.tagged("DetectConflict"),
          talk_model=structured.tagged("DecideToTalk"),
          embedder=shared_embedder())
    if modules["communication"] or modules["observation"]:
      context[crsec.NORM_IDENTIFIER_KEY] = crsec.NormIdentifier(
          structured.tagged("IdentifyNorm"),
          reflect_model=structured.tagged("Reflect"),
          reflect_every=int(_param(p, "reflect_every")),
          communication=modules["communication"],
          observation=modules["observation"])
    context[crsec.NORM_EVALUATOR_KEY] = crsec.NormEvaluator(
        structured.tagged("ImmediateEvaluation"), shared_embedder(),
        synthesis_model=structured.tagged("LongTermSynthesis"),
        synthesis_threshold=int(_param(p, "synthesis_threshold")),
        immediate_evaluation=modules["immediate_evaluation"],
        synthesis=modules["synthesis"])
    # Without the compliance module the plan is made as the baseline's,
    # norms absent.
    context[crsec.NORMATIVE_PLANNER_KEY] = _planner(
        model, p, norm_memory_key=crsec.NORM_MEMORY_KEY,
        use_norms=modules["compliance"])
    order = _ORDER
    return _entity(name, context, [k for k in order if k in context],
                   model, p)


@dataclasses.dataclass
class BaselineEntity(prefab_lib.Prefab):
  """The same agent without CRSEC: the comparison's control arm."""

  description: str = (
      "A non-normative baseline agent: the normative agent's persona, "
      "instructions, memory, observations, planner (its plan made without "
      "norms) and plan-driven act component, without the CRSEC "
      "components. Accepts (and ignores) the normative params.")
  params: Mapping[str, Any] = dataclasses.field(
      default_factory=lambda: dict(_DEFAULTS))

  def build(self, model, memory_bank: basic_associative_memory.AssociativeMemoryBank
            ) -> entity_agent_with_logging.EntityAgentWithLogging:
    context = _base_components(self.params, memory_bank)
    context[crsec.NORMATIVE_PLANNER_KEY] = _planner(
        model, self.params, norm_memory_key=None, use_norms=False)
    return _entity(_param(self.params, "name"), context,
                   [k for k in _ORDER if k in context], model, self.params)


PREFABS: dict[str, prefab_lib.Prefab] = {
    "normative__Entity": NormativeEntity(),
    "baseline__Entity": BaselineEntity(),
}

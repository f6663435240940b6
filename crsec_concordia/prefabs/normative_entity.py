"""normative__Entity: an agent with the CRSEC architecture.

The five modules of the paper (communication, observation, immediate
evaluation, synthesis, compliance), each ablatable by a param, on top of
the parts it shares with its non-normative twin (agent_parts.py). Its
sentence embedder is the simulation's: Concordia hands a prefab only the
memory bank it built with that embedder, so the embedder is taken from
there (`embedding.embedder_of`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from concordia.agents import entity_agent_with_logging
from concordia.language_model import language_model
from concordia.typing import prefab as prefab_lib

from crsec_concordia import components as crsec
from crsec_concordia import embedding
from crsec_concordia.models.concordia_adapter import as_structured
from crsec_concordia.prefabs import agent_parts, params
from crsec_concordia.prefabs.agent_parts import DEFAULTS, MODULES, param


@dataclasses.dataclass
class NormativeEntity(prefab_lib.Prefab):
  """An agent with the CRSEC architecture (all five modules, each ablatable)."""

  description: str = (
      "A CRSEC normative agent: a personal norm database, conflict detection "
      "and conversations, norm identification from conversations and "
      "observations, immediate evaluation and long-term synthesis, and "
      "norm-aware planning. Params: name, persona, role (entrepreneur | "
      "ordinary), goal, setting, initial_norm_count, initial_norms, "
      "committed (the norms it starts with are never revised or dropped), "
      "synthesis_threshold, reflect_every, day_start, day_end, modules, "
      "places (optional: the scenario's declared places, id and "
      "description each, which the plan and its tasks choose among), "
      "on_invalid_action (mark | nothing | raise: what act() returns "
      "when the model gives no valid action; crsec_concordia/"
      "invalid_action.py), conflicts_batched (optional, off: a slot's "
      "DetectConflict questions of one place asked in one call).")
  params: Mapping[str, Any] = dataclasses.field(
      default_factory=lambda: dict(DEFAULTS))

  def build(self, model: language_model.LanguageModel,
            memory_bank: agent_parts.MemoryBank
            ) -> entity_agent_with_logging.EntityAgentWithLogging:
    p = self.params
    params.check("normative__Entity", p)
    name = param(p, "name")
    modules = {**DEFAULTS["modules"], **dict(param(p, "modules"))}
    structured = as_structured(model)
    embedder = embedding.cached(embedding.embedder_of(memory_bank))
    context = agent_parts.base_components(p, memory_bank)
    context[crsec.JOURNAL_KEY] = crsec.AgentJournal(structured,
                                                    agent_name=name)
    context[crsec.NORM_MEMORY_KEY] = crsec.NormMemory(
        structured.tagged("CreateNorm"), agent_name=name,
        persona=param(p, "persona"), role=param(p, "role"),
        setting=param(p, "setting"),
        initial_norm_count=int(param(p, "initial_norm_count")),
        initial_norms=list(param(p, "initial_norms") or []),
        committed=bool(param(p, "committed")),
        show_in_context=modules["compliance"])
    if modules["communication"]:
      context[crsec.CONFLICT_DETECTOR_KEY] = crsec.ConflictDetector(
          structured.tagged("DetectConflict"),
          talk_model=structured.tagged("DecideToTalk"), embedder=embedder,
          batched=bool(p.get(params.CONFLICTS_BATCHED, False)))
    if modules["communication"] or modules["observation"]:
      context[crsec.NORM_IDENTIFIER_KEY] = crsec.NormIdentifier(
          structured.tagged("IdentifyNorm"),
          reflect_model=structured.tagged("Reflect"),
          reflect_every=int(param(p, "reflect_every")),
          communication=modules["communication"],
          observation=modules["observation"])
    context[crsec.NORM_EVALUATOR_KEY] = crsec.NormEvaluator(
        structured.tagged("ImmediateEvaluation"), embedder,
        synthesis_model=structured.tagged("LongTermSynthesis"),
        synthesis_threshold=int(param(p, "synthesis_threshold")),
        immediate_evaluation=modules["immediate_evaluation"],
        synthesis=modules["synthesis"])
    # Without the compliance module the plan is made as the baseline's,
    # norms absent.
    context[crsec.NORMATIVE_PLANNER_KEY] = agent_parts.planner(
        model, p, norm_memory_key=crsec.NORM_MEMORY_KEY,
        use_norms=modules["compliance"])
    return agent_parts.entity(name, context, model, p)

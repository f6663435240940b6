"""Compose a normative agent in plain Concordia from crsec-concordia's components.

No prefab: a Concordia user builds an EntityAgentWithLogging with the
components they want, here Concordia's own memory and observation components
plus CRSEC's five, and a Concordia act component (ConcatActComponent).
It observes a smoker and a conversation, then acts, on the embedded model
(or CRSEC_BASE_URL/CRSEC_MODEL if set).

Run: .venv/bin/python examples/compose_normative_agent.py
"""

from concordia.agents import entity_agent_with_logging
from concordia.associative_memory import basic_associative_memory
from concordia.components import agent as agent_components

from crsec_concordia import components as crsec
from crsec_concordia import observations as obs
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.models import EndpointConfig, make_model


def main() -> None:
  model = make_model(EndpointConfig.resolve(), seed=7)
  embedder = shared_embedder()
  name = "Isabella Rodriguez"
  persona = ("Isabella, 28, runs the counter at Hobbs Cafe; she cannot stand "
             "cigarette smoke indoors and wants the café calm and quiet.")
  memory = agent_components.memory.AssociativeMemory(
      basic_associative_memory.AssociativeMemoryBank(
          sentence_embedder=embedder))
  context = {
      "Persona": agent_components.constant.Constant(persona, "About her"),
      "observation_to_memory": agent_components.observation.ObservationToMemory(),
      "__observation__": agent_components.observation.LastNObservations(10),
      "__memory__": memory,
      # CRSEC: each component finds NormMemory by its key.
      crsec.NORM_MEMORY_KEY: crsec.NormMemory(
          model.tagged("CreateNorm"), agent_name=name, persona=persona,
          role=crsec.ENTREPRENEUR, setting="Hobbs Cafe", initial_norm_count=3),
      # One tag per operation, so usage is counted as `crsec run` counts it.
      crsec.CONFLICT_DETECTOR_KEY: crsec.ConflictDetector(
          model.tagged("DetectConflict"),
          talk_model=model.tagged("DecideToTalk")),
      crsec.NORM_IDENTIFIER_KEY: crsec.NormIdentifier(
          model.tagged("IdentifyNorm"), reflect_model=model.tagged("Reflect"),
          reflect_every=3),
      crsec.NORM_EVALUATOR_KEY: crsec.NormEvaluator(
          model.tagged("ImmediateEvaluation"), embedder,
          synthesis_model=model.tagged("LongTermSynthesis")),
      crsec.NORMATIVE_PLANNER_KEY: crsec.NormativePlanner(
          model.tagged("NormativePlan"), setting="Hobbs Cafe"),
  }
  agent = entity_agent_with_logging.EntityAgentWithLogging(
      agent_name=name,
      act_component=agent_components.concat_act_component.ConcatActComponent(
          model=model.tagged("act"), component_order=list(context)),
      context_components=context)

  stamp = obs.Stamp(1, "09:10", 1)
  agent.observe(obs.format_action(stamp, "Sam Moore", "indoors",
                                  "Sam lights a cigarette by the window."))
  print("wants to talk:",
        agent.get_component(crsec.CONFLICT_DETECTOR_KEY).pop_conversation_requests())
  print("acts:", agent.act())
  norm_memory = agent.get_component(crsec.NORM_MEMORY_KEY)
  print("norms:\n" + norm_memory.database.render_qualified())
  for record in norm_memory.drain_records():
    print(" ", record["kind"], {k: v for k, v in record.items()
                               if k in ("norm", "content", "actor", "talk")})
  print("calls by operation:", model.usage.by_tag())


if __name__ == "__main__":
  main()

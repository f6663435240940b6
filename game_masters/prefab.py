"""The `venue__GameMaster` prefab: a scenario's game master from plain params.

Concordia's generic game master asks the LLM to summarise its memories on
every act, to decide whether to stop, who acts, in what format, and to
reword every observation. This one replaces each of those under Concordia's
reserved keys with a deterministic component, and keeps the model for the
referee's judgement of each action (game_masters/referee/). It is played by
the slot engine (crsec_concordia.runs.slot_engine): every agent acts in
every slot. Everything is built inside `build()` from JSON params (the
scenario dict and the seed), because component objects passed in params
survive neither a second Simulation nor a checkpoint; the embedder is the
simulation's, which reaches `build()` through the memory bank Concordia
made with it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from concordia.agents import entity_agent_with_logging
from concordia.associative_memory import basic_associative_memory
from concordia.components.game_master import switch_act
from concordia.language_model import language_model
from concordia.typing import entity_component
from concordia.typing import prefab as prefab_lib

from crsec_concordia import embedding, gate_tally
from crsec_concordia.calibration import run_policy
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.embedding.warmer import warm
from crsec_concordia.components.port import port_of
from crsec_concordia.embedding import SentenceEmbedder
from crsec_concordia.game_masters import acting as acting_lib
from crsec_concordia.game_masters import action_spec as action_spec_lib
from crsec_concordia.game_masters import adjudication as adjudication_lib
from crsec_concordia.game_masters import clock as clock_lib
from crsec_concordia.game_masters import conversations as conversations_lib
from crsec_concordia.game_masters import exact_observations as queue_lib
from crsec_concordia.game_masters import interventions as interventions_lib
from crsec_concordia.game_masters import perception as perception_lib
from crsec_concordia.game_masters import places as places_lib
from crsec_concordia.game_masters import referee as referee_lib
from crsec_concordia.game_masters import whereabouts as whereabouts_lib
from crsec_concordia.models.base import TaggedModel
from crsec_concordia.models.concordia_adapter import as_structured
from crsec_concordia.scenarios import Scenario
from crsec_concordia.scenarios.network import attend_ties, talk_ties
from crsec_concordia.slot_agent import SlotAgent

DEFAULT_NAME = "Game Master"
OTHER_TAG = "GM.other"
# The referee's structures for a game master whose params name no
# `referee_policy`: every one, as the embedded model's recorded runs (the
# golden replay's among them) were made with, and as `auto` leaves it on a
# venue with labelled cases of its own. A run passes any other policy
# (its model's calibrated one, the held-out default) in the params.
UNCALIBRATED_POLICY = RefereePolicy.all_on()
# What the game master is built as: the agents' class (SlotAgent), whose
# hooks run in its own thread but for the resolution's, where the
# adjudication and the talks both wait on the model. Concordia's started a
# pool of six threads for each of the six or so hooks it runs every slot.
GAME_MASTER_CLASS: type[entity_agent_with_logging.EntityAgentWithLogging] = (
    SlotAgent)

# The order the game master's records of one slot are drained in: the
# slot's actions (in name order), then the talks held after them.
RECORD_KEYS = (adjudication_lib.ADJUDICATION_KEY,
               conversations_lib.CONVERSATIONS_KEY)


def short_place(setting: str) -> str:
  """"Hobbs Cafe" from "Hobbs Cafe, a small café in Smallville ..."."""
  return setting.split(",")[0].strip() or setting


def _tagged(model: language_model.LanguageModel, tag: str) -> TaggedModel:
  return as_structured(model).tagged(tag)


def drain_records(game_master) -> list[dict[str, Any]]:
  """The game master's records since the last drain, in the order they happened."""
  records = list(interventions_lib.records_of(
      game_master.get_all_context_components().get(acting_lib.ACTING_KEY)))
  for key in RECORD_KEYS:
    records.extend(game_master.get_component(key).drain_records())
  return records


def gate_counts_of(game_master) -> dict[str, int]:
  """What the game master's gates skipped so far (its referee's:
  crsec_concordia/gate_tally.py), summed over its components."""
  parts = game_master.get_all_context_components().values()
  return gate_tally.summed(c.gate_counts() for c in parts
                           if hasattr(c, "gate_counts"))


def _observers_embed(entities: Sequence[Any]) -> bool:
  """Whether any agent detects conflicts (its port says so): only those
  embed what they saw, so only then is it worth embedding ahead."""
  return any(port_of(e).detects_conflicts() for e in entities)


def referee_policy(params: Mapping[str, Any]) -> RefereePolicy:
  """The referee's policy the params give (`referee_policy`, as
  `RefereePolicy.to_dict()` writes it), or UNCALIBRATED_POLICY."""
  given = params.get("referee_policy")
  return UNCALIBRATED_POLICY if given is None else RefereePolicy.from_dict(
      given)


def norms_of(entities: Sequence[Any]) -> perception_lib.NormsOf:
  """The norms each agent holds now, as its port tells them (none for an
  agent that keeps none: a baseline agent)."""
  ports = {e.name: port_of(e) for e in entities}
  def held(name: str) -> list[str]:
    port = ports.get(name)
    return [] if port is None else port.held_norms()
  return held


def place_components(
    embedder: SentenceEmbedder, scenario: Scenario,
    entities: Sequence[entity_agent_with_logging.EntityAgentWithLogging],
    names: Sequence[str],
) -> tuple[whereabouts_lib.Whereabouts, perception_lib.LocalPerception]:
  """Where everyone is, and what each perceives (docs/design.md, "Places")."""
  places = places_lib.PlaceMap.of(scenario)
  known = set(scenario.agent_names)
  homes = {n: scenario.home_of(n) if n in known else scenario.start_place
           for n in names}
  return (whereabouts_lib.Whereabouts(places=places, homes=homes),
          perception_lib.LocalPerception(
              places, max_events=scenario.perception.max_events,
              norms_of=norms_of(entities), embedder=embedder,
              ties=attend_ties(scenario.network)))


def referee_settings(embedder: SentenceEmbedder,
                     policy: RefereePolicy | None
                     ) -> run_policy.RefereeSettings:
  """The referee's settings (run_policy.settings): the params' policy
  (None: UNCALIBRATED_POLICY), as the run resolved it for its venue, with
  the embedder's thresholds and near tie: what a probe run of the venue
  builds too."""
  return run_policy.settings(
      UNCALIBRATED_POLICY if policy is None else policy,
      embedding.thresholds_of(embedder))


def components(
    model: language_model.LanguageModel,
    embedder: SentenceEmbedder,
    scenario: Scenario,
    entities: Sequence[entity_agent_with_logging.EntityAgentWithLogging],
    names: Sequence[str],
    policy: RefereePolicy | None = None,
    seed: int = 0,
    batched: bool = False,
) -> dict[str, entity_component.ContextComponent]:
  """The game master's components under their keys (Concordia's reserved
  ones where they answer the engine); `policy`: the referee's structures
  (None: UNCALIBRATED_POLICY); `seed`: the run's (whom an intervention's
  share draws); `batched`: a place's slot judged in one call
  (referee/batch.py)."""
  place = short_place(scenario.setting)
  settings = referee_settings(embedder, policy)
  whereabouts, perception = place_components(embedder, scenario, entities,
                                             names)
  return {
      whereabouts_lib.WHEREABOUTS_KEY: whereabouts,
      clock_lib.CLOCK_KEY: clock_lib.SlotClock(
          total_steps=scenario.total_steps, stamp_for=scenario.stamp_for),
      acting_lib.ACTING_KEY: (
          interventions_lib.InterventionActing(
              scenario=scenario, seed=seed, entities=entities,
              player_names=names)
          if scenario.interventions else
          acting_lib.EveryoneActs(player_names=names)),
      action_spec_lib.ACTION_SPEC_KEY: action_spec_lib.FixedActionSpec(
          place=place,
          occasions=scenario.occasions),
      queue_lib.EXACT_OBSERVATIONS_KEY: queue_lib.ExactObservations(
          player_names=names),
      conversations_lib.CONVERSATIONS_KEY: (
          conversations_lib.NormConversations(
              entities=entities, place=place,
              max_rounds=scenario.conversation.max_rounds,
              ties=talk_ties(scenario.network))),
      adjudication_lib.ADJUDICATION_KEY: adjudication_lib.Adjudication(
          _tagged(model, referee_lib.ADJUDICATE_TAG),
          place=scenario.setting,
          default_place=scenario.default_place,
          behaviours=scenario.behaviours,
          player_names=names,
          # The same referee in every arm: its tags are checked by the
          # embedder (referee/tag_gate.py), with or without normative
          # observers.
          similarity=referee_lib.similarity_of(embedder),
          floors=settings.floors,
          warm=(functools.partial(warm, embedder)
                if _observers_embed(entities) else None),
          policy=settings.policy,
          target_norms=scenario.target_norms,
          places=whereabouts.places.prompt_places(), perception=perception,
          batched=batched),
  }


@dataclasses.dataclass
class VenueGameMaster(prefab_lib.Prefab):
  """The venue's game master: exact observations, slots, adjudication."""

  description: str = ("The game master of crsec-concordia: a fixed clock, "
                      "every agent acting in every slot, one adjudication "
                      "call per action, exact observations and bounded norm "
                      "conversations.")
  params: Mapping[str, Any] = dataclasses.field(
      default_factory=lambda: {
          "name": DEFAULT_NAME,
          # A scenario as `Scenario.to_dict()` gives it (plain JSON).
          "scenario": {},
          # The run seed (model sampling derives from it).
          "seed": 0,
          # Optional: the referee's structures, a RefereePolicy.to_dict()
          # (crsec_concordia/calibration/policy.py); absent,
          # UNCALIBRATED_POLICY.
      })
  entities: Sequence[entity_agent_with_logging.EntityAgentWithLogging] = ()

  def build(
      self,
      model: language_model.LanguageModel,
      memory_bank: basic_associative_memory.AssociativeMemoryBank,
  ) -> entity_agent_with_logging.EntityAgentWithLogging:
    """Builds the game master for the simulation's agents (`self.entities`).

    It keeps no memories to summarise: the memory bank only brings the
    simulation's embedder (`embedding.embedder_of`).
    """
    # The one place the params' scenario is parsed: every component gets
    # its parts as the scenario's own types (behaviours, targets, occasions).
    scenario = Scenario.from_dict(dict(self.params["scenario"]))
    name = str(self.params.get("name", DEFAULT_NAME))
    entities = self.entities if self.entities is not None else []
    names = [e.name for e in entities] or scenario.agent_names
    built = components(model, embedding.embedder_of(memory_bank), scenario,
                       entities, names, referee_policy(self.params),
                       seed=int(self.params.get("seed", 0)),
                       batched=bool(self.params.get(
                           run_policy.BATCHED_PARAM, False)))
    # SwitchAct only reaches its model when a reserved key has no component
    # (never here); its calls would be counted under GM.other.
    act = switch_act.SwitchAct(model=_tagged(model, OTHER_TAG),
                               entity_names=names)
    return GAME_MASTER_CLASS(
        agent_name=name, act_component=act, context_components=built)


# `cafe__GameMaster` is the name older run directories carry in their
# checkpoints: kept so that they still resume.
GAME_MASTER_PREFABS: dict[str, prefab_lib.Prefab] = {
    "venue__GameMaster": VenueGameMaster(),
    "cafe__GameMaster": VenueGameMaster()}

"""The `venue__GameMaster` prefab: a scenario's game master from plain params.

Concordia's generic game master asks the LLM to summarise its memories on
every act, to decide whether to stop, who acts, in what format, and to
reword every observation. This one replaces each of those under Concordia's
reserved keys with a deterministic component, and keeps one model call per
action: its adjudication (plus a focused check for answers to occasions).
It is played by the slot engine (crsec_concordia.runs.slot_engine): every
agent acts in every slot. Everything is built inside
`build()` from JSON params (the scenario dict and the seed), because
component objects passed in params survive neither a second Simulation nor a
checkpoint.
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
from concordia.typing import prefab as prefab_lib

from crsec_concordia.game_masters import acting as acting_lib
from crsec_concordia.game_masters import action_spec as action_spec_lib
from crsec_concordia.game_masters import adjudication as adjudication_lib
from crsec_concordia.game_masters import clock as clock_lib
from crsec_concordia.game_masters import conversations as conversations_lib
from crsec_concordia.game_masters import exact_observations as queue_lib
from crsec_concordia.game_masters import occasions as occasions_lib
from crsec_concordia.components._embedding_warmer import warm
from crsec_concordia.components.conflict_detector import CONFLICT_DETECTOR_KEY
from crsec_concordia import embedding
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.models.base import TaggedModel
from crsec_concordia.models.concordia_adapter import as_structured

DEFAULT_NAME = "Game Master"
OTHER_TAG = "GM.other"

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
  records = []
  for key in RECORD_KEYS:
    records.extend(game_master.get_component(key).drain_records())
  return records


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
      })
  entities: Sequence[entity_agent_with_logging.EntityAgentWithLogging] = ()

  def build(
      self,
      model: language_model.LanguageModel,
      memory_bank: basic_associative_memory.AssociativeMemoryBank,
  ) -> entity_agent_with_logging.EntityAgentWithLogging:
    """Builds the game master for the simulation's agents (`self.entities`)."""
    del memory_bank  # This game master keeps no memories to summarise.
    from crsec_concordia.scenarios import Scenario  # pylint: disable=import-outside-toplevel
    scenario = Scenario.from_dict(dict(self.params["scenario"]))
    name = str(self.params.get("name", DEFAULT_NAME))
    entities = self.entities if self.entities is not None else []
    names = [e.name for e in entities] or scenario.agent_names
    place = short_place(scenario.setting)

    components = {
        clock_lib.CLOCK_KEY: clock_lib.SlotClock(
            total_steps=scenario.total_steps, stamp_for=scenario.stamp_for),
        acting_lib.ACTING_KEY: acting_lib.EveryoneActs(player_names=names),
        action_spec_lib.ACTION_SPEC_KEY: action_spec_lib.FixedActionSpec(
            place=place,
            occasions=occasions_lib.parse(
                o.model_dump(mode="json") for o in scenario.occasions)),
        queue_lib.EXACT_OBSERVATIONS_KEY: queue_lib.ExactObservations(
            player_names=names),
        conversations_lib.CONVERSATIONS_KEY: (
            conversations_lib.NormConversations(
                entities=entities, place=place,
                max_rounds=scenario.conversation.max_rounds)),
        adjudication_lib.ADJUDICATION_KEY: adjudication_lib.Adjudication(
            _tagged(model, adjudication_lib.ADJUDICATE_TAG),
            place=scenario.setting,
            default_place=scenario.default_place,
            behaviours=[b.model_dump(mode="json")
                        for b in scenario.behaviours],
            player_names=names,
            # The same referee in every arm: its tags are checked by the
            # embedder (tag_gate.py), with or without normative observers.
            similarity=functools.partial(embedding.pair_similarity,
                                         shared_embedder()),
            # Only observers with a ConflictDetector embed what they saw.
            warm=functools.partial(warm, shared_embedder()) if any(
                CONFLICT_DETECTOR_KEY in getattr(
                    e, "get_all_context_components", dict)()
                for e in entities) else None),
    }
    # SwitchAct only reaches its model when a reserved key has no component
    # (never here); its calls would be counted under GM.other.
    act = switch_act.SwitchAct(model=_tagged(model, OTHER_TAG),
                               entity_names=names)
    # The agents' class (prefabs.SlotAgent): the game master's hooks run
    # in its own thread but for the resolution's, where the adjudication
    # and the talks both wait on the model. Concordia's started a pool of
    # six threads for each of the six or so hooks it runs every slot.
    from crsec_concordia import prefabs  # pylint: disable=import-outside-toplevel
    return prefabs.AGENT_CLASS(
        agent_name=name, act_component=act, context_components=components)


# `cafe__GameMaster` is the name run directories written before 2026-11-23
# carry in their checkpoints: kept so that they still resume.
PREFABS: dict[str, prefab_lib.Prefab] = {"venue__GameMaster": VenueGameMaster(),
                                         "cafe__GameMaster": VenueGameMaster()}

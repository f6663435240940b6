"""SlotSimulation: Concordia's generic Simulation with a cheaper checkpoint.

Every slot ends with a checkpoint (session.py writes it; resume reads it).
Concordia's `make_checkpoint_data` asks every component of every entity for
its state twice (once for the entity's state, once more for the
`component_info` it stores beside it) and deep-copies the whole raw log,
which grows by every agent's logs each slot: in a large society the
largest piece of work between two slots, all under the GIL
(docs/trials/runs-and-sweeps.md).

This one builds the same dictionary, key for key and value for value
(tests/test_slot_speed.py compares the two), asking each component once,
and hands the raw log itself instead of a deep copy: its entries are not
changed once logged, so the session's callback takes a shallow copy of the
list (the next slot appends to it while the checkpoint is written in the
background), and nothing else keeps the dictionary.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from concordia.prefabs.simulation import generic as simulation_lib
from concordia.typing import entity_component


# What Concordia's `_make_json_serializable` returns as it is given.
_LEAVES = frozenset({str, int, float, bool, type(None)})
_KINDS = (str, int, float, bool)


def _serializable(obj: Any) -> Any:
  """Concordia's `Simulation._make_json_serializable`, value for value
  (tests/test_slot_speed.py compares the two), with its leaves (strings,
  numbers) taken as they are without a call each: a society's states are
  mostly such leaves, a thousand agents' memories of them each slot."""
  if obj is None or isinstance(obj, _KINDS):
    return obj
  if isinstance(obj, dict):
    result = {}
    for key, value in obj.items():
      if type(value) in _LEAVES:
        result[key] = value
        continue
      serialized = _serializable(value)
      if serialized is not None or value is None:
        result[key] = serialized
    return result
  if isinstance(obj, (list, tuple)):
    return [item if type(item) in _LEAVES else _serializable(item)
            for item in obj]
  return None


class SlotSimulation(simulation_lib.Simulation):
  """The generic Simulation, its checkpoint data made in one pass.

  `entity_models` gives an agent (by name) a model other than the
  simulation's (runs/model_roles.py); `game_master_model` the game master's.
  """

  def __init__(self, config, model, embedder, *, engine,
               entity_models: Mapping[str, Any] | None = None,
               game_master_model: Any = None):
    self._entity_models = dict(entity_models or {})
    self._swap_lock = threading.Lock()
    super().__init__(config, model, embedder, engine=engine,
                     override_game_master_model=game_master_model)

  def add_entity(self, instance_config, state=None):
    chosen = self._entity_models.get(instance_config.params.get("name"))
    if chosen is None:
      return super().add_entity(instance_config, state)
    with self._swap_lock:  # Concordia builds with `_agent_model`.
      default, self._agent_model = self._agent_model, chosen
      try:
        return super().add_entity(instance_config, state)
      finally:
        self._agent_model = default

  def _make_json_serializable(self, obj: Any) -> Any:
    return _serializable(obj)

  def _component_info(self, entity, context_states: dict[str, Any]
                      ) -> dict[str, Any]:
    """Concordia's `_extract_component_info`, from states already taken."""
    info: dict[str, Any] = {}
    for attr, key in (("_act_component", "act_component"),
                      ("_context_processor", "context_processor")):
      if hasattr(entity, attr):
        part = getattr(entity, attr)
        info[key] = {"class_name": type(part).__name__,
                     "module": type(part).__module__}
    if hasattr(entity, "_context_components"):
      info["context_components"] = {}
      for name, comp in getattr(entity, "_context_components").items():
        comp_info: dict[str, Any] = {"class_name": type(comp).__name__,
                                     "module": type(comp).__module__}
        if hasattr(comp, "get_state"):
          comp_info["state"] = self._make_json_serializable(
              context_states[name])
        if hasattr(comp, "get_dynamic_state"):
          try:
            comp_info["dynamic_state"] = self._make_json_serializable(
                comp.get_dynamic_state())
          except (TypeError, ValueError, AttributeError):
            comp_info["dynamic_state"] = {}
        info["context_components"][name] = comp_info
    return info

  def _saved(self, entity, **extra: Any) -> dict[str, Any] | None:
    config = self.get_entity_prefab_config(entity.name)
    if not config:
      return None  # Concordia logs a warning and leaves it out; so do we.
    state = entity.get_state()
    return {
        "prefab_type": config.prefab,
        "entity_params": self._make_json_serializable(config.params),
        **extra,
        "components": self._make_json_serializable(state),
        "component_info": self._component_info(
            entity, dict(state.get("context_components", {}))),
    }

  def make_checkpoint_data(self) -> dict[str, Any]:
    data: dict[str, Any] = {
        "entities": {}, "game_masters": {},
        # Not a copy: the callback copies the list (Session._save_checkpoint).
        "raw_log": self._raw_log,
        "checkpoint_counter": self._checkpoint_counter,
    }
    for entity in self.entities:
      if isinstance(entity, entity_component.EntityWithComponents):
        saved = self._saved(entity)
        if saved is not None:
          data["entities"][entity.name] = saved
    for gm in self.game_masters:
      if isinstance(gm, entity_component.EntityWithComponents):
        config = self.get_entity_prefab_config(gm.name)
        saved = self._saved(gm, role=config.role.name) if config else None
        if saved is not None:
          data["game_masters"][gm.name] = saved
    self._checkpoint_counter += 1
    return data

  def load_from_checkpoint(self, checkpoint: Mapping[str, Any]) -> None:
    """Concordia's, counting on from the checkpoint's own number: it sets
    the counter to that number, so the resumed run's next checkpoint was
    numbered as the one it was restored from."""
    super().load_from_checkpoint(checkpoint)
    self._checkpoint_counter = int(checkpoint.get("checkpoint_counter",
                                                  -1)) + 1

"""Entity prefabs: a normative CRSEC agent and its non-normative twin.

One prefab per module, as Concordia's are; `PREFABS` registers them under
the names a Concordia `Config` uses. Both take the simulation's model and
the memory bank it built (and through it, its sentence embedder).
"""

from concordia.typing import prefab as prefab_lib

from crsec_concordia.prefabs.agent_parts import (AGENT_CLASS, MODULES,
                                                 memory_bank_for)
from crsec_concordia.prefabs.baseline_entity import BaselineEntity
from crsec_concordia.prefabs.normative_entity import NormativeEntity
from crsec_concordia.slot_agent import SlotAgent, waits_on_model

PREFABS: dict[str, prefab_lib.Prefab] = {
    "normative__Entity": NormativeEntity(),
    "baseline__Entity": BaselineEntity(),
}

__all__ = [
    "AGENT_CLASS", "BaselineEntity", "MODULES", "NormativeEntity", "PREFABS",
    "SlotAgent", "memory_bank_for", "waits_on_model",
]

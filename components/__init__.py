"""CRSEC as Concordia agent components, one per file.

Compose them into any Concordia entity; they find each other by key
(`NormMemory` and `AgentJournal` by default), so each needs a NormMemory
and an AgentJournal on the same entity. Whatever is outside an agent (a
game master, a run) deals with it through its port (port.py).
"""

from crsec_concordia.components.agent_journal import (JOURNAL_KEY,
                                                      AgentJournal)
from crsec_concordia.components.conflict_detector import (
    CONFLICT_DETECTOR_KEY, ConflictDetector)
from crsec_concordia.components.norm_evaluator import (NORM_EVALUATOR_KEY,
                                                       NormEvaluator)
from crsec_concordia.components.norm_identifier import (NORM_IDENTIFIER_KEY,
                                                        NormIdentifier)
from crsec_concordia.components.norm_memory import (ENTREPRENEUR,
                                                    NORM_MEMORY_KEY, ORDINARY,
                                                    NormMemory)
from crsec_concordia.components.normative_planner import (
    NORMATIVE_PLANNER_KEY, NormativePlanner)
from crsec_concordia.components.port import (NO_PORT, PORT_KEY, AgentPort,
                                             PortError, port_of)
from crsec_concordia.components.crsec_port import CrsecPort
from crsec_concordia.components.structured_act import StructuredAct

__all__ = [
    "AgentJournal", "AgentPort", "CONFLICT_DETECTOR_KEY", "ConflictDetector",
    "CrsecPort", "ENTREPRENEUR", "JOURNAL_KEY", "NORMATIVE_PLANNER_KEY",
    "NORM_EVALUATOR_KEY", "NORM_IDENTIFIER_KEY", "NORM_MEMORY_KEY",
    "NO_PORT", "NormEvaluator", "NormIdentifier", "NormMemory",
    "NormativePlanner", "ORDINARY", "PORT_KEY", "PortError", "StructuredAct",
    "port_of",
]

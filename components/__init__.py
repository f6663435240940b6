"""CRSEC as Concordia agent components, one per file.

Compose them into any Concordia entity; they find each other by key
(`NormMemory` by default), so each needs a NormMemory on the same entity.
"""

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
from crsec_concordia.components.structured_act import StructuredAct

__all__ = [
    "CONFLICT_DETECTOR_KEY", "ConflictDetector", "ENTREPRENEUR",
    "NORMATIVE_PLANNER_KEY", "NORM_EVALUATOR_KEY", "NORM_IDENTIFIER_KEY",
    "NORM_MEMORY_KEY", "NormEvaluator", "NormIdentifier", "NormMemory",
    "NormativePlanner", "ORDINARY", "StructuredAct",
]

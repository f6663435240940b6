"""The paper's LLM operations, one module each, named as in the paper.

Each builds its own prompt, asks for a JSON schema, and returns the validated
answer or None after reporting a failure: never a default answer. Every
operation's name, the tag its calls are counted under and its CRSEC module
are declared once, in names.py, with the operations the paper does not name.
"""

from crsec_concordia.operations.create_norm import create_norm
from crsec_concordia.operations.decompose_plan import decompose_plan
from crsec_concordia.operations.decide_to_talk import decide_to_talk
from crsec_concordia.operations.detect_conflict import (Observed,
                                                        detect_conflicts)
from crsec_concordia.operations.identify_norm import identify_norm
from crsec_concordia.operations.immediate_evaluation import (Verdict,
                                                             immediate_evaluation)
from crsec_concordia.operations.long_term_synthesis import (
    AbstractNorm, classify_specific_norms, long_term_synthesis,
    synthesize_norm)
from crsec_concordia.operations.normative_plan import normative_plan
from crsec_concordia.operations.reflect import reflect

__all__ = [
    "AbstractNorm", "Verdict", "classify_specific_norms", "create_norm",
    "Observed", "decide_to_talk", "decompose_plan", "detect_conflicts",
    "identify_norm", "immediate_evaluation", "long_term_synthesis",
    "normative_plan", "reflect", "synthesize_norm",
]

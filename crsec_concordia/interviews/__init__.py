"""Interviews: a run's agents, restored after a slot, asked questions.

  from crsec_concordia.interviews.interview import interview
  result = interview("runs/x/normative_seed_1", "rules", at=12)
  result.answers          # one row per agent and question, held norms beside

The run directory and the agents' memories are left as they were
(restore.py); `crsec interview` is the command, and `load_run(...)
.interviews` reads the answers back (table.py). A run itself asks each
agent the rules it states, before its first slot and after its last
(stated.py, stated_phase.py; read back by stated_table.py). ("questionnaire" is the
human-evaluation kit's name, metrics/present/.)
"""

from crsec_concordia.interviews.questions import (Questionnaire,
                                                  load_questions)
from crsec_concordia.interviews.table import read_interviews

__all__ = ["Questionnaire", "load_questions", "read_interviews"]

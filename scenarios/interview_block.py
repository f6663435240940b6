"""The `interviews:` block of a scenario file: interviews a run schedules.

  interviews:
    - {at: [6, 12], questions: rules}   # a shipped questionnaire, or a path

A run keeps the checkpoints of the slots named (it keeps only its latest
two otherwise), so that `crsec interview RUN_DIR` can ask its agents, as
they were after each, the questions of the file (crsec_concordia/
interviews/). A path is read relative to the directory `crsec interview`
runs in. A scenario without the block dumps as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import pydantic

from crsec_concordia.scenarios.base import ScenarioModel
from crsec_concordia.scenarios.checks import Line, Positive
from crsec_concordia.scenarios.schedule_checks import (  # noqa: F401
    INTERVIEWS_KEY, interview_problems)


class ScheduledInterview(ScenarioModel):
  """The questions file to ask after each of the slots `at`."""
  at: Annotated[list[Positive], pydantic.Field(min_length=1)]
  questions: Line


def scheduled_slots(interviews: Sequence[ScheduledInterview]) -> set[int]:
  """Every slot some interview is scheduled after."""
  return {slot for i in interviews for slot in i.at}

"""What a scenario's `interviews:` block must be against its clock
(checks.py runs it on raw data; interview_block.py has the block's model).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crsec_concordia.scenarios.problems import Problem

INTERVIEWS_KEY = "interviews"


def interview_problems(data: Mapping[str, Any],
                       total_steps: int | None) -> list[Problem]:
  """Each scheduled slot is one the run plays (`total_steps`: its length,
  None when the clock has a problem of its own)."""
  block = data.get(INTERVIEWS_KEY)
  if not isinstance(block, list) or total_steps is None:
    return []
  problems = []
  for i, item in enumerate(block):
    slots = item.get("at") if isinstance(item, Mapping) else None
    for j, slot in enumerate(slots if isinstance(slots, list) else []):
      if (isinstance(slot, int) and not isinstance(slot, bool)
          and slot > total_steps):
        problems.append(Problem(
            (INTERVIEWS_KEY, i, "at", j),
            f"slot {slot} is after the run's last "
            f"({total_steps})", f"use a slot from 1 to {total_steps}"))
  return problems

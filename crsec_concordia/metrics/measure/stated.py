"""What each agent says it believes: its stated rules read by the matcher.

The rules an agent states before the first slot and after the last
(interviews/stated_table.py) are read exactly as a held norm is: a stated
rule that MEANS a target (matching.py) counts for it, so stated belief and
held belief share one reader and one measured error. Per phase, an agent
states a target when any of its rules means it; an agent whose question
failed is unknown (None), never "states nothing"; an agent not asked in a
phase (not there, or the run asked nobody) is absent from it.
"""

from __future__ import annotations

from collections.abc import Mapping

from crsec_concordia.interviews.stated_table import (PHASES, read_stated,
                                                     stated_rules)
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.rundir.reading import Run

# The role of a scenario's norm entrepreneurs: the measures of what agents
# say report them apart.
ENTREPRENEUR = "entrepreneur"
# {phase: {agent: ids of the targets it states, or None (its question
# failed)}}
StatedTargets = Mapping[str, Mapping[str, frozenset[str] | None]]


def stated_targets(run: Run, matcher: NormMatcher) -> StatedTargets:
  """Per phase ("start", "end") and agent asked, the targets its stated
  rules mean; phases the run did not ask are empty."""
  frame = read_stated(run.path)
  out: dict[str, dict[str, frozenset[str] | None]] = {}
  for phase in PHASES:
    rules = stated_rules(frame, phase)
    texts = [r for said in rules.values() if said for r in said]
    meant = dict(zip(texts, matcher.means_many(texts))) if texts else {}
    out[phase] = {
        agent: (None if said is None else
                frozenset().union(*(meant[r] for r in said)))
        for agent, said in rules.items()}
  return out

"""An agent's latest memories as an interview prompt shows them, within one request.

A memory is a whole slot's observation (everything the agent saw at its
place), so the latest few outgrow a request in a crowded venue long
before a run ends, and a prompt the server refuses stops the run at its
end interview (docs/design.md, "Interviews"). The prompt therefore shows
the newest memories that fit beside its other lines and its answer
(models/request_budget.py), at most the number asked for, oldest first.
"""

from __future__ import annotations

from collections.abc import Sequence

from crsec_concordia.interviews.agent_view import Interviewee
from crsec_concordia.models.request_budget import (CONTEXT_TOKENS,
                                                   newest_fitting,
                                                   prompt_tokens)

NOTHING_YET = "- nothing yet"
# An interview answer's budget (StatedBelief and a questionnaire's question):
# a few sentences, or a list of short rules.
ANSWER_TOKENS = 400


def memory_lines(agent: Interviewee, count: int, beside: Sequence[str],
                 answer_tokens: int, budget: int = CONTEXT_TOKENS
                 ) -> list[str]:
  """The heading and `agent`'s latest (at most `count`) memories that fit
  one request of `budget` tokens beside the prompt's other lines `beside`
  and an answer of `answer_tokens`; "nothing yet" for an agent with none."""
  heading = f"What {agent.name} remembers (oldest first):"
  recent = agent.memories[-count:] if count else ()
  if not recent:
    return [heading, NOTHING_YET]
  room = budget - answer_tokens - prompt_tokens(
      "\n".join([*beside, heading]))
  return [heading, *newest_fitting(recent, room)]

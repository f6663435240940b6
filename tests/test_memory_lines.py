"""An interview prompt's memories fit one request however long the run.

A memory is a whole slot's observation, so a café's twenty latest came to
5,587 prompt tokens at the end of 12 slots, over the embedded server's
4,096, and the run stopped at its end interview (docs/measurements.md).
"""

from __future__ import annotations

from crsec_concordia.interviews import ask, stated
from crsec_concordia.interviews.agent_view import Interviewee
from crsec_concordia.interviews.memory_lines import (ANSWER_TOKENS,
                                                      NOTHING_YET,
                                                      memory_lines)
from crsec_concordia.interviews.questions import Question, Questionnaire
from crsec_concordia.models.request_budget import (CONTEXT_TOKENS, CUT,
                                                   newest_fitting,
                                                   prompt_tokens)


def _slot(k: int, chars: int = 1600) -> str:
  """Slot k's observation, about `chars` long (a crowded café's is)."""
  head = f"[Day 1 | step {k}] slot {k}: "
  return head + ("Someone at a table does something. " * chars)[:chars]


def _agent(memories) -> Interviewee:
  return Interviewee("Ann", "ordinary", "Be Ann.", "A baker in town.",
                     tuple(memories), ("Hold this.",))


def test_a_long_runs_prompts_fit_one_request_with_their_answer():
  agent = _agent(_slot(k) for k in range(1, 41))
  questionnaire = Questionnaire(name="q", context=("persona", "memories",
                                                   "norms"),
                                memories=20,
                                questions=(Question("q1", "What happened?"),))
  for text, answer in ((stated.prompt(agent), ANSWER_TOKENS),
                       (ask.prompt(agent, questionnaire.questions[0],
                                   questionnaire), ANSWER_TOKENS)):
    assert prompt_tokens(text) + answer <= CONTEXT_TOKENS
    # The newest memories are the ones shown, in their order; the oldest
    # of the twenty asked for are left out.
    assert "slot 40:" in text and "slot 21:" not in text
    assert text.index("slot 39:") < text.index("slot 40:")


def test_a_short_runs_memories_are_all_shown_as_before():
  agent = _agent(["saw a dog", "ate bread"])
  text = stated.prompt(agent)
  assert "- saw a dog\n- ate bread\n" in text
  assert stated.prompt(_agent([])).count(NOTHING_YET) == 1


def test_a_memory_too_long_alone_shows_its_end():
  newest = "old start " + "x" * 20000 + " the very end."
  lines = newest_fitting(["an older one", newest], room=500)
  assert len(lines) == 1
  assert lines[0].startswith("- " + CUT) and lines[0].endswith("the very end.")
  assert prompt_tokens(lines[0] + "\n") <= 500


def test_no_room_shows_no_memory_and_the_count_still_bounds():
  assert newest_fitting(["a", "b"], room=0) == []
  agent = _agent(["one", "two", "three"])
  assert memory_lines(agent, 2, [], 10)[1:] == ["- two", "- three"]

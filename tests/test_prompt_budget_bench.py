"""bench/prompt_budget.py: prompts split into sections, caps beside answers."""

from bench import prompt_budget


def test_a_prompt_splits_into_its_sections_line_by_line():
  persona = "Ana Diaz is a nurse who works nights and likes quiet mornings."
  schema = {"type": "object", "properties": {
      "answer": {"type": "string"},
      "hours": {"type": "array", "items": {"type": "object", "properties": {
          "activity": {"type": "string"}}}}}}
  prompt = (f"You play Ana Diaz.\nAbout Ana Diaz:\n{persona}\n"
            "1. People should queue. (injunctive, importance 80/100)\n"
            "09:00-10:00: read\n"
            "Recent events (oldest first):\n"
            "Day 1 09:10, indoors:\nBo Li waves.\n\n"
            "answer: what Ana Diaz does.\nactivity: a few words.\n")
  parts = prompt_budget.sections(prompt, schema, [persona])
  lines = prompt.splitlines(keepends=True)
  expected = {"persona": lines[1] + lines[2],
              "norms": lines[3], "plan": lines[4],
              "events": "".join(lines[5:8]),
              "fields": "".join(lines[9:]), "instructions": lines[0] + "\n"}
  assert parts == {k: len(v) / 4 for k, v in expected.items()}
  assert sum(parts.values()) == len(prompt) / 4


def test_the_golden_answers_are_grouped_by_their_keys():
  found = prompt_budget.golden_answers()
  # The act's answers, the referee's and the plan's are all recorded.
  assert frozenset({"answer"}) in found
  assert frozenset({"hours", "norms_observed"}) in found
  assert all(n > 0 for counts in found.values() for n in counts)

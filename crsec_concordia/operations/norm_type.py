"""A norm's type, from its wording where the wording settles it.

The paper's operations ask the model for each norm's type, injunctive (what
people must, should or must not do) or descriptive (what most people
usually do). The prompts define the two by their wording (base.py's
NORM_TYPE_HELP), and a sentence's wording is grammar, which code reads
exactly: "People should not smoke indoors." is injunctive whatever model
answers, in any venue, and a small model labels nearly every norm alike.

So the model's type stands only where the wording settles nothing: a
sentence with a marker of obligation (should, must, "Do not ...", "No
...") and none of habit (usually, most people, tend to), or the reverse,
has the type its wording shows. A type settled here is recorded as such
by ImmediateEvaluation ("type corrected") when it differs from the
candidate's. Why the wording and not the model decides where it can:
docs/trials/operations.md#norm-types.
"""

from __future__ import annotations

import re

INJUNCTIVE, DESCRIPTIVE = "injunctive", "descriptive"

# Obligation: a modal of duty or permission, or an opening prohibition.
_OBLIGATION = re.compile(
    r"\b(should|shouldn't|must|mustn't|ought|shall|has to|have to|"
    r"need to|needs to|(is|are)( not)? (allowed|permitted|expected|"
    r"required|supposed|forbidden|prohibited)\b)"
    r"|^\s*(do not|don't|never|no(?! one\b)|please|avoid)\b",
    re.IGNORECASE)
# Habit: what people usually do, without requiring it.
_HABIT = re.compile(
    r"\b(usually|typically|generally|normally|commonly|customarily|"
    r"tend to|tends to|most people|most of|often|mostly)\b|^\s*most\b",
    re.IGNORECASE)


def worded_type(content: str) -> str | None:
  """The type `content`'s wording shows, or None if it shows neither or
  both."""
  obligation = bool(_OBLIGATION.search(content))
  habit = bool(_HABIT.search(content))
  if obligation == habit:
    return None
  return INJUNCTIVE if obligation else DESCRIPTIVE


def settled_type(content: str, answered: str) -> str:
  """The wording's type where it shows one, else the model's answer."""
  return worded_type(content) or answered

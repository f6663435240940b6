"""The doer check: is the actor the one who does the behaviour it was tagged with?

Neither the quote check nor the embedder's gates can see an action that is
about a behaviour without the actor doing it ("Tom tells Carlos he cannot
stand the smell of cigarette smoke" is close to smoking, and was tagged so).
So each tag that passed the gates gets one short question of its own,
answered with a name: "In this action, who <the behaviour's description>?";
the tag counts only if the answer names the actor. A name is the structure
here: the small model agrees with any reading it is asked to confirm, but
"nobody" or another person is an answer it gives readily. What it was
measured on and what it still lets through: docs/trials/referee.md ("The
doer check").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia.models.base import EndpointError, StructuredOutputError

TAG = "GM.doer"  # The calls' usage tag and a failure record's `op`.
NOBODY = "nobody"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["who"],
    "properties": {"who": {"type": "string", "minLength": 1,
                           "maxLength": 60}},
}
_WORD = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")


def doer_prompt(action: str, description: str) -> str:
  """The question about one behaviour: its description as the verb."""
  return (f"Action: \"{action}\"\n\n"
          f"In this action, who {description}? Answer with that person's "
          "name as the action writes it, or \"nobody\" if no one in the "
          "action does this.")


def names_actor(who: str, actor: str) -> bool:
  """Whether an answer names the actor: their full name, or their first
  name as a word (agents of one family share a surname, so the surname
  alone is not enough)."""
  said = " ".join(w.lower() for w in _WORD.findall(who))
  full = " ".join(w.lower() for w in _WORD.findall(actor))
  if not full:
    return False
  first = full.split()[0]
  return full in said or first in said.split()


def check_doers(model, actor: str, action: str, ids: Sequence[str],
                descriptions: Mapping[str, str], max_tokens: int = 40
                ) -> tuple[dict[str, str], dict[str, Any] | None]:
  """({id: the name answered} for each id whose call returned, one failure
  record for those whose call failed, or None). An id without an answer is
  not checked: the caller keeps it apart, never counted as the actor's."""
  answers: dict[str, str] = {}
  errors: list[str] = []
  raw = ""
  for i in ids:
    try:
      answer = model.sample_json(doer_prompt(action, descriptions[i]), SCHEMA,
                                 max_tokens=max_tokens, temperature=0.0)
    except (StructuredOutputError, EndpointError) as e:
      errors.append(f"{i}: {e}")
      raw = raw or getattr(e, "raw", "")
      continue
    answers[i] = " ".join(str(answer["who"]).split())
  failure = ({"op": TAG, "error": "; ".join(errors), "raw": raw}
             if errors else None)
  return answers, failure

"""The doer check: is the actor the one who does the behaviour it was tagged with?

The referee's one call (referee_question.py) names the behaviours an action
shows, its quote is checked as the action's words and its tags by the
embedder (tag_gate.py). What neither can see is an action that is about a
behaviour without the actor doing it: "Tom Gomez tells Carlos Gomez that he
cannot stand the smell of cigarette smoke" is close to smoking for the
embedder and was tagged as smoking by the 1.5B model; so was "Isabella
empties the ashtray and puts out a cigarette someone left smouldering".

So each tag that passed the gate gets one short question of its own,
asked about that behaviour alone and answered with a name: "In this
action, who <the behaviour's description>?". The answer is checked in
code: the tag counts only if it names the actor. A name is the structure
here: the model is not asked to agree with a reading (asked "Did X do
this?", it said yes to 229 of 264 pairs) but to say who, and "nobody" or
another person is an answer it gives readily.

Measured on the referee's recorded answers to the labelled probes of the
three shipped venues (Qwen2.5-Coder-1.5B Q4_K_M, 69 tags, 17 of them
wrong; /work/runs/s16 in session 16): it dropped 7 of the 17 wrong tags
and 1 of the 52 right ones; after the tag gate, precision café 0.80 ->
0.83, mini café 0.82 -> 0.90, garden 0.82 -> 0.93 (recall 0.61 -> 0.57).
With the check in the referee (bench/judgement_probe.py --all, 2d1aa59,
temperature 0 as in a run): café P 0.83 R 0.79 (was 0.80 / 0.83), mini
café 0.90 / 0.82 (0.82 / 0.82), garden 0.93 / 0.57 (0.82 / 0.61). The
right tag it lost: "drops a few dollars into the tip jar for Isabella",
who tips? "Isabella".
Tried and dropped: the question with "doing it themselves (not only
talking of it ...)" added (4 of 17 dropped), a quote before the name (1 of
17: it quoted the instructions) and "what the actor does" before the name
(right tags lost: "Isabella Rodriguez" as the one who tips when Francisco
thanks her). Asked of every answer to an occasion, without the referee's tag and gate
before it, it is no check: on the three venues' labelled answers to the
bill or the harvest it named the actor for 31 of 47 behaviours the answer
does not show ("counts out the exact amount for his lunch": who tips? Tom;
"turns up the music on his laptop": who refuses to tip? Tom).
What it still lets through: an action near the behaviour that
the actor does ("steps out onto the terrace for some fresh air" as smoking
outside, "pays the print shop's invoice" as a tip).
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

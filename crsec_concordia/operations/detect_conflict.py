"""DetectConflict: do the behaviours an agent saw break its qualified norms?

The sender side of spreading. The paper has the model find, among all the
agent's norms, one that an observed behaviour breaks; here the work is
split, because a small model cannot do both at once: the embedder picks
the rule each behaviour is most about (detect_conflict_relevance.py), and
the model judges each behaviour against that one rule, first quoting the
words of the behaviour the rule is about (or "none"), then breaks /
follows / unrelated; a breach with no words quoted is no breach. The
behaviours of one slot are judged in one call per observer, one schema
entry per person seen, so the model can skip or merge no one; questions
several observers hold are asked once, with no observer named
(detect_conflict_sharing.py), and with the agents' `conflicts_batched`
switch the distinct questions of one place's slot are asked in one call
(detect_conflict_batch.py). The trials:
docs/trials/operations.md#detectconflict.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from crsec_concordia.models.base import StructuredModel
from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations.base import (FailureSink, has_evidence, obj,
                                              structured_call, text)
from crsec_concordia.operations.names import DETECT_CONFLICT

OP = DETECT_CONFLICT
BREAKS, FOLLOWS, UNRELATED = "breaks", "follows", "unrelated"
# The answer schema of one person's verdict.
VERDICT_SCHEMA = {"type": "string", "enum": [BREAKS, FOLLOWS, UNRELATED]}
TOKENS_PER_ITEM = 60


@dataclasses.dataclass(frozen=True)
class Observed:
  """One behaviour an agent saw, with the rule it is most about and, for
  a behaviour told in several sentences, the one nearest that rule (see
  detect_conflict_relevance.py)."""
  actor: str
  behaviour: str
  place: str
  norm: PersonalNorm
  focus: str = ""


@dataclasses.dataclass(frozen=True)
class Judgement:
  """The verdict on one behaviour: a breach only with words quoted."""
  observed: Observed
  breaks: bool
  evidence: str


def item_keys(items: Sequence[Observed]) -> list[str]:
  """The answer's keys: each person's name (numbered if one appears twice)."""
  keys: list[str] = []
  for item in items:
    key, n = item.actor, 2
    while key in keys:
      key, n = f"{item.actor} ({n})", n + 1
    keys.append(key)
  return keys


def schema(items: Sequence[Observed]) -> dict:
  entry = obj({"evidence": text(200), "verdict": VERDICT_SCHEMA})
  return obj({key: entry for key in item_keys(items)})


def prompt(observer: str | None, items: Sequence[Observed]) -> str:
  """What was seen first, the questions after it (unlike the other
  operations: asked first, the questions made a small model judge plain
  breaches as kept). With no observer, nothing of who asks is said: the
  questions are shared by everyone who holds their rules."""
  opening = ("Some people hold rules about how people should behave. Each "
             "thing a person did is shown with the rule it is most about."
             if observer is None else
             f"{observer} holds some rules about how people should behave. "
             "Each thing another person did is shown with the rule it is "
             "most about.")
  lines = [opening, ""]
  for key, item in zip(item_keys(items), items):
    lines.append(f"{key} ({item.place}): \"{item.behaviour}\"")
    if item.focus and item.focus != item.behaviour:
      lines.append(f"The part of it nearest the rule: \"{item.focus}\"")
    lines.append(f"Rule: {item.norm.content}")
    lines.append("")
  lines.append(
      "For each person, in order:\n"
      "evidence: quote the words of what that person did that the rule is "
      "about, or \"none\" if the rule is about something they did not do.\n"
      f"verdict: {BREAKS} if those words go against the rule, {FOLLOWS} if "
      f"they keep it, {UNRELATED} if evidence is none.")
  return "\n".join(lines)


def detect_conflicts(model: StructuredModel, *, observer: str | None,
                     items: Sequence[Observed],
                     on_failure: FailureSink | None) -> list[Judgement] | None:
  """A judgement per item (in order), or None if the model failed; with
  `observer` None, the questions are asked of no one in particular."""
  if not items:
    return []
  answer = structured_call(
      model, OP, prompt(observer, items), schema(items),
      on_failure=on_failure,
      max_tokens=TOKENS_PER_ITEM * len(items) + 16, temperature=0.0)
  if answer is None:
    return None
  judgements = []
  for key, item in zip(item_keys(items), items):
    evidence = " ".join(answer[key]["evidence"].split())
    judgements.append(Judgement(
        item, answer[key]["verdict"] == BREAKS and has_evidence(evidence),
        evidence))
  return judgements


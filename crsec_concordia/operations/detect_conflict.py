"""DetectConflict: do the behaviours an agent saw break its qualified norms?

The sender side of spreading. The paper asks the model, for every observed
behaviour, to find among all the agent's norms one the behaviour breaks. A
1.5B model cannot do both at once: shown five numbered rules it named rule 1
whatever happened, and its true/false then said "false" to a plain breach.
So the work is split. The caller picks, for each behaviour, the rule it is
most about (ConflictDetector ranks the norms by embedding similarity, i.e.
retrieval, and sends nothing for a behaviour unrelated to every rule); the
model judges each behaviour against that one rule, first by quoting the
words of the behaviour the rule is about (or "none") and then as breaks /
follows / unrelated; a breach with no words quoted is no breach. (Asked for
a one-sentence reason instead of the quote, the 1.5B model restated the
behaviour and said "breaks" for 9 of 22 harmless actions in live runs; with
the quote, 6 of 22, and 24 of 24 breaches found.)

Every agent now sees every other agent act in every slot, so the behaviours
of one slot are judged in ONE call per observer: the schema has one entry
per person seen, so the model cannot skip or merge anyone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations.base import (FailureSink, has_evidence, obj,
                                              structured_call, text)

OP = "DetectConflict"
# Tried and dropped (2026-11-26): a verdict saying what the quoted words do
# ("does what the rule forbids" / "does not do what the rule asks" / "keeps
# the rule" / unrelated) instead of breaks / follows, since most misses are
# a breach quoted and then judged kept. On the probes (bench/
# judgement_probe.py --only conflicts) it fell from 35 to 24 of 52: the
# model chose a breach for harmless deeds ("reads his textbook" against
# "Tip after meals.", "hangs the trowel back in the shed") and quoted
# "none" for plain ones. Also tried and dropped (2026-11-26): the deed the
# rule names found in code (the rule without its plain negators, "No
# smoking indoors." -> "smoking indoors"), the model asked only whether the
# quoted words show the person doing it, and the breach decided in code
# from the rule's polarity: 25 of 52 (garden 9/17, café 8/17, mini 8/18):
# "waters his tomatoes" did what "Do not pick from other gardeners' plots"
# names, and so, the model said, did "reads new lines aloud in a booming
# voice" what "Be quiet in public places" names.
# Also tried (2026-11-26, offline, not built): the referee's doer question
# (game_masters/doer_check.py) put to the rule, "In this action, who goes
# against this rule?", answered with a name: on the 52 probe cases it named
# the actor for 24 of 25 that break nothing ("reads his textbook" against
# "Tip after meals.") and for 23 of 27 breaches, so it cannot filter the
# verdicts either: the small model names whoever the action is about.
# Also tried and dropped (2026-11-27): a field before the quote, "against:
# in a few words, what a person does who goes against the rule", and the
# verdict "breaks if those words show the person doing that". On the probes
# of the three venues and the held-out library (judgement_probe.py --all
# --heldout --only conflicts) it fell from 42 to 30 of 64 (garden 11 -> 8
# of 17, café 9 -> 9, mini café 15 -> 9 of 18, library 7 -> 4 of 12): 28
# breaches missed instead of 18, 6 harmless deeds called breaches instead
# of 4. With the prompt below the library's 5 misses are plain breaches, 4
# of them quoted and then judged kept ("unwraps a cheese sandwich at her
# desk and eats it" against "Do not eat at the reading-room desks").
# What limits it is the verdict, not the reading. Over those 64 cases the
# 1.5B model quoted words for 57 items and then said "follows" for 37 of
# them, plain breaches among them. Tried offline (2026-11-27, not built):
# each deed followed by the behaviour a game master would name for it ("...
# (That is: Owen Price takes or makes a phone call inside the reading
# room.)"): 45 of 64, and still no breach of "No smoking indoors." in
# "rolls a cigarette and smokes it at his table (That is: Wolfgang Schulz
# smokes or lights a cigarette inside the café.)". A model that can judge a
# breach is needed for this operation; the embedded one detects too few.
BREAKS, FOLLOWS, UNRELATED = "breaks", "follows", "unrelated"
VERDICT = {"type": "string", "enum": [BREAKS, FOLLOWS, UNRELATED]}
TOKENS_PER_ITEM = 60


@dataclasses.dataclass(frozen=True)
class Observed:
  """One behaviour an agent saw, with the rule it is most about and, for
  a behaviour told in several sentences, the one nearest that rule (see
  crsec_concordia/relevance.py)."""
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
  entry = obj({"evidence": text(200), "verdict": VERDICT})
  return obj({key: entry for key in item_keys(items)})


def prompt(observer: str, items: Sequence[Observed]) -> str:
  """What was seen first, the questions after it.

  Unlike the other operations, not the questions first: tried so (a
  server's prompt cache would reuse them), the 1.5B model judged plain
  breaches as kept ("lights one cigarette after another right there at
  the table" against "No smoking indoors."): 8 of the mini café's 14
  labelled cases right, 11 of 14 in this order (bench/judgement_probe.py).
  """
  lines = [f"{observer} holds some rules about how people should behave. "
           "Each thing another person did is shown with the rule it is most "
           "about.", ""]
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


def detect_conflicts(model, *, observer: str, items: Sequence[Observed],
                     on_failure: FailureSink | None
                     ) -> list[Judgement] | None:
  """A judgement per item (in order), or None if the model failed."""
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


def detect_conflict(model, *, actor: str, behaviour: str, place: str,
                    norm: PersonalNorm, observer: str = "This person",
                    focus: str = "", on_failure: FailureSink | None
                    ) -> tuple[bool, str] | None:
  """One behaviour against one rule: (breaks?, the words quoted) or None."""
  judgements = detect_conflicts(
      model, observer=observer,
      items=[Observed(actor, behaviour, place, norm, focus)],
      on_failure=on_failure)
  if judgements is None:
    return None
  return judgements[0].breaks, judgements[0].evidence

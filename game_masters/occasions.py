"""Occasions: moments the setting puts to an agent (the bill arrives).

Left to themselves, agents in a three-hour morning never pay: across a dozen
runs of the mini café on the 1.5B model not one action involved a bill, so
the tipping norm had nothing to be about. In the paper's Smallville the
daily plan walks agents to the counter; a text-only café needs its game
master to do what a waiter does. An occasion is such a moment, written in
the scenario file: from a time of day, each agent's next slot opens with a
situation ("The server brings Tom Gomez the bill for his breakfast."), and
the agent still decides what to do about it; the referee then adjudicates
the answer like any other action.

Who meets an occasion when is a function of the scenario, the seed and the
step alone (replayed from the start of the day), so a resumed run gives the
same occasions at the same steps as an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from crsec_concordia import observations

ACTOR_FIELD = "{actor}"


@dataclasses.dataclass(frozen=True)
class Occasion:
  """One scheduled situation.

  Attributes:
    id: its name in event records (`occasion`).
    at: "HH:MM"; from this time of each day the agents meet it, each in
      the first slot since.
    situation: one or two sentences; `{actor}` is replaced by the agent's
      full name.
    question: what the agent is asked instead of "What does X do next?"
      (empty: that). Asked "What does Tom Gomez do about the bill?" the
      1.5B model answered about the bill 8 times in 12; asked what Tom
      does next, with the bill in the sentence before, 2 times in 12.
    behaviours: the behaviour ids the referee asks about in a second,
      focused call on the agent's answer (see referee.py).
    agents: who meets it (empty: everyone).
  """
  id: str
  at: str
  situation: str
  question: str = ""
  behaviours: tuple[str, ...] = ()
  agents: tuple[str, ...] = ()

  @classmethod
  def from_dict(cls, data: Mapping[str, Any]) -> "Occasion":
    return cls(id=str(data["id"]), at=str(data["at"]),
               situation=str(data["situation"]),
               question=str(data.get("question") or ""),
               behaviours=tuple(data.get("behaviours") or ()),
               agents=tuple(data.get("agents") or ()))

  def concerns(self, actor: str) -> bool:
    return not self.agents or actor in self.agents

  def text_for(self, actor: str) -> str:
    """The situation as the agent and the referee read it."""
    return self.situation.replace(ACTOR_FIELD, actor)

  def question_for(self, actor: str) -> str:
    """The occasion's own question, or "" for the usual one."""
    return self.question.replace(ACTOR_FIELD, actor)


def occasion_at(occasions: Sequence[Occasion], *, actor: str, step: int,
                stamp_for: Callable[[int], observations.Stamp]
                ) -> Occasion | None:
  """The occasion `actor` meets at `step` (a slot), if any.

  Every agent acts in every slot, so each meets an occasion at the first
  slot at or after its time. Replays the day up to `step`: at each slot the
  agent meets the first occasion that is due and not yet met today; one
  occasion per slot, so two due at once are met in two slots.
  """
  day, first = stamp_for(step).day, step
  while first > 1 and stamp_for(first - 1).day == day:
    first -= 1
  met: set[str] = set()
  for t in range(first, step + 1):
    clock = stamp_for(t).clock
    due = next((o for o in occasions
                if o.at <= clock and o.concerns(actor) and o.id not in met),
               None)
    if due is not None:
      met.add(due.id)
      if t == step:
        return due
  return None


def parse(items: Iterable[Mapping[str, Any]]) -> list[Occasion]:
  """Occasions from a scenario's plain data, in file order."""
  return [Occasion.from_dict(item) for item in items]

"""Why a plan-driven agent asks the model for an action in a slot.

CRSEC, like Generative Agents, acts from a decomposed plan: an agent goes on
with its current task and asks the model only when something new happens
(a fresh action every slot cost most of a run's calls and gave a small
model's worst artefacts: docs/trials/acting-and-planning.md). The reasons,
in the order they are recorded:

  - `task begins`: the plan's current task is not the one the agent last
    acted on (the first slot of a day included);
  - `occasion`: the game master put an occasion to the agent (the action
    spec's tag says so);
  - `conversation ended`: a conversation the agent took part in ended since
    it last acted;
  - what its components found new in this slot's observations (a conflict
    noticed, a norm identified or qualified, the plan revised: `pop_news()`
    of any component that has it);
  - `previous action failed`: the agent's last turn produced no action of
    its own.

With none of them, the action is the agent's current action going on,
recorded as such, with no model call (`observations.continuing`).

An occasion put to the agent in the slot its new task begins wants two new
actions: the answer to the occasion now, and the task's first action after
it (asked for the task in the next slot, a small model writes its answer to
the occasion again). So that one call writes both, in order; the second is
the agent's action in the next slot if nothing else new has happened by
then (`WRITTEN_AHEAD`, no call), and is dropped otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crsec_concordia import observations

TASK_BEGINS = "task begins"
OCCASION = "occasion"
CONVERSATION_ENDED = "conversation ended"
PREVIOUS_FAILED = "previous action failed"
OCCASION_TAG = observations.OCCASION_TAG
CONTINUED = "continued"
# Recorded after the reasons of a call whose answer was the action the agent
# was already doing: asked because of news, it chose to go on.
WENT_ON = "went on"
# Recorded after the reasons of a call whose answer repeated the agent's own
# last action or copied another's, so that the model was asked once more:
# the act's second call, counted apart from the reasons.
ASKED_AGAIN = "asked once more"
# Recorded, alone, for an action written the slot before with the answer to
# an occasion (see above): a new action, adjudicated, made with no call.
WRITTEN_AHEAD = "written ahead"
# The reasons that want a new action (a repeat of the last one is asked
# again); with only news or a talk that ended, going on is an answer.
NEED_NEW = ("task begins", "occasion", "previous action failed")
# What an AgentJournal (or a planner without one) reports as news, in the
# order reasons are recorded (a norm taught and a notice come from outside,
# through the agent's port: components/port.py).
NEWS_ORDER = ("a notice", "a norm taught", "a conflict noticed",
              "a norm identified", "a norm qualified", "the plan revised")


@dataclasses.dataclass
class FollowState:
  """What a plan-driven act remembers between slots (checkpointed)."""
  task: tuple | None = None       # (day, start, activity) last acted on
  action: str | None = None       # the action it goes on with
  failed: bool = False            # the last turn produced no action
  reasons: tuple[str, ...] = ()   # why it acted last (CONTINUED: it did not)
  # (task key, action): the task's first action, written with an occasion's
  # answer, for the next slot.
  ahead: tuple[tuple, str] | None = None

  def to_json(self) -> dict[str, Any]:
    return {"task": list(self.task) if self.task else None,
            "action": self.action, "failed": self.failed,
            "reasons": list(self.reasons),
            "ahead": ([list(self.ahead[0]), self.ahead[1]] if self.ahead
                      else None)}

  @classmethod
  def from_json(cls, data: Mapping[str, Any] | None) -> "FollowState":
    data = dict(data or {})
    task, ahead = data.get("task"), data.get("ahead")
    return cls(task=tuple(task) if task else None, action=data.get("action"),
               failed=bool(data.get("failed", False)),
               reasons=tuple(data.get("reasons", ())),
               ahead=(tuple(ahead[0]), str(ahead[1])) if ahead else None)


def task_key(task: Mapping[str, Any] | None) -> tuple | None:
  if not task:
    return None
  return (task.get("day"), task["start"], task["activity"])


def reasons_to_act(state: FollowState, *, task: Mapping[str, Any] | None,
                   occasion: bool, talked: bool, news: Iterable[str]
                   ) -> list[str]:
  """Every reason to ask the model this slot, in a fixed order."""
  reasons = []
  if state.action is None or task is None or task_key(task) != state.task:
    reasons.append(TASK_BEGINS)
  if occasion:
    reasons.append(OCCASION)
  if talked:
    reasons.append(CONVERSATION_ENDED)
  # In a fixed order, whichever component's thread recorded first.
  reasons.extend(sorted(set(news), key=lambda n: (
      NEWS_ORDER.index(n) if n in NEWS_ORDER else len(NEWS_ORDER), n)))
  if state.failed:
    reasons.append(PREVIOUS_FAILED)
  return reasons


def writes_ahead(reasons: Iterable[str]) -> bool:
  """Whether this slot's call also writes the next slot's action: an
  occasion in the slot the agent's new task begins."""
  reasons = set(reasons)
  return TASK_BEGINS in reasons and OCCASION in reasons


def ahead_now(state: FollowState, reasons: Sequence[str],
              task: Mapping[str, Any] | None) -> str | None:
  """The action written ahead for this slot, if it still holds: the task
  it was written for begins now and nothing else is new."""
  if state.ahead is None or list(reasons) != [TASK_BEGINS]:
    return None
  key, action = state.ahead
  return action if key == task_key(task) else None


def why_now(name: str, reasons: Iterable[str], task: Mapping[str, Any] | None,
            partners: Iterable[str]) -> str:
  """The lines of the act prompt that say what is new, after the events.

  Plain statements of fact about the agent, no instruction: a small model
  recites an instruction line as its action.
  """
  partners = list(dict.fromkeys(partners))
  told = {
      CONVERSATION_ENDED: (f"{name} has just finished talking with "
                           f"{' and '.join(partners)}." if partners else ""),
      "a conflict noticed": (f"{name} has just seen someone go against one "
                             f"of {name}'s norms."),
      "a norm identified": f"{name} has just come across a new norm.",
      "a norm qualified": f"{name} now holds a new norm.",
      "the plan revised": f"{name} has just changed the plan for the day.",
  }
  lines = []
  if task and task.get("activity"):
    where = f", at {task['place']}" if task.get("place") else ""
    lines.append(f"{name}'s task now ({task['start']}-{task['end']}{where}): "
                 f"{task['activity']}.")
  lines.extend(dict.fromkeys(t for r in reasons if (t := told.get(r))))
  return "\n".join(lines)

"""An agent's action as the game master reads it and as observers read it.

Text only, no model: the engine's tag and the "Name:" prefix stripped from
what an agent wrote, and the choice between the agent's own words and the
referee's narration for what the others are told. Shared by the
Adjudication component (adjudication.py) and the referee, which spares its
call only for an action that tells of its actor (referee/tag_gate.py).
"""

from __future__ import annotations

import re

from concordia.components.game_master import event_resolution as resolution_lib

from crsec_concordia.name_patterns import pattern_of

MAX_ACTION_CHARS = 600


def clean_action(putative_event: str, actor: str | None) -> str:
  """The agent's attempt without the engine's tag and a "Name:" prefix.

  Also without the head of an event line as observers read it ("Name
  (indoors): "), when the agent wrote its action in that form (a small
  model copies the form from its recent events): observers would read the
  name and a place twice, the place the agent's guess rather than the
  referee's. How often: docs/trials/game-master.md.
  """
  text = putative_event.strip()
  if text.startswith(resolution_lib.PUTATIVE_EVENT_TAG):
    text = text[len(resolution_lib.PUTATIVE_EVENT_TAG):].strip()
  if actor:
    text = pattern_of(rf"^{re.escape(actor)}(?: \([^()\n]*\))?:\s*").sub(
        "", text)
  text = re.sub(r"\s+", " ", text)
  return text[:MAX_ACTION_CHARS]


def observed_text(actor: str, action: str, narration: str) -> str:
  """What the others see: the agent's own words when they already tell it.

  An action written in the third person about the actor ("Carlos lights a
  cigarette") is delivered as the agent wrote it, so observers judge exactly
  what was done; a small model's retelling can drift ("declines to tip"
  became "leaves a tip" in a trial). Anything else (first person, bare
  speech) is delivered as the game master's narration.
  """
  if tells_of_actor(actor, action):
    return action
  return narration or action


def tells_of_actor(actor: str, action: str) -> bool:
  """Whether the action opens with the actor's name (delivered as written)."""
  first = actor.split()[0]
  return bool(pattern_of(
      rf"(?:{re.escape(actor)}|{re.escape(first)})\b").match(action))

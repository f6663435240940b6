"""What an act's answer may not copy: the actions and lines in its view.

A small model writes other agents' latest actions as its own, and the other
side's lines of a talk as its next action; counted, a copy would put one
agent's deed on another's record. StructuredAct asks once more for an answer
that copies what is in view (or repeats the agent's own last action), so
this module says what is in view and what counts as a copy: six words in a
row or most of the words, names and the agent's own given words aside
(crsec_concordia/repetition.py).
Short answers ("Tom reads a book.") never do. Not a component.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crsec_concordia import observations, repetition
from crsec_concordia.components._events import parse_events

# What makes an action a copy of another agent's (words, names removed).
COPY_RATIO, COPY_RUN, COPY_MIN_WORDS = 0.6, 6, 5
_OBSERVATION_TAG = re.compile(r"^\[observation\]\s*", re.M)

# (who, "did" or "said", what).
Seen = tuple[str, str, str]


def _texts(contexts: Mapping[str, str], components: Mapping[str, Any]
           ) -> list[str]:
  """The contexts as delivered: a component that shows its events in brief
  (RecentEvents) is read from its raw text (the brief form is for the
  model, not for parsing)."""
  return [raw() if callable(raw := getattr(components.get(key), "raw_text",
                                           None)) else context
          for key, context in contexts.items()]


def in_view(name: str, going_on: str | None, contexts: Mapping[str, str],
            components: Mapping[str, Any]) -> tuple[list[Seen], list[Seen]]:
  """Every action or spoken line in the act's view: other agents' first,
  the agent's own actions second (`going_on` among them: the recent
  events name it rather than retell it)."""
  others: list[Seen] = []
  own: list[Seen] = []
  if going_on:
    own.append((name, "did", going_on))
  for context in _texts(contexts, components):
    for event in parse_events(_OBSERVATION_TAG.sub("", context)):
      if isinstance(event, observations.ActionObservation):
        (own if event.actor == name else others).append(
            (event.actor, "did", event.text))
      elif isinstance(event, observations.ConversationObservation):
        others.extend((speaker, "said", words)
                      for speaker, words in event.turns if speaker != name)
  return others, own


def given(contexts: Mapping[str, str], components: Mapping[str, Any],
          *more: str) -> str:
  """The words the act's prompt gives the agent as its own: every context
  with no action or line of talk in it (persona, norms, plan and task), and
  `more` (the call to act, which says where the agent is, and the news)."""
  own = [t for t in _texts(contexts, components)
         if not parse_events(_OBSERVATION_TAG.sub("", t))]
  return "\n".join([*own, *more])


def copied(name: str, answer: str, seen: Sequence[Seen],
           own: str = "") -> Seen | None:
  """The entry of `seen` that `answer`, written by `name`, copies, or None;
  stretches of `own` (`given`) are the agent's words, not a copy."""
  names: Iterable[str] = {name, *(who for who, _, _ in seen)}
  done = repetition.copied_from(
      answer, (text for _, _, text in seen), names=names, ratio=COPY_RATIO,
      run=COPY_RUN, min_words=COPY_MIN_WORDS, given=own)
  return next((s for s in seen if s[2] == done), None)

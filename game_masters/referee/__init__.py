"""The referee: an agent's action judged into an event's behaviours.

The metrics need to know which of the scenario's behaviours each action
shows, decided once, by the game master, in a structured record; a small
model must do it fast. The entry point is `Referee` (pipeline.py):
`adjudicate(actor, action, situation, checked)` gives an action's event
fields and a failure record if a call failed, and `check(occasion, actor,
action)` the focused check of an answer to an occasion. The Adjudication
component (game_masters/adjudication.py) calls both for every new action of
a slot, at once. Each action goes through, in order, one module a step:

  general_call.py    one call: narration, place, the behaviour ids the
                     action shows and a quote of its words, checked in
                     code (asked once more, saying why, if it is not).
  tag_gate.py        the gates: before the call, an action far from every
                     behaviour is not asked; after it, each tag must be
                     near the action for the sentence embedder, with and
                     without the place words.
  doer_check.py      each tag kept: "who does it?" must name the actor.
  second_look.py     where no tag counts: the nearest behaviours asked
                     about once more; the embedder's nearest, the quote,
                     the reverse order and the doer check verify.
  occasion_check.py  an answer to an occasion that names behaviours: a
                     focused call the embedder verifies; it decides among
                     the occasion's behaviours (`decide`).

With the referee's `batched` setting (off by default), the new actions of
one place in a slot go through the same steps together
(`Referee.adjudicate_place`): batch.py asks the general call and the
second look of a batch in one call each (batch_prompts.py), place_slot.py
groups a slot's actions by place for the Adjudication component.

Why each step is as it is, with the figures: docs/trials/referee.md.
"""

from crsec_concordia.game_masters.referee._shared import (Similarity,
                                                          similarity_of)
from crsec_concordia.game_masters.referee.occasion_check import decide
from crsec_concordia.game_masters.referee.pipeline import (
    ADJUDICATE_TAG,
    FAILED_EVIDENCE,
    NO_ACTION_EVIDENCE,
    Referee,
)

__all__ = [
    "ADJUDICATE_TAG", "FAILED_EVIDENCE", "NO_ACTION_EVIDENCE", "Referee",
    "Similarity", "decide", "similarity_of",
]

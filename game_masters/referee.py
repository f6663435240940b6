"""The referee: one action judged into an event's fields (not a component).

Kept apart from the Adjudication component (adjudication.py), which puts
every new action of a slot to it at once, keeps the records in order and
tells observers: this is what one action is asked and checked for. The
general call (referee_question.py) narrates the action, says where it
happens and which behaviour ids it shows, with a quote of the action's
words, checked in code (asked once more, saying why, if it is not). Each
tag must then be near the action for the sentence embedder (tag_gate.py)
and be the actor's own deed (doer_check.py); an action far from every
behaviour is not asked at all (tag_gate.py); an answer to an occasion that
names behaviours also gets a focused check (occasion_check.py). Where no
tag of the general call counts, the nearest behaviours get a second look
(second_look.py): the model proposes, the embedder and the doer check
verify.

A failed call is visible, never silent: a `failure` record, and the action
recorded with no behaviours and evidence saying adjudication failed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia import observations
from crsec_concordia.game_masters import doer_check
from crsec_concordia.game_masters import occasion_check as check_lib
from crsec_concordia.game_masters import occasions as occasions_lib
from crsec_concordia.game_masters import second_look as look_lib
from crsec_concordia.game_masters import tag_gate
from crsec_concordia.game_masters.action_text import tells_of_actor
from crsec_concordia.game_masters.referee_question import (
    PLACES, _none_token, adjudication_prompt, adjudication_schema,
    behaviours_of, supported)
from crsec_concordia.models.base import EndpointError, StructuredOutputError

ADJUDICATE_TAG = "GM.adjudicate"
FAILED_EVIDENCE = "adjudication failed: {error}"
NO_ACTION_EVIDENCE = "no action: the agent produced none of its own"


def _failure(error: Exception) -> dict[str, Any]:
  """The failure record of an adjudication call."""
  return {"op": ADJUDICATE_TAG, "error": str(error),
          "raw": getattr(error, "raw", "")}


class Referee:
  """Judges one action at a time; safe to call from many threads (it keeps
  nothing between actions)."""

  def __init__(self, model, *, place: str,
               behaviours: Sequence[Mapping[str, str]], max_tokens: int = 160,
               similarity: check_lib.Similarity | None = None,
               default_place: str | None = None, doer: bool = True):
    """See Adjudication (adjudication.py) for the arguments."""
    if default_place not in (None, *PLACES):
      raise ValueError(f"default_place must be one of {PLACES} or None")
    self._default_place = default_place
    self._model = model
    self._place = place
    self._place_words = tag_gate.place_words(place)
    self._behaviours = [{"id": str(b["id"]),
                         "description": str(b["description"])}
                        for b in behaviours]
    self._ids = [b["id"] for b in self._behaviours]
    self._descriptions = {b["id"]: b["description"] for b in self._behaviours}
    self._schema = adjudication_schema(self._ids)
    self._max_tokens = max_tokens
    self._similarity = similarity
    # The doer check's calls are counted apart from the referee's own.
    self._doer_model = (model.tagged(doer_check.TAG) if doer
                        and hasattr(model, "tagged") else
                        model if doer else None)
    self._look_model = (model.tagged(look_lib.TAG) if hasattr(model, "tagged")
                        else model)

  def adjudicate(self, actor: str, action: str, situation: str = "",
                 checked: Sequence[str] = ()
                 ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The event fields for an action, and a failure record if the call
    failed. `checked`: the behaviours an occasion's focused check decides
    for this action (occasion_check.py)."""
    if observations.is_no_action(action):
      # The agent's act produced nothing of its own; nothing to adjudicate.
      return ({"narration": action, "place": self.unsaid_place(),
               "behaviours": [], "evidence": NO_ACTION_EVIDENCE,
               "adjudicated": False}, None)
    near = self._nearest(actor, action, situation, checked)
    if near is not None and near[1] < tag_gate.MIN_TAG_SIMILARITY:
      # No tag could pass the gate (tag_gate.py): the referee is not asked.
      return ({"narration": action, "place": self.unsaid_place(),
               "behaviours": [], "evidence": "none", "adjudicated": True,
               "referee_asked": False, "nearest_behaviour": list(near)}, None)
    prompt = adjudication_prompt(place=self._place, behaviours=self._behaviours,
                                 actor=actor, action=action,
                                 situation=situation,
                                 default_place=self._default_place)
    try:
      answer = self._ask(prompt)
    except (StructuredOutputError, EndpointError) as e:
      # An endpoint that stays down past its retries fails this action's
      # adjudication, not the run.
      return ({"narration": action, "place": self.unsaid_place(),
               "behaviours": [], "evidence": FAILED_EVIDENCE.format(error=e),
               "adjudicated": False}, _failure(e))
    failure = None
    if not self._supported(answer, actor, action):
      # A behaviour named with evidence that is not the action's words (the
      # 1.5B model wrote the id, "smoking_indoors", as the quote of a man
      # chain-smoking at his table, and of one reading on his phone): an
      # invalid answer, asked for once more, saying why.
      none = _none_token(self._ids)
      retry = (f"{prompt}\nYour evidence \"{str(answer['evidence']).strip()}\" "
               f"is not words of {actor}'s action. Answer again: the evidence "
               f"copies words of the action, or is \"none\" if you choose "
               f"{none}.")
      try:
        answer = self._ask(retry)
      except (StructuredOutputError, EndpointError) as e:
        failure = _failure(e)  # The first answer stands, its claim apart.
    ids = behaviours_of(answer, self._ids)
    evidence = str(answer["evidence"]).strip()
    narration = " ".join(str(answer["narration"]).split()) or action
    fields = {"narration": narration, "place": answer["place"],
              "behaviours": ids, "evidence": evidence, "adjudicated": True}
    if not self._supported(answer, actor, action):
      # Still no words of the action showing it (or "none" beside a
      # behaviour: "prepares food boxes" tagged as a tip). The claim is
      # kept, visibly, apart.
      fields["behaviours"] = []
      fields["unsupported"] = ids
    elif ids and self._similarity is not None:
      checked_tags, doer_failure = self._checked_tags(actor, action, ids)
      fields.update(checked_tags)
      # A failed retry leaves no tag to check: at most one of the two.
      failure = failure or doer_failure
    if not fields["behaviours"]:
      failure = self._look(fields, actor, action, checked) or failure
    return fields, failure

  def _look(self, fields: dict[str, Any], actor: str, action: str,
            checked: Sequence[str]) -> dict[str, Any] | None:
    """The second look (second_look.py) at an action no tag of the general
    call counts for: its record in `fields`, its tag counted if accepted;
    the failure record of its calls, or None. An occasion's checked
    behaviours are its focused check's to decide."""
    if self._similarity is None:
      return None
    rest = {i: d for i, d in self._descriptions.items() if i not in checked}
    look, failure = look_lib.second_look(
        self._look_model, self._doer_model, place=self._place, actor=actor,
        action=action, descriptions=rest, similarity=self._similarity,
        words=self._place_words)
    if look is not None:
      fields["second_look"] = look
      if look["accepted"]:
        fields["behaviours"] = [look["behaviour"]]
        fields["evidence"] = look["evidence"]
    return failure

  def _checked_tags(self, actor: str, action: str, ids: list[str]
                    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The fields of a true quote's tags once checked: the embedder's gate
    (tag_gate.py: a reading the words do not support at all), then the
    doer check of each tag left (doer_check.py: the actor must be the one
    who does it). A tag dropped by either is kept apart, visibly."""
    scores = tag_gate.tag_similarities(action, ids, self._descriptions,
                                       self._similarity)
    deed = tag_gate.deed_similarities(action, ids, self._descriptions,
                                      self._similarity, self._place_words)
    kept, far = tag_gate.split_tags(scores, deed_scores=deed)
    fields: dict[str, Any] = {
        "behaviours": kept, "tag_similarity": scores,
        "tag_deed_similarity": deed, "tag_floor": tag_gate.MIN_TAG_SIMILARITY}
    if far:
      fields["far_from_action"] = far
    failure = None
    if kept and self._doer_model is not None:
      doers, failure = doer_check.check_doers(
          self._doer_model, actor, action, kept, self._descriptions)
      fields["tag_doers"] = doers
      fields["behaviours"] = [i for i in kept if i in doers
                              and doer_check.names_actor(doers[i], actor)]
      others = [i for i in kept if i not in fields["behaviours"]]
      if others:
        fields["not_by_actor"] = others
    return fields, failure

  def _nearest(self, actor: str, action: str, situation: str,
               checked: Sequence[str]) -> tuple[str, float] | None:
    """The behaviour nearest an action the referee may be spared, or None
    (ask). Only an action that tells of its actor; in answer to an
    occasion, only if a focused check decides the occasion's behaviours,
    the others then weighed (the general call never once named a tip on
    a bill: occasion_check.py)."""
    if (self._similarity is None or (situation and not checked)
        or not tells_of_actor(actor, action)):
      return None
    rest = {i: d for i, d in self._descriptions.items() if i not in checked}
    return tag_gate.nearest_behaviour(action, rest, self._similarity,
                                      self._place_words) or ("", 0.0)

  def _ask(self, prompt: str) -> Mapping[str, Any]:
    return self._model.sample_json(prompt, self._schema,
                                   max_tokens=self._max_tokens,
                                   temperature=0.0)

  def _supported(self, answer: Mapping[str, Any], actor: str,
                 action: str) -> bool:
    return supported(answer, self._ids, actor, action)

  def unsaid_place(self) -> str:
    """The place of an action that was not adjudicated."""
    return self._default_place or "indoors"

  def check(self, occasion: occasions_lib.Occasion, actor: str, action: str
             ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The focused second look at an answer to an occasion (occasion_check.py)."""
    if self._similarity is None:
      raise RuntimeError(f"occasion {occasion.id!r} names behaviours to check "
                         "but the adjudication has no embedder")
    wanted = [b for b in self._behaviours if b["id"] in occasion.behaviours]
    return check_lib.check_occasion(
        self._model, place=self._place, situation=occasion.text_for(actor),
        actor=actor, action=action, behaviours=wanted,
        similarity=self._similarity)

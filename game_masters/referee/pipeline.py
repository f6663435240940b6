"""The Referee: one action through the referee's pipeline, step by step.

Kept apart from the Adjudication component (game_masters/adjudication.py),
which puts every new action of a slot to it at once, keeps the records in
order and tells observers: this is what one action is asked and checked
for, in the order the package's docstring gives. It keeps nothing between
actions, so many threads may call it at once. A failed call is visible,
never silent: a `failure` record, and the action recorded with no
behaviours and evidence saying adjudication failed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from crsec_concordia import gate_tally, observations
from crsec_concordia.calibration import run_policy
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.embedding.records import SimilarityThresholds
from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.game_masters import occasions as occasions_lib
from crsec_concordia.game_masters.action_text import tells_of_actor
from crsec_concordia.game_masters.referee import batch as batch_lib
from crsec_concordia.game_masters.referee import doer_check
from crsec_concordia.game_masters.referee import general_call
from crsec_concordia.game_masters.referee import occasion_check
from crsec_concordia.game_masters.referee import second_look as look_lib
from crsec_concordia.game_masters.referee import tag_gate
from crsec_concordia.game_masters.referee._shared import (Similarity,
                                                          combined,
                                                          failure_record)
from crsec_concordia.models.base import EndpointError, StructuredOutputError
from crsec_concordia.scenarios import Behaviour, TargetNorm

ADJUDICATE_TAG = general_call.TAG
FAILED_EVIDENCE = "adjudication failed: {error}"
NO_ACTION_EVIDENCE = "no action: the agent produced none of its own"


class Referee:
  """Judges one action at a time; safe to call from many threads (it keeps
  nothing between actions)."""

  def __init__(self, model, *, place: str,
               behaviours: Sequence[Behaviour], max_tokens: int = 160,
               similarity: Similarity | None = None,
               default_place: str | None = None, doer: bool = True,
               policy: RefereePolicy | None = None,
               target_norms: Sequence[TargetNorm] = (),
               places: Sequence[Mapping[str, str]] | None = None,
               where: Callable[[str], str] | None = None,
               listed: Callable[[str, str], Sequence[str]] | None = None,
               log: Callable[[Mapping[str, Any]], None] | None = None,
               floors: SimilarityThresholds | None = None,
               batched: bool = False):
    """See Adjudication (game_masters/adjudication.py) for the arguments;
    `policy`: which structures apply (by default all of them;
    crsec_concordia/calibration/policy.py), `doer=False` leaving out the
    doer check whatever it says; `behaviours` and `target_norms`: the
    scenario's (its `complies` and `violates`: the two sides of a deed, for a policy whose nearest rule
    lets the other side through (second_look.other_sides); `places`: the
    scenario's declared places (id, description), the place field's
    choices (None: indoors or outdoors); `where`: the place an actor is
    at, told with its action; `listed`: the ids of the places the prompt
    lists for an actor's action (by default all: a town's are the few near
    the actor and those its action names, game_masters/places.py); `log`:
    where each skip of a gate is shown (gate_tally.py: the adjudication's
    logging channel), its counts kept in `gates`; `floors`: the embedder's
    record of thresholds (embedder_thresholds.py; None: MiniLM's, the
    default embedder's). The two make the referee's settings
    (run_policy.settings: the nearest rule's tie among them), the same a
    probe run of the venue builds; `batched`: a place's slot judged in
    one call (`adjudicate_place`, batch.py)."""
    self.gates = gate_tally.GateTally()
    self._log = log
    self.settings = run_policy.settings(
        policy, MINILM_THRESHOLDS if floors is None else floors, batched)
    self._floors = self.settings.floors
    self._places = (None if places is None else
                    [{"id": str(p["id"]), "description": str(p["description"])}
                     for p in places])
    self._where = where
    self._listed = listed
    place_ids = (general_call.PLACES if self._places is None
                 else tuple(p["id"] for p in self._places))
    if default_place not in (None, *place_ids):
      raise ValueError(f"default_place must be one of {place_ids} or None")
    policy = self.settings.policy
    doer = doer and policy.doer_check
    self._policy = policy
    self._sides = (None if policy.look_sides
                   else look_lib.other_sides(target_norms))
    self._default_place = default_place
    self._model = model
    self._place = place
    self._place_words = tag_gate.place_words(place)
    # As the prompts list them.
    self._behaviours = [{"id": b.id, "description": b.description}
                        for b in behaviours]
    self._ids = [b["id"] for b in self._behaviours]
    self._descriptions = {b["id"]: b["description"] for b in self._behaviours}
    self._schema = general_call.adjudication_schema(self._ids, place_ids)
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
    """The event fields for an action, and a failure record if a call
    failed. `checked`: the behaviours an occasion's focused check decides
    for this action (occasion_check.py)."""
    if observations.is_no_action(action):
      # The agent's act produced nothing of its own; nothing to adjudicate.
      return self._unjudged(action, NO_ACTION_EVIDENCE, False), None
    near = (self._nearest(actor, action, situation, checked)
            if self._policy.spare_far_actions else None)
    if near is not None and near[1] < self._floors.spare_far:
      # No tag could pass the gate (tag_gate.py): the referee is not asked.
      self.gates.add(gate_tally.SPARED_FAR_ACTION, 1, self._log)
      return self._unjudged(action, "none", True, referee_asked=False,
                            nearest_behaviour=list(near)), None
    try:
      answer, failure = self.ask_general(actor, action, situation)
    except (StructuredOutputError, EndpointError) as e:
      # An endpoint that stays down past its retries fails this action's
      # adjudication, not the run.
      return (self._unjudged(action, FAILED_EVIDENCE.format(error=e), False),
              failure_record(ADJUDICATE_TAG, e))
    ids = general_call.behaviours_of(answer, self._ids)
    fields = {"narration": " ".join(str(answer["narration"]).split())
                           or action,
              "place": answer["place"], "behaviours": ids,
              "evidence": str(answer["evidence"]).strip(),
              "adjudicated": True}
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
    if not fields["behaviours"] and self._policy.second_look:
      # A look that fails after a failed second ask or doer check: both
      # are recorded, neither replaces the other.
      failure = combined(failure, self._look(fields, actor, action, checked))
    return fields, failure

  def adjudicate_place(self, items: Sequence[batch_lib.PlaceAction],
                       budget: int = batch_lib.CONTEXT_TOKENS
                       ) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """`adjudicate` for the new actions of one place in one slot, judged
    together (batch.py): each item's event fields and failure record, in
    the items' order, the caller's (by actor name), whatever the threads."""
    return batch_lib.PlaceBatch(self, failed=FAILED_EVIDENCE,
                                no_action=NO_ACTION_EVIDENCE,
                                budget=budget).judge(items)

  def _unjudged(self, action: str, evidence: str, adjudicated: bool,
                **more: Any) -> dict[str, Any]:
    """The fields of an action no answer of the referee's judges: the
    agent's own words, the unsaid place, no behaviour."""
    return {"narration": action, "place": self.unsaid_place(),
            "behaviours": [], "evidence": evidence,
            "adjudicated": adjudicated, **more}

  def ask_general(self, actor: str, action: str, situation: str = ""
                  ) -> tuple[Mapping[str, Any], dict[str, Any] | None]:
    """The general call's answer (general_call.py), and the failure record
    of its second ask, or None. A behaviour named with evidence that is not
    the action's words is an invalid answer, asked for once more, saying
    why; if that call fails, the first answer stands, its claim apart. The
    first call's failure is raised. Public for the probe runner
    (crsec_concordia/metrics/classifiers/probe_run.py), which asks what a
    run asks."""
    prompt = general_call.adjudication_prompt(
        place=self._place, behaviours=self._behaviours, actor=actor,
        action=action, situation=situation, default_place=self._default_place,
        places=self._places_for(actor, action),
        here=self._where(actor) if self._where is not None else None)
    answer = self._ask(prompt)
    if self._supported(answer, actor, action):
      return answer, None
    retry = general_call.retry_prompt(prompt, str(answer["evidence"]), actor,
                                      self._ids)
    try:
      return self._ask(retry), None
    except (StructuredOutputError, EndpointError) as e:
      return answer, failure_record(ADJUDICATE_TAG, e)

  def _places_for(self, actor: str, action: str
                  ) -> list[dict[str, str]] | None:
    """The places the prompt lists for this action (the answer may still
    name any of the scenario's)."""
    if self._places is None or self._listed is None:
      return self._places
    ids = set(self._listed(actor, action))
    return [p for p in self._places if p["id"] in ids]

  def _look(self, fields: dict[str, Any], actor: str, action: str,
            checked: Sequence[str]) -> dict[str, Any] | None:
    """The second look (second_look.py) at an action no tag of the general
    call counts for: its record in `fields`, its tag counted if accepted;
    the failure record of its calls, or None. An occasion's checked
    behaviours are its focused check's to decide."""
    if self._similarity is None:
      return None
    rest = {i: d for i, d in self._descriptions.items() if i not in checked}
    if not rest:
      return None
    look, failure = look_lib.second_look(
        self._look_model, self._doer_model, place=self._place, actor=actor,
        action=action, descriptions=rest, similarity=self._similarity,
        words=self._place_words, nearest_rule=self._policy.look_nearest,
        reverse=self._policy.look_reverse, sides=self._sides,
        floors=self._floors, tie=self.settings.tie)
    self._count_look(look)
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
    who does it). A tag dropped by either is kept apart, visibly. A gate
    the policy leaves out is neither applied nor recorded (a run's
    corrected estimates read which applied from the fields recorded:
    crsec_concordia/metrics/classifiers/referee_quality.py)."""
    fields: dict[str, Any] = {"behaviours": list(ids)}
    if self._policy.tag_floor or self._policy.deed_floor:
      fields.update(self._gated(action, ids))
    kept = fields["behaviours"]
    far = [i for i in ids if i not in kept]
    if far:
      fields["far_from_action"] = far
      self.gates.add(gate_tally.TAG_FLOOR, len(far), self._log)
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

  def _gated(self, action: str, ids: list[str]) -> dict[str, Any]:
    """The gates' fields: the tags that reach the floor (tag_gate.py) on
    the cosines the policy checks, and those cosines."""
    scores = tag_gate.tag_similarities(action, ids, self._descriptions,
                                       self._similarity)
    deed = tag_gate.deed_similarities(action, ids, self._descriptions,
                                      self._similarity, self._place_words)
    fields: dict[str, Any] = {}
    if self._policy.tag_floor:
      fields["tag_similarity"] = scores
    if self._policy.deed_floor:
      fields["tag_deed_similarity"] = deed
    if self._policy.tag_floor:
      # None: an unmeasured embedder's open gate (no JSON for infinity).
      fields["tag_floor"] = (self._floors.tag if self._floors.measured
                             else None)
    kept, _ = tag_gate.split_tags(
        scores if self._policy.tag_floor else dict.fromkeys(ids, 1.0),
        floor=self._floors.tag,
        deed_scores=deed if self._policy.deed_floor else None)
    return {"behaviours": kept, **fields}

  def _nearest(self, actor: str, action: str, situation: str,
               checked: Sequence[str]) -> tuple[str, float] | None:
    """The behaviour nearest an action the referee may be spared, or None
    (ask). Only an action that tells of its actor; in answer to an
    occasion, only if a focused check decides the occasion's behaviours,
    the others then weighed (the general call may miss the occasion's
    behaviours: occasion_check.py)."""
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

  @property
  def behaviours(self) -> list[dict[str, str]]:
    """The scenario's behaviours as the referee lists them."""
    return [dict(b) for b in self._behaviours]

  @property
  def place_words(self) -> frozenset[str]:
    """The words of the setting and the place field (tag_gate.place_words)."""
    return self._place_words

  def _supported(self, answer: Mapping[str, Any], actor: str,
                 action: str) -> bool:
    return general_call.supported(answer, self._ids, actor, action)

  def unsaid_place(self) -> str:
    """The place of an action that was not adjudicated."""
    return self._default_place or "indoors"

  def check(self, occasion: occasions_lib.Occasion, actor: str, action: str
            ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The focused look at an answer to an occasion (occasion_check.py)."""
    if self._similarity is None:
      raise RuntimeError(f"occasion {occasion.id!r} names behaviours to check "
                         "but the adjudication has no embedder")
    wanted = [b for b in self._behaviours if b["id"] in occasion.behaviours]
    check, failure = occasion_check.check_occasion(
        self._model, place=self._place, situation=occasion.text_for(actor),
        actor=actor, action=action, behaviours=wanted,
        similarity=self._similarity, gate=self._policy.occasion_gate,
        floor=self._floors.occasion)
    # A proposal of the occasion's behaviours its floor refused.
    self.gates.add(gate_tally.OCCASION_FLOOR, int(
        not check["accepted"] and check["behaviour"] in occasion.behaviours),
                   self._log)
    return check, failure

  def _count_look(self, look: Mapping[str, Any] | None) -> None:
    """A second look not asked (no behaviour near the floor), or its
    answer refused by the nearest rule, counted (gate_tally.py)."""
    if look is None:
      self.gates.add(gate_tally.LOOK_FLOOR, 1, self._log)
    elif look.get("why") == look_lib.NOT_NEAREST:
      self.gates.add(gate_tally.LOOK_NEAREST_RULE, 1, self._log)

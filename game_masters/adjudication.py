"""Adjudication: every new action of a slot turned into an event, at once.

The stock game master resolves an action with free-text chains of thought
and lets the text speak for itself. A run needs more and less: more,
because the metrics need to know which of the scenario's behaviours each
action shows (smoking indoors, tipping, ...), decided once, by the game
master, in a structured record; less, because a small model must do it fast.
So a referee (game_masters/referee/) narrates each action and adjudicates
it: where it happens (one of the scenario's places: indoors or outdoors
where it declares none), which behaviour ids it shows (an enum built from
the scenario, so a behaviour added to the YAML needs no Python) and the
evidence. This component puts the slot's actions to it all at once,
carries continued actions forward with no call (going_on.py), keeps the
records in name order, settles the slot's moves (whereabouts.py) and
queues what each observer perceives (perception.py).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from concordia.components.game_master import event_resolution as resolution_lib
from concordia.typing import entity as entity_lib
from concordia.typing import entity_component

from crsec_concordia import observations, threads
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.embedding.records import SimilarityThresholds
from crsec_concordia.game_masters import action_spec as action_spec_lib
from crsec_concordia.game_masters import clock as clock_lib
from crsec_concordia.game_masters import exact_observations as queue_lib
from crsec_concordia.game_masters import going_on as going_on_lib
from crsec_concordia.game_masters import occasions as occasions_lib
from crsec_concordia.game_masters import perception as perception_lib
from crsec_concordia.game_masters import referee as referee_lib
from crsec_concordia.game_masters.referee import place_slot
from crsec_concordia.game_masters import slot_actions
from crsec_concordia.game_masters import whereabouts as whereabouts_lib
from crsec_concordia.game_masters.action_text import (clean_action,
                                                      observed_text,
                                                      tells_of_actor)
from crsec_concordia.operations import detect_conflict_relevance as relevance
from crsec_concordia.rundir.format import ACTION, FAILURE
from crsec_concordia.scenarios import Behaviour, TargetNorm

ADJUDICATION_KEY = resolution_lib.DEFAULT_RESOLUTION_COMPONENT_KEY
# The `op` of the failure record of an agent that failed to act at all.
ACT_OP = "Act"


class Adjudication(entity_component.ContextComponent,
                   entity_component.ComponentWithLogging):
  """Resolves each slot's actions into exact observations and records.

  Every agent's action is adjudicated in its own call, all at once (the
  calls overlap on the endpoint); the records are kept in name order, so a
  run's files do not depend on which call returns first.
  """

  def __init__(
      self,
      model,
      *,
      place: str,
      behaviours: Sequence[Behaviour],
      player_names: Sequence[str] = (),
      max_tokens: int = 160,
      clock_key: str = clock_lib.CLOCK_KEY,
      observations_key: str = queue_lib.EXACT_OBSERVATIONS_KEY,
      action_spec_key: str = action_spec_lib.ACTION_SPEC_KEY,
      similarity: referee_lib.Similarity | None = None,
      floors: SimilarityThresholds | None = None,
      warm: Callable[[Sequence[str]], None] | None = None,
      default_place: str | None = None,
      doer: bool = True,
      policy: RefereePolicy | None = None,
      target_norms: Sequence[TargetNorm] = (),
      places: Sequence[Mapping[str, str]] | None = None,
      perception: perception_lib.LocalPerception | None = None,
      whereabouts_key: str = whereabouts_lib.WHEREABOUTS_KEY,
      batched: bool = False,
  ):
    """Creates the component.

    Args:
      model: a structured model view; its calls are counted under its tag
        (the prefab passes `model.tagged("GM.adjudicate")`).
      place: the short name of the setting.
      behaviours: the scenario's behaviours (`id`, `description`).
      player_names: the agents expected to act every slot; one present
        (ExactObservations' absent set: not arrived yet, or gone) who
        neither acted nor failed gets a failure record all the same.
      max_tokens: the answer's budget (a narration and a few ids).
      clock_key: the key of the game master's SlotClock.
      observations_key: the key of the game master's ExactObservations.
      action_spec_key: the key of the game master's FixedActionSpec (which
        knows the occasion, if any, that prompted an action).
      similarity: (text, text) -> similarity of their embeddings
        (`referee.similarity_of(embedder)`): the check of every behaviour
        tag (referee/tag_gate.py) and of occasions that name behaviours
        (referee/occasion_check.py). Without it, neither (an occasion that
        names behaviours then raises).
      floors: the thresholds measured for the embedder behind `similarity`
        (the Embedder value's, embedding.thresholds_of; None: MiniLM's).
      warm: given a behaviour as observers will read it, has it embedded
        in the background (every normative observer's ConflictDetector
        embeds the slot's behaviours first thing in the next slot): each
        as soon as it is known, while the other adjudications are in
        flight.
      default_place: where people are unless an action says otherwise
        (the scenario's `default_place`, indoors or outdoors): the prompt
        gives it as the place of an action that does not say (deferring to
        the setting line alone, the small model put most actions in an
        open-air garden indoors), and an action not adjudicated gets it.
      doer: ask, for each tag the embedder kept, who does that behaviour
        (referee/doer_check.py); a tag counts only if the answer names the
        actor.
      policy: which of the referee's structures apply
        (crsec_concordia/calibration/policy.py); by default all of them.
      target_norms: the scenario's target norms (`complies`, `violates`):
        the two sides of a deed, for a policy whose second
        look lets the other side of the nearest behaviour through.
      places: the places a scenario declares (id and description each),
        the referee's choices, told with the place each actor is at (the
        game master's Whereabouts); None: indoors or outdoors.
      perception: what each observer perceives of a slot; by default,
        with a game master that keeps Whereabouts, the deeds in view, by
        name (the prefab's weighs the observers' norms).
      whereabouts_key: the key of the game master's Whereabouts, if any
        (without one, every observer perceives every deed).
      batched: the new actions of one place in a slot judged in one call
        (referee/batch.py, place_slot.py) rather than one call each.
    """
    super().__init__()
    self._declared = places is not None
    self._referee = referee_lib.Referee(
        model, place=place, behaviours=behaviours, max_tokens=max_tokens,
        similarity=similarity, default_place=default_place, doer=doer,
        policy=policy, target_norms=target_norms, places=places,
        where=self._here if places is not None else None,
        listed=self._listed if places is not None else None,
        log=lambda entry: self._logging_channel(entry), floors=floors,
        batched=batched)
    self._perception = perception
    self._default_place = default_place
    self._whereabouts_key = whereabouts_key
    self._names = tuple(sorted(player_names))
    self._clock_key = clock_key
    self._observations_key = observations_key
    self._action_spec_key = action_spec_key
    self._warm = warm
    self._lock = threading.Lock()
    self._putative: str | None = None
    # The slot's batched judgements, by actor (referee/place_slot.py).
    self._judged: Mapping[str, Any] = {}
    self._records: list[dict[str, Any]] = []
    self._counts: dict[str, int] = {}
    self._events = 0
    # Each agent's latest adjudicated action, which a continued action
    # carries forward (the action record's fields and what observers read).
    self._going_on = going_on_lib.GoingOn()
    # Fifty adjudications a slot, or a thousand: their threads are kept
    # between slots, as many as the endpoint serves requests at once.
    self._threads = threads.KeptThreads("Adjudication",
                                        threads.workers_for(model))

  def _component(self, key: str, type_):
    return self.get_entity().get_component(key, type_=type_)

  def _whereabouts(self) -> whereabouts_lib.Whereabouts | None:
    """The game master's Whereabouts, or None (an adjudication used alone)."""
    components = self.get_entity().get_all_context_components()  # type: ignore[attr-defined]
    found = components.get(self._whereabouts_key)
    return found if isinstance(found, whereabouts_lib.Whereabouts) else None

  def _here(self, actor: str) -> str:
    """Where `actor` is now (told to the referee with its action)."""
    return self._component(self._whereabouts_key,
                           whereabouts_lib.Whereabouts).place_of(actor)

  def _listed(self, actor: str, action: str) -> list[str]:
    """The places the referee's prompt lists for an action: near where the
    actor is, and those its words or the scenario's default name."""
    here = self._here(actor)
    places = self._component(self._whereabouts_key,
                             whereabouts_lib.Whereabouts).places
    also = places.named_in(action, besides=here)
    return places.near(here, [*also, *([self._default_place]
                                       if self._default_place else [])])

  def _unsaid_place(self, actor: str, action: str) -> str:
    """The place of an action no answer of the referee placed, in a
    scenario that declares its places: the one other place its words name
    (going somewhere the referee was not asked about), else where the
    actor is."""
    here = self._here(actor)
    named = self._component(self._whereabouts_key, whereabouts_lib.Whereabouts
                            ).places.named_in(action, besides=here)
    return named[0] if len(named) == 1 else here

  def drain_records(self) -> list[dict[str, Any]]:
    """The action and failure records since the last drain."""
    with self._lock:
      records, self._records = self._records, []
    return records

  def adjudicate(self, actor: str, action: str, situation: str = "",
                 checked: Sequence[str] = ()
                 ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The event fields for an action, and a failure record if a call
    failed (referee/pipeline.py)."""
    return self._referee.adjudicate(actor, action, situation, checked)

  def resolve_action(self, actor: str, raw_action: str,
                     stamp: observations.Stamp
                     ) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """(the action record, failure records, the observation) of one agent."""
    going_on = observations.continued_action(raw_action)
    if going_on is not None:
      carried = self._going_on.carry_forward(
          actor, clean_action(going_on, actor), stamp)
      if carried is not None:
        return carried
      raw_action = going_on  # Not known here: adjudicated as new.
    action = clean_action(raw_action, actor)
    if observations.says_nothing(actor, action):
      # Nothing to adjudicate or tell (observations.NO_DEED): recorded as
      # no action, as any agent's may be, whatever agent wrote it.
      action = f"{actor} {observations.NO_DEED}"
    warmed = None
    if (self._warm is not None and tells_of_actor(actor, action)
        and not observations.is_no_action(action)):
      warmed = action.strip()
      # What observers will read, and its sentences (DetectConflict scores
      # each against the rules, detect_conflict_relevance.py): embed now.
      self._warm(relevance.pieces(warmed))
    occasion = self._component(self._action_spec_key,
                               action_spec_lib.FixedActionSpec).occasion(actor)
    event, failures = self._judge(actor, action, occasion)
    if self._declared and not (event.get("adjudicated")
                               and event.get("referee_asked", True)):
      event["place"] = self._unsaid_place(actor, action)
    observed = observed_text(actor, action, event["narration"]).strip()
    if (self._warm is not None and observed != warmed
        and not observations.is_no_action(observed)):
      self._warm(relevance.pieces(observed))
    text = observations.format_action(stamp, actor, event["place"], observed)
    record = {"kind": ACTION, **clock_lib.stamp_fields(stamp),
              "actor": actor, "action": action, **event}
    if occasion is not None:
      record["occasion"] = occasion.id
    self._going_on.remember(record, observed)
    return record, failures, text

  def _judge(self, actor: str, action: str,
             occasion: occasions_lib.Occasion | None
             ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the event fields, failure records) of a new action: the referee's
    adjudication and, for an answer to an occasion that names behaviours,
    its focused check at the same time, which then decides among them."""
    situation = occasion.text_for(actor) if occasion else ""
    checks = (occasion is not None and bool(occasion.behaviours)
              and not observations.is_no_action(action))
    tasks = {"event": functools.partial(
        self.adjudicate, actor, action, situation,
        occasion.behaviours if checks else ())}
    judged = self._judged.get(actor)
    if judged is not None and judged[0] == action:
      tasks["event"] = lambda: judged[1]
    if checks:
      tasks["check"] = functools.partial(self._referee.check, occasion, actor,
                                         action)
    # The two calls are independent: they overlap. One runs in this thread
    # (already one of the slot's, one per action): a pool for it cost a
    # thread start per action, under the GIL.
    results = threads.run_tasks(tasks)
    event, failure = results["event"]
    failures = [failure] if failure is not None else []
    if "check" in results:
      check, check_failure = results["check"]
      event["occasion_check"] = check
      if check_failure is not None:
        failures.append(check_failure)
      event["behaviours"] = referee_lib.decide(event["behaviours"], check,
                                               occasion.behaviours)
    return event, failures

  def waits_on_model(self, hook: str) -> bool:
    """pre_act adjudicates the slot's actions once they were observed."""
    with self._lock:
      return hook == "pre_act" and self._putative is not None

  def pre_observe(self, observation: str) -> str:
    if observation.startswith(resolution_lib.PUTATIVE_EVENT_TAG):
      with self._lock:
        self._putative = observation
    return ""

  def pre_act(self, action_spec: entity_lib.ActionSpec) -> str:
    if action_spec.output_type != entity_lib.OutputType.RESOLVE:
      return ""
    with self._lock:
      putative, self._putative = self._putative or "", None
    slot = slot_actions.SlotActions.decode(putative)
    stamp = self._component(self._clock_key,
                            clock_lib.SlotClock).current_stamp()
    fields = clock_lib.stamp_fields(stamp)
    self._judged = (place_slot.judge_slot(
        self._referee, place_slot.new_actions(
            slot.actions, stamp, self._going_on, self._component(
                self._action_spec_key, action_spec_lib.FixedActionSpec)),
        self._here if self._declared else lambda _: "",
        self._threads.run_tasks) if self._referee.settings.batched else {})
    # Every agent's action at once; everything after in name order.
    results = self._threads.run_tasks({
        actor: functools.partial(self.resolve_action, actor, action, stamp)
        for actor, action in slot.actions.items()})
    failed = dict(slot.failed)
    queue = self._component(self._observations_key,
                            queue_lib.ExactObservations)
    # An agent not yet arrived, or gone, was asked nothing: no failure.
    absent = queue.absent()
    for name in self._names:
      if (name not in slot.actions and name not in failed
          and name not in absent):
        failed[name] = "the engine returned no action for this agent"
    records, texts = [], {}
    for actor in sorted(set(results) | set(failed)):
      if actor in failed:
        records.append({"kind": FAILURE, **fields, "agent": actor,
                        "op": ACT_OP, "error": failed[actor]})
        continue
      record, failures, text = results[actor]
      records.extend({"kind": FAILURE, **fields,
                      "agent": self.get_entity().name, **f} for f in failures)
      if actor in slot.reasons:
        record = {**record, "act_reasons": list(slot.reasons[actor])}
      records.append(record)
      if not observations.is_no_action(record["action"]):
        # A failed or empty answer is no deed: nobody perceives its marker.
        texts[actor] = text
    whereabouts = self._whereabouts()
    if whereabouts is None:
      for text in texts.values():
        queue.add(queue_lib.EVERYONE, text)
    else:
      texts = self._deliver(whereabouts, queue, stamp, records, texts)
    with self._lock:
      self._records.extend(records)
      for record in records:
        if record["kind"] == ACTION:
          self._events += 1
          for b in record["behaviours"]:
            self._counts[b] = self._counts.get(b, 0) + 1
    summary = "\n".join(texts.values())
    # The referee's skips so far ride with the slot's entry, which would
    # otherwise replace its "skipped" ones in Concordia's log.
    self._logging_channel({"Key": "adjudication", "Summary": summary,
                           "Value": summary, "Records": records,
                           "Skipped": self._referee.gates.counts()})
    return summary

  def _deliver(self, whereabouts: whereabouts_lib.Whereabouts,
               queue: queue_lib.ExactObservations,
               stamp: observations.Stamp, records: list[dict[str, Any]],
               texts: dict[str, str]) -> dict[str, str]:
    """Settles the slot's moves, queues each observer the deeds it
    perceives, and marks the records: a move (`moved_from`), a move
    refused (`move_refused`), the deeds an observer's next observation
    leaves out (`unseen`). Returns the event texts, places settled."""
    actions = {r["actor"]: r for r in records if r["kind"] == ACTION}
    changes = whereabouts.settle(
        stamp.step, {a: r["place"] for a, r in actions.items()})
    deeds = []
    for actor, text in texts.items():
      record, change = actions[actor], changes.get(actor, {})
      record.update(change)
      event = observations.parse(text)
      assert isinstance(event, observations.ActionObservation)
      if "move_refused" in change:
        # The place was full: the agent stays, and is seen where it is.
        record["place"] = whereabouts.place_of(actor)
        text = texts[actor] = observations.format_action(
            stamp, actor, record["place"], event.text, event.continued)
      deeds.append(perception_lib.Deed(
          actor=actor, place=record["place"], text=text, words=event.text,
          moved_from=change.get("moved_from")))
    perception = self._perception or perception_lib.LocalPerception(
        whereabouts.places)
    where = whereabouts.now()
    perceived = perception.compose(deeds, where, sorted(where))
    queue.add_each(perceived.texts)
    for record in records:
      # The agent's own record of the slot: its action, or its failure to act.
      who = (record["actor"] if record["kind"] == ACTION else
             record["agent"] if record.get("op") == ACT_OP else None)
      if perceived.unseen.get(who):
        record["unseen"] = perceived.unseen[who]
    return texts

  @property
  def settings(self):
    """The referee's settings (its policy, thresholds and near tie:
    calibration/run_policy.py)."""
    return self._referee.settings

  def gate_counts(self) -> dict[str, int]:
    """What the referee's gates skipped so far (gate_tally.py)."""
    return self._referee.gates.counts()

  def get_state(self) -> entity_component.ComponentState:
    with self._lock:
      return {"events": self._events, "behaviour_counts": dict(self._counts),
              "going_on": self._going_on.get_state(),
              "gates": self._referee.gates.counts()}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._lock:
      self._events = int(state.get("events", 0))
      self._counts = {k: int(v) for k, v in
                      dict(state.get("behaviour_counts", {})).items()}
      self._going_on.set_state(state.get("going_on", {}))
      self._putative = None
    self._referee.gates.restore(state.get("gates"))

"""ConflictDetector: the sender side of CRSEC's spreading module.

When the agent observes what others did, it runs DetectConflict against its
qualified norms; on a conflict, DecideToTalk (entrepreneurs always talk)
and, if so, it asks for a conversation with the violator, which the game
master collects through the agent's port (components/port.py:
`talk_requests`, which pops them here). An agent with no
qualified norms makes no call (ordinary agents start silent, as in the
paper), and a cooldown keeps it from talking to the same person again for
a few slots. Which norm a behaviour is about is retrieval, done with the
sentence embedder (operations/detect_conflict_relevance.py); whether it
breaks it is the model's judgement (operations/detect_conflict.py). A
behaviour near no norm is not sent, and the rest of one observation is
judged in one call; in a simulation, a question other agents hold too (the
same deed against the same rule's words) is asked once for all of them
(operations/detect_conflict_sharing.py), and with `batched` the distinct
questions of one place in one slot, across its observers, are asked in one
call (operations/detect_conflict_batch.py; without a simulation's sharing
service the detector asks alone, as without the switch).
Noticing happens while the agent goes on with its day: detection runs in
its own thread from the moment the observation arrives, with the norms
held then, and is joined when the game master collects the requests (an
error there is recorded as a failure, never raised into the game master);
the norms are embedded ahead, in the background
(crsec_concordia/embedding/warmer.py). The trials: docs/trials/operations.md.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from concordia.language_model import language_model
from concordia.typing import entity_component

from crsec_concordia import embedding, observations, threads
from crsec_concordia.embedding import thresholds as embedder_thresholds
from crsec_concordia.embedding.warmer import warm
from crsec_concordia.gate_tally import RELEVANCE_FLOOR, GateTally
from crsec_concordia.components._free_text import events_in
from crsec_concordia.components._perception import new_events
from crsec_concordia.components._shared import UsesNormMemory
from crsec_concordia.components.norm_memory import (ENTREPRENEUR,
                                                    NORM_MEMORY_KEY)
from crsec_concordia.embedding import SentenceEmbedder
from crsec_concordia.models.concordia_adapter import structured_view
from crsec_concordia.norms import PersonalNorm
from crsec_concordia.rundir.format import CONFLICT, TALK_DECISION
from crsec_concordia.operations import Observed, decide_to_talk, detect_conflicts
from crsec_concordia.operations.detect_conflict import Judgement
from crsec_concordia.operations.detect_conflict_relevance import questions
from crsec_concordia.operations.detect_conflict_sharing import (
    SharedJudgements, Ticket)
from crsec_concordia.operations.names import DETECT_CONFLICT

CONFLICT_DETECTOR_KEY = "ConflictDetector"
# Observations in a row with no readable behaviour before the log says so.
UNUSABLE_WARNING = 5
_log = logging.getLogger(__name__)


def behaviour_text(event: observations.ActionObservation) -> str:
  return f"{event.text} (This happened {event.place}.)"


class ConflictDetector(UsesNormMemory, entity_component.ContextComponent,
                       entity_component.ComponentWithLogging):
  """Detects conflicts with the agent's norms and asks to talk about them."""

  def __init__(self, model: language_model.LanguageModel, *,
               talk_model: language_model.LanguageModel | None = None,
               embedder: SentenceEmbedder | None = None,
               relevance: float | None = None, cooldown_steps: int = 6,
               norm_memory_key: str = NORM_MEMORY_KEY,
               batched: bool = False):
    """Creates the detector.

    Args:
      model: the model for DetectConflict (any Concordia LanguageModel;
        a tagged view counts its calls apart).
      talk_model: the model for DecideToTalk (defaults to `model`).
      embedder: finds the norm a behaviour is most about: any function
        from text to vector, such as the simulation's (default: the
        project's MiniLM, the `embeddings` extra).
      relevance: the similarity to the most related norm a behaviour needs
        to be judged at all (None: the embedder's measured floor,
        the Embedder value's; an embedder nobody measured sends every
        behaviour).
      cooldown_steps: slots before the agent asks to talk with the same
        person again.
      norm_memory_key: the key of the entity's NormMemory.
      batched: the questions it shares in a slot are asked with the
        place's other questions of the slot, in one call
        (operations/detect_conflict_batch.py); off by default until
        measured on a model (docs/calibration.md).
    """
    super().__init__()
    self._model = structured_view(model)
    self._talk_model = structured_view(talk_model or model)
    # Norms and behaviours are compared slot after slot: cached vectors.
    self._embedder = None if embedder is None else embedding.cached(embedder)
    self._thresholds = embedding.thresholds_of(embedder)
    self._relevance = (self._thresholds.relevance if relevance is None
                       else relevance)
    self._cooldown = cooldown_steps
    self._norm_memory_key = norm_memory_key
    self._batched = batched
    self._lock = threading.Lock()
    self._requests: list[dict[str, Any]] = []
    self._told_not_held = False
    self._last_raised: dict[str, int] = {}
    self._work: threads.Background | None = None
    # What the agent last perceived each person doing (see `new_events`),
    # and the norms it held when it last judged each person's deed.
    self._perceived: dict[str, str] = {}
    self._judged: dict[str, list[str]] = {}
    self._unusable, self._warned = 0, False
    self._shared: SharedJudgements | None = None
    self._gates = GateTally()  # Deeds judged against no norm (gate_tally.py).

  def share_judgements(self, shared: SharedJudgements | None) -> None:
    """Asks the questions other agents hold too once for all of them
    (a simulation's SharedJudgements; None: asks alone)."""
    self._shared = shared

  def join(self) -> None:
    """Waits for the detection in progress, if any."""
    with self._lock:
      work, self._work = self._work, None
    if work is not None:
      work.join()

  def pop_conversation_requests(self) -> list[dict[str, Any]]:
    """The conversations this agent wants to start; clears them."""
    self.join()
    with self._lock:
      requests, self._requests = self._requests, []
    return requests

  def _embedding(self) -> SentenceEmbedder:
    if self._embedder is None:
      self._embedder = embedding.shared_embedder()
    return self._embedder

  def warm_norms(self) -> None:
    """Has the norms held now embedded in the background, ready for the
    next detection (see crsec_concordia/embedding/warmer.py)."""
    warm(self._embedding(),
         [n.content for n in self.norm_memory.database.qualified()])

  def related(self, events: list[observations.ActionObservation],
              norms: list[PersonalNorm]
              ) -> list[tuple[observations.ActionObservation, Observed]]:
    """Each event with its most related norm (and the sentence of it
    nearest that norm); unrelated events left out
    (operations/detect_conflict_relevance.py); those are counted."""
    found = questions(self._embedding(), events, norms, self._relevance)
    self._gates.add(RELEVANCE_FLOOR, len(events) - len(found),
                    self._logging_channel)
    return found

  def gate_counts(self) -> dict[str, int]:
    """The deeds its relevance floor kept from any judgement, so far."""
    return self._gates.counts()

  def _decide(self, item: Observed, event: observations.ActionObservation,
              on_failure) -> bool | None:
    """Whether to talk about a conflict (None: the call failed)."""
    memory = self.norm_memory
    if memory.role == ENTREPRENEUR:
      return True
    return decide_to_talk(self._talk_model, name=memory.agent_name,
                          persona=memory.persona, actor=item.actor,
                          behaviour=behaviour_text(event),
                          norm=item.norm.content, on_failure=on_failure)

  def _judge(self, items: list[Observed], on_failure,
             ticket: Ticket | None) -> list[Judgement | None]:
    """A judgement per item (None: its call failed): asked alone, or with
    the slot's other holders through the ticket."""
    if ticket is None or self._shared is None:
      judgements = detect_conflicts(
          self._model, observer=self.norm_memory.agent_name, items=items,
          on_failure=on_failure)
      return list(judgements) if judgements is not None else [
          None for _ in items]
    answers = self._shared.answers(ticket, items, self._model)
    return [None if a is None else Judgement(item, a[0], a[1])
            for item, a in zip(items, answers)]

  def detect(self, events: list[observations.ActionObservation],
             norms: list[PersonalNorm] | None = None,
             stamp: observations.Stamp | None = None,
             ticket: Ticket | None = None) -> None:
    """Judges one observation's behaviours; records conflicts; asks to talk.

    Args:
      events: the behaviours of others in one observation.
      norms: the qualified norms to judge them by (default: those held now).
      stamp: the time its records carry (default: the latest observed).
      ticket: this agent's place in the slot's shared questions (None:
        asks alone).
    """
    norms = self.norm_memory.database.qualified() if norms is None else norms
    if not norms or not events:
      return
    on_failure = self._failure_sink(stamp)
    pairs = self.related(events, norms)
    if ticket is not None and self._shared is not None:
      self._shared.hand_in(ticket, [item for _, item in pairs], on_failure,
                           self._batched)
    self._conclude(pairs, stamp, ticket, on_failure)

  def _failure_sink(self, stamp: observations.Stamp | None
                    ) -> Callable[[Mapping[str, Any]], None]:
    """Records a failure of this agent's at `stamp`."""
    journal = self.journal

    def on_failure(failure: Mapping[str, Any]) -> None:
      journal.record_failure(failure, stamp=stamp)
    return on_failure

  def _conclude(self, pairs, stamp: observations.Stamp | None,
                ticket: Ticket | None, on_failure) -> None:
    """detect's judging, once the questions are known (and handed in, with
    a ticket): records conflicts; asks to talk."""
    if not pairs:
      return
    memory = self.norm_memory
    judgements = self._judge([item for _, item in pairs], on_failure, ticket)
    conflicts = [(event, j) for (event, _), j in zip(pairs, judgements)
                 if j is not None and j.breaks]
    for _, j in conflicts:
      item = j.observed
      self._record(CONFLICT, stamp=stamp, actor=item.actor,
                   behaviour=item.behaviour, place=item.place,
                   norm_id=item.norm.id, norm=item.norm.content,
                   evidence=j.evidence)
    # One talk with a person per cooldown, whatever the norm: talk is most
    # of a run's cost. Checked before DecideToTalk, whose answer would be
    # thrown away.
    with self._lock:
      wanted = [(event, j) for event, j in conflicts
                if not self._cooling_down(event.actor, event.stamp.step)]
    tasks = {f"{i:04d}": functools.partial(self._decide, j.observed, event,
                                           on_failure)
             for i, (event, j) in enumerate(wanted)}
    # An entrepreneur always talks (no call) and one decision is one call:
    # in this thread, then, not in a pool started for them, whose start
    # the detections of a whole slot would queue for.
    decisions = threads.run_tasks(tasks,
                                  parallel=memory.role != ENTREPRENEUR)
    raised: set[str] = set()
    for i, (event, j) in enumerate(wanted):
      talk, item = decisions[f"{i:04d}"], j.observed
      if talk is None:
        continue
      self._record(TALK_DECISION, stamp=stamp, actor=item.actor, talk=talk,
                   norm_id=item.norm.id, norm=item.norm.content)
      if talk:
        with self._lock:
          if self._cooling_down(item.actor, event.stamp.step):
            continue  # Two conflicts with one person in one observation.
          self._last_raised[item.actor] = event.stamp.step
          raised.add(item.actor)
          self._requests.append({
              "initiator": memory.agent_name, "partner": item.actor,
              "topic": item.norm.content, "norm": item.norm.content,
              "norm_id": item.norm.id, "behaviour": item.behaviour,
              "step": event.stamp.step})
    if any(event.actor not in raised for event, _ in conflicts):
      # A conflict the agent does not raise in a talk: a reason for its act
      # to decide anew (one it raises has its reaction in the talk).
      self.journal.add_news("a conflict noticed")

  def _cooling_down(self, actor: str, step: int) -> bool:
    """Whether a talk with `actor` is pending or was asked for recently.

    The caller holds `self._lock`.
    """
    last = self._last_raised.get(actor)
    return ((last is not None and step - last < self._cooldown)
            or any(r["partner"] == actor for r in self._requests))

  def waits_on_model(self, hook: str) -> bool:
    """Whether `hook` may wait on the model now: pre_observe joins a
    detection still in progress (the game master has usually joined it)."""
    with self._lock:
      return hook == "pre_observe" and self._work is not None

  def pre_observe(self, observation: str) -> str:
    me = self.get_entity().name
    if embedder_thresholds.first_entry(self._thresholds):
      # Concordia's log says once that nobody measured the embedder.
      self._logging_channel({"Key": "similarity_thresholds",
                             "Summary": "unmeasured embedder",
                             "Value": self._thresholds.describe()})
    try:
      self._start_detection(observation, me)
    finally:
      if self._shared is not None:
        # Its ticket taken or not: the slot's shared questions need not
        # wait for the rest of this agent's observing.
        self._shared.observed(me)
    return ""

  def _start_detection(self, observation: str, me: str) -> None:
    """pre_observe's work: the deeds to judge, judged in a thread."""
    self.journal.note(observation)
    # NormMemory may still be creating norms in its own thread: wait for it.
    self.norm_memory.ensure_created()
    self.join()
    self._requests_not_held()
    # What is held and when, fixed now: the detection runs on while the
    # agent's other components (and its act) change and read the database.
    norms = self.norm_memory.database.qualified()
    seen = events_in(observation, self._model, self.journal)
    self._note_usable(seen, observation)
    with self._lock:
      events = self._to_judge(seen, me, [n.id for n in norms])
    if not events:
      self.warm_norms()  # Created just now, perhaps: judged next slot.
      return
    stamp = self.journal.last_stamp  # The slot it was observed in.
    ordered = sorted(events, key=lambda e: (e.stamp.step, e.actor))
    journal = self.journal
    on_failure = self._failure_sink(stamp)
    shared = self._shared
    ticket = shared.enter(me) if shared is not None else None
    try:
      # The questions are found and handed in here, in the agent's own
      # observing, not in the pooled work below: a shared detection waits
      # for every holder's questions, and on a bounded pool a holder's
      # work may not have started.
      pairs = self.related(ordered, norms) if norms else []
      if ticket is not None:
        shared.hand_in(ticket, [item for _, item in pairs], on_failure,
                       self._batched)
    except Exception as e:  # pylint: disable=broad-except
      if ticket is not None:
        shared.withdraw(ticket)  # The other holders must not wait for it.
      journal.record_failure({"op": DETECT_CONFLICT,
                              "error": f"{type(e).__name__}: {e}"},
                             stamp=stamp)
      return

    def work() -> None:
      try:
        self._conclude(pairs, stamp, ticket, on_failure)
      except Exception as e:  # pylint: disable=broad-except
        journal.record_failure({"op": DETECT_CONFLICT,
                                "error": f"{type(e).__name__}: {e}"},
                               stamp=stamp)
      finally:
        if ticket is not None:
          shared.withdraw(ticket)  # Nothing asked: the slot waits no more.

    # On the process's shared pool, not a thread of its own: a thousand
    # observers are not a thousand threads (crsec_concordia/threads.py).
    with self._lock:
      self._work = threads.background(work)

  def _to_judge(self, events, me: str, held: list[str]
                ) -> list[observations.ActionObservation]:
    """The deeds of others to judge: the new ones (components/_perception.py),
    and a deed going on that was last judged before a norm held now was
    (a smoker's hour-long cigarette, seen again by someone who has just
    come to hold "no smoking indoors"). The caller holds the lock."""
    fresh = new_events(events, me, self._perceived)
    seen = {e.actor for e in fresh}
    for e in events:
      if (isinstance(e, observations.ActionObservation)
          and e.actor not in seen and e.actor != me
          and self._perceived.get(e.actor) == e.text
          and not set(held) <= set(self._judged.get(e.actor, ()))):
        fresh.append(e)
        seen.add(e.actor)
    for e in fresh:
      self._judged[e.actor] = list(held)
    return fresh

  def _requests_not_held(self) -> None:
    """Talks asked for at an earlier observation that no game master held.

    This project's game master collects every request in the slot it was
    made (NormConversations); Concordia's stock game master holds no
    talks. A conflict the agent raised in a talk that never came is then
    its own to react to: a reason for its next act ("a conflict noticed"),
    and the request is dropped (a pending one would keep every later talk
    with that person cooling down, and the list would only grow).
    """
    with self._lock:
      stale, self._requests = self._requests, []
      first = bool(stale) and not self._told_not_held
      self._told_not_held |= bool(stale)
    if not stale:
      return
    self.journal.add_news("a conflict noticed")
    if first:
      _log.info("%s: talks it asked for were not held (no game master "
                "collects ConflictDetector's requests); a conflict is a "
                "reason for its next act instead",
                self.norm_memory.agent_name)

  def _note_usable(self, events, observation: str) -> None:
    """Says once in the log when several observations in a row held no
    behaviour it could read (a game master whose text it cannot use)."""
    if not observation.strip():
      return
    with self._lock:
      self._unusable = 0 if events else self._unusable + 1
      if self._unusable == UNUSABLE_WARNING and not self._warned:
        self._warned = True
        _log.warning(
            "%s: %d observations in a row held no behaviour this agent "
            "could read; its CRSEC components are idle (is the game master's "
            "text readable? see crsec_concordia.observations)",
            self.norm_memory.agent_name, UNUSABLE_WARNING)

  def post_act(self, action_attempt: str) -> str:
    del action_attempt
    # The norms this slot qualified are judged with from the next one.
    self.warm_norms()
    return ""

  def get_state(self) -> entity_component.ComponentState:
    self.join()
    with self._lock:
      return {"requests": [dict(r) for r in self._requests],
              "last_raised": dict(self._last_raised),
              "perceived": dict(self._perceived),
              "judged": {k: list(v) for k, v in self._judged.items()},
              "gates": self._gates.counts()}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._lock:
      self._requests = [dict(r) for r in state.get("requests", [])]
      self._last_raised = {k: int(v) for k, v in
                           dict(state.get("last_raised", {})).items()}
      self._perceived = {str(k): str(v) for k, v in
                         dict(state.get("perceived", {})).items()}
      self._judged = {str(k): [str(i) for i in v] for k, v in
                      dict(state.get("judged", {})).items()}
    self._gates.restore(state.get("gates"))

"""ConflictDetector: the sender side of CRSEC's spreading module.

For every observed behaviour of another agent it runs DetectConflict against
the agent's qualified norms; on a conflict, DecideToTalk (entrepreneurs
always talk) and, if so, it asks for a conversation with the violator. The
game master collects the requests with `pop_conversation_requests()`.

An agent with no qualified norms makes no call at all: ordinary agents start
silent, as in the paper. A cooldown keeps one agent from talking to the
same person again for a few steps (conflicts are still detected and logged).

Which norm a behaviour is about is retrieval, done with the sentence
embedder (the norm most similar to the behaviour); whether the behaviour
breaks it is the model's judgement (see DetectConflict for why the two are
split). `rules_judged` > 1 judges the next most similar norms too, in
order, until one is broken.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from concordia.typing import entity_component
from concordia.utils import concurrency

from crsec_concordia import observations
from crsec_concordia.components._shared import UsesNormMemory
from crsec_concordia.components.norm_memory import (ENTREPRENEUR,
                                                    NORM_MEMORY_KEY)
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations import decide_to_talk, detect_conflict

CONFLICT_DETECTOR_KEY = "ConflictDetector"


def behaviour_text(event: observations.ActionObservation) -> str:
  return f"{event.text} (This happened {event.place}.)"


class ConflictDetector(UsesNormMemory, entity_component.ContextComponent,
                       entity_component.ComponentWithLogging):
  """Detects conflicts with the agent's norms and asks to talk about them."""

  def __init__(self, model, *, talk_model=None, embedder=None,
               rules_judged: int = 1, cooldown_steps: int = 6,
               norm_memory_key: str = NORM_MEMORY_KEY):
    """Creates the detector.

    Args:
      model: the model for DetectConflict (a tagged view is best).
      talk_model: the model for DecideToTalk (defaults to `model`).
      embedder: finds the norms a behaviour is most about (default: the
        project's shared sentence embedder).
      rules_judged: how many of the most similar norms may be judged.
      cooldown_steps: steps before the agent asks to talk with the same
        person again.
      norm_memory_key: the key of the entity's NormMemory.
    """
    super().__init__()
    self._model = model
    self._talk_model = talk_model or model
    self._embedder = embedder
    self._rules_judged = rules_judged
    self._cooldown = cooldown_steps
    self._norm_memory_key = norm_memory_key
    self._lock = threading.Lock()
    self._requests: list[dict[str, Any]] = []
    self._last_raised: dict[str, int] = {}

  def pop_conversation_requests(self) -> list[dict[str, Any]]:
    """The conversations this agent wants to start; clears them."""
    with self._lock:
      requests, self._requests = self._requests, []
    return requests

  def _handle(self, event: observations.ActionObservation) -> None:
    memory = self.norm_memory
    norms = memory.database.qualified()
    if not norms:
      return
    for norm in self._most_related(event.text, norms):
      result = detect_conflict(self._model, actor=event.actor,
                               behaviour=event.text, place=event.place,
                               norm=norm, on_failure=memory.record_failure)
      if result is None:
        return
      if result[0]:
        self._conflict(event, norm, evidence=result[1])
        return

  def _conflict(self, event: observations.ActionObservation,
                norm: PersonalNorm, evidence: str) -> None:
    memory = self.norm_memory
    behaviour = behaviour_text(event)
    self._record("conflict", actor=event.actor, behaviour=event.text,
                  place=event.place, norm_id=norm.id, norm=norm.content,
                  evidence=evidence)
    # One talk with a person per cooldown, whatever the norm: in trials an
    # agent who had just talked with someone raised another of its norms
    # with them at the next step, and talk is most of a run's cost. Checked
    # before DecideToTalk, whose answer would be thrown away.
    with self._lock:
      if self._cooling_down(event.actor, event.stamp.step):
        return
    if memory.role == ENTREPRENEUR:
      talk = True
    else:
      talk = decide_to_talk(self._talk_model, name=memory.agent_name,
                            persona=memory.persona, actor=event.actor,
                            behaviour=behaviour, norm=norm.content,
                            on_failure=memory.record_failure)
      if talk is None:
        return
    self._record("talk_decision", actor=event.actor, talk=talk,
                  norm_id=norm.id, norm=norm.content)
    if not talk:
      return
    with self._lock:
      # Another thread may have asked first (hooks run in parallel).
      if self._cooling_down(event.actor, event.stamp.step):
        return
      self._last_raised[event.actor] = event.stamp.step
      self._requests.append({
          "initiator": memory.agent_name, "partner": event.actor,
          "topic": norm.content, "norm": norm.content, "norm_id": norm.id,
          "behaviour": event.text, "step": event.stamp.step})

  def _cooling_down(self, actor: str, step: int) -> bool:
    """Whether a talk with `actor` is pending or was asked for recently.

    The caller holds `self._lock`.
    """
    last = self._last_raised.get(actor)
    return ((last is not None and step - last < self._cooldown)
            or any(r["partner"] == actor for r in self._requests))

  def _most_related(self, behaviour: str,
                    norms: list[PersonalNorm]) -> list[PersonalNorm]:
    if self._embedder is None:
      self._embedder = shared_embedder()
    scores = self._embedder.similarity([behaviour],
                                       [n.content for n in norms])[0]
    order = sorted(range(len(norms)), key=lambda i: -float(scores[i]))
    return [norms[i] for i in order[:self._rules_judged]]

  def pre_observe(self, observation: str) -> str:
    self.norm_memory.note(observation)
    me = self.get_entity().name
    events = [e for e in observations.parse_all(observation)
              if isinstance(e, observations.ActionObservation)
              and e.actor != me and not observations.is_no_action(e.text)]
    # NormMemory may still be creating norms in its own thread: wait for it.
    self.norm_memory.ensure_created()
    concurrency.run_tasks({str(i): functools.partial(self._handle, e)
                           for i, e in enumerate(events)})
    return ""

  def get_state(self) -> entity_component.ComponentState:
    with self._lock:
      return {"requests": [dict(r) for r in self._requests],
              "last_raised": dict(self._last_raised)}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._lock:
      self._requests = [dict(r) for r in state.get("requests", [])]
      self._last_raised = {k: int(v) for k, v in
                           dict(state.get("last_raised", {})).items()}

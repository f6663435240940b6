"""NormIdentifier: the receiver side and the observation path of spreading.

After a conversation the agent took part in, IdentifyNorm reads the
transcript; a notice put up for everyone (an `announce`, handed over by
the agent's port before the slot's observation) is read the same way, as
a message addressed to the agent among others, so a posted rule can be
believed as well as obeyed (communication off, neither is read); once `reflect_every` behaviours of others have been observed,
Reflect forms thoughts about them and IdentifyNorm reads those. What it
finds enters NormMemory as a candidate (deactivated, invalid) with its
provenance, for the NormEvaluator to judge.

The work is per observation, not per event: an agent who sees a whole slot
at once reflects at most once on it (on everything buffered), however many
people acted. The conversation and the reflection are read in parallel, and
their candidates are added in a fixed order (conversations first), so norm
ids do not depend on which call returned first.
"""

from __future__ import annotations

import functools
import threading

from concordia.language_model import language_model
from concordia.typing import entity_component

from crsec_concordia import observations, threads
from crsec_concordia.components._free_text import events_in
from crsec_concordia.components._shared import UsesNormMemory
from crsec_concordia.components._perception import new_events
from crsec_concordia.components.norm_memory import NORM_MEMORY_KEY
from crsec_concordia.models.concordia_adapter import structured_view
from crsec_concordia.norms import Origin
from crsec_concordia.operations import identify_norm, reflect
from crsec_concordia.rundir.format import CANDIDATE, THOUGHT

NORM_IDENTIFIER_KEY = "NormIdentifier"


class NormIdentifier(UsesNormMemory, entity_component.ContextComponent,
                     entity_component.ComponentWithLogging):
  """Turns conversations and observations into candidate norms."""

  def __init__(self, model: language_model.LanguageModel, *,
               reflect_model: language_model.LanguageModel | None = None,
               reflect_every: int = 6,
               communication: bool = True, observation: bool = True,
               norm_memory_key: str = NORM_MEMORY_KEY):
    """Creates the identifier.

    Args:
      model: the model for IdentifyNorm (any Concordia LanguageModel;
        a tagged view counts its calls apart).
      reflect_model: the model for Reflect (defaults to `model`).
      reflect_every: observed behaviours of others between reflections.
      communication: the receiver side (off in its ablation).
      observation: the observation path (off in its ablation).
      norm_memory_key: the key of the entity's NormMemory.
    """
    super().__init__()
    self._model = structured_view(model)
    self._reflect_model = structured_view(reflect_model or model)
    self._reflect_every = reflect_every
    self._communication = communication
    self._observation = observation
    self._norm_memory_key = norm_memory_key
    self._lock = threading.Lock()
    self._buffer: list[str] = []
    # Notices handed over since the last observation, in order.
    self._notices: list[str] = []
    # Each person's last perceived action: going on, it is not new.
    self._perceived: dict[str, str] = {}

  def _add_candidate(self, found: dict, origin: Origin, source_text: str,
                     source_agent: str | None) -> None:
    memory = self.norm_memory
    stamp = self.journal.last_stamp
    norm = memory.database.add(
        found["content"], found["type"], found["utility"], origin=origin,
        source_text=source_text, source_agent=source_agent,
        step=stamp.step if stamp else 0, time=stamp.time if stamp else None)
    self._record(CANDIDATE, norm_id=norm.id, content=norm.content,
                 type=norm.type, utility=norm.utility, origin=norm.origin,
                 source_agent=source_agent, source_text=source_text)

  def _from_conversation(self, event: observations.ConversationObservation
                         ) -> list[tuple]:
    memory = self.norm_memory
    other = next((p for p in event.participants if p != memory.agent_name),
                 None)
    found = identify_norm(self._model, name=memory.agent_name,
                          source_kind="conversation",
                          source_text=event.transcript,
                          on_failure=self.journal.record_failure)
    return [(found, Origin.CONVERSATION, event.transcript, other)] if found \
        else []

  def receive_notice(self, text: str) -> None:
    """A notice the agent perceives (its port's `receive_notice`), read
    with the next observation."""
    if self._communication and text.strip():
      with self._lock:
        self._notices.append(text.strip())

  def _from_notice(self, text: str) -> list[tuple]:
    found = identify_norm(self._model, name=self.norm_memory.agent_name,
                          source_kind="notice", source_text=text,
                          on_failure=self.journal.record_failure)
    return [(found, Origin.NOTICE, text, None)] if found else []

  def _from_observations(self, observed: list[str]) -> list[tuple]:
    memory = self.norm_memory
    thoughts = reflect(self._reflect_model, name=memory.agent_name,
                       persona=memory.persona, observations=observed,
                       on_failure=self.journal.record_failure)
    if not thoughts:
      return []
    self._record(THOUGHT, thoughts=thoughts, observed=observed)
    text = "\n".join(f"- {t}" for t in thoughts)
    found = identify_norm(self._model, name=memory.agent_name,
                          source_kind="thoughts", source_text=text,
                          on_failure=self.journal.record_failure)
    return [(found, Origin.OBSERVATION, text, None)] if found else []

  def waits_on_model(self, hook: str) -> bool:
    """pre_observe may call IdentifyNorm and Reflect."""
    return hook == "pre_observe"

  def pre_observe(self, observation: str) -> str:
    self.journal.note(observation)
    me = self.get_entity().name
    tasks = {}
    events = events_in(observation, self._model, self.journal)
    for i, event in enumerate(events):
      if isinstance(event, observations.ConversationObservation):
        if self._communication and me in event.participants:
          tasks[f"c{i:04d}"] = functools.partial(self._from_conversation,
                                                 event)
    with self._lock:
      notices, self._notices = self._notices, []
    for i, text in enumerate(notices):
      tasks[f"n{i:04d}"] = functools.partial(self._from_notice, text)
    if self._observation:
      with self._lock:
        # Only what is new is reflected on (an action going on is not).
        self._buffer.extend(
            observations.action_line(e.actor, e.place, e.text)
            for e in new_events(events, me, self._perceived))
    with self._lock:
      if len(self._buffer) >= self._reflect_every:
        observed, self._buffer = self._buffer, []
        tasks["r"] = functools.partial(self._from_observations, observed)
    # One task (most often) runs in this thread: no pool per agent.
    results = threads.run_tasks(tasks)
    for key in sorted(results):  # "c0000" ..., "n0000" ..., then "r".
      for found in results[key]:
        self._add_candidate(*found)
    return ""

  def get_state(self) -> entity_component.ComponentState:
    with self._lock:
      state = {"buffer": list(self._buffer),
               "perceived": dict(self._perceived)}
      if self._notices:
        state["notices"] = list(self._notices)
      return state

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._lock:
      self._buffer = [str(s) for s in state.get("buffer", [])]
      self._perceived = {str(k): str(v) for k, v in
                         dict(state.get("perceived", {})).items()}
      self._notices = [str(s) for s in state.get("notices", [])]

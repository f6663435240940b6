"""AgentJournal: what a CRSEC agent's components tell the run and each other.

The journal is not a module of the paper: it is where the modules' work is
written down. Every CRSEC component of an agent writes its structured
records here (stamped with the simulated time the agent last observed), and
reports its failed calls here; the run drains the records each slot through
the agent's port (components/port.py) for its metrics, with no prose
parsed. The journal also keeps the news between components (a conflict
noticed, a norm identified or qualified, the plan revised: reasons for the
plan-driven act to ask the model, structured_act.py) and what the agent has
learnt from its observations that every component needs: the time, and the
names of the people it has met. It is kept apart from the norm database
(NormMemory) because these are every component's, not one module's.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from concordia.components.agent import action_spec_ignored
from concordia.language_model import language_model
from concordia.typing import entity_component

from crsec_concordia import observations
from crsec_concordia.components._events import parse_events
from crsec_concordia.models.concordia_adapter import structured_view
from crsec_concordia.operations import failure_notice
from crsec_concordia.rundir.format import (CANDIDATE, FAILURE, PLAN,
                                           SYNTHESIS, VERDICT)

JOURNAL_KEY = "AgentJournal"

# The records that are news to the agent's act: something its CRSEC
# components found in this slot's observations (see `news_of`).
# A conflict is news only if the agent does not raise it in a talk (the
# ConflictDetector says so with `add_news`): a conflict it raises has its
# reaction in the conversation, whose end is a reason of its own. A norm
# identified is news until ImmediateEvaluation rejects it: a candidate
# judged not a norm, a duplicate or against its source leaves the agent
# as it was, and is no reason for a new action and its adjudication.
IDENTIFIED = "a norm identified"
# News from outside the agent, through its port (components/port.py).
TAUGHT_NEWS, NOTICE_NEWS = "a norm taught", "a notice"
NEWS = {CANDIDATE: IDENTIFIED,
        VERDICT: "a norm qualified", SYNTHESIS: "a norm qualified",
        PLAN: "the plan revised"}


def news_of(record: Mapping[str, Any]) -> str | None:
  """The reason to act anew a record gives, or None.

  A verdict or synthesis counts when accepted, a plan when revised (the
  day's first plan is the start of a task, which is a reason already).
  """
  kind = record.get("kind")
  if kind in (VERDICT, SYNTHESIS) and not record.get("accepted"):
    return None
  if kind == PLAN and not record.get("revised"):
    return None
  return NEWS.get(str(kind))


def stamp_state(stamp: observations.Stamp | None) -> list | None:
  return [stamp.day, stamp.clock, stamp.step] if stamp else None


def stamp_from_state(state: Any) -> observations.Stamp | None:
  return (observations.Stamp(int(state[0]), str(state[1]), int(state[2]))
          if state else None)


class AgentJournal(action_spec_ignored.ActionSpecIgnored,
                   entity_component.ComponentWithLogging):
  """The agent's CRSEC records, failures and news, and the time it knows."""

  def __init__(self, model: language_model.LanguageModel, *,
               agent_name: str):
    """Creates the journal.

    Args:
      model: the run's model (a failure is told in the log once per run and
        operation, and the run is told apart by its model); never called.
      agent_name: the owner, named in every record.
    """
    super().__init__("")
    self._model = structured_view(model)
    self.agent_name = agent_name
    self._lock = threading.Lock()
    self._records: list[dict[str, Any]] = []
    self.last_stamp: observations.Stamp | None = None
    self._known_names: set[str] = {agent_name}
    self._news: list[str] = []
    # Norms identified since the act last took the news, not yet rejected.
    self._identified: set[str] = set()
    self._free_text = ""

  # -- records ----------------------------------------------------------------

  def record(self, kind: str, *, publish: bool = True,
             stamp: observations.Stamp | None = None,
             **fields: Any) -> dict[str, Any]:
    """Adds a structured record stamped with the simulated time.

    With `publish`, it also goes to this component's logging channel (the
    CRSEC components publish their records on their own channels).
    """
    stamp = stamp or self.last_stamp
    rec = {"kind": kind, "agent": self.agent_name,
           "step": stamp.step if stamp else 0,
           "time": stamp.time if stamp else None,
           "day": stamp.day if stamp else None,
           "clock": stamp.clock if stamp else None, **fields}
    news = news_of(rec)
    with self._lock:
      self._records.append(rec)
      if news and news not in self._news:
        self._news.append(news)
      self._note_identified(rec)
    if publish:
      self._logging_channel({"Key": kind, "Summary": kind, "Value": rec})
    return rec

  def record_failure(self, failure: Mapping[str, Any],
                     stamp: observations.Stamp | None = None) -> None:
    """The sink the CRSEC operations report a failed call to.

    The first failure of an operation in the run is also a WARNING in the
    Python log, and its channel entry says so (operations/failure_notice.py).
    """
    fields = {k: v for k, v in failure.items() if k != "kind"}
    record = self.record(FAILURE, publish=False, stamp=stamp, **fields)
    told = failure_notice.tell_once(self._model, record)
    self._logging_channel({"Key": FAILURE, "Summary": told or FAILURE,
                           "Value": record})

  def drain_records(self) -> list[dict[str, Any]]:
    """The records since the last drain, in the order they were written
    (the port sorts them: components/port.py)."""
    with self._lock:
      records, self._records = self._records, []
    return records

  # -- what the agent has observed ---------------------------------------------

  @property
  def known_names(self) -> list[str]:
    return sorted(self._known_names)

  def note(self, observation: str) -> None:
    """Takes the simulated time and names from an observation.

    Every CRSEC component calls this first in its own pre_observe: the
    components' hooks run in parallel threads, so none may rely on this
    component's pre_observe having run before it. Idempotent.
    """
    events = parse_events(observation)
    with self._lock:
      text = observation.strip()
      if not events and text and text != self._free_text:
        # Another game master's free text carries no stamp: each new text
        # is a step of its own (cooldowns and records count steps).
        self._free_text = text
        step = (self.last_stamp.step + 1) if self.last_stamp else 1
        self.last_stamp = observations.Stamp(
            self.last_stamp.day if self.last_stamp else 1,
            self.last_stamp.clock if self.last_stamp else "00:00", step)
      for event in events:
        if self.last_stamp is None or event.stamp.step >= self.last_stamp.step:
          self.last_stamp = event.stamp
        if isinstance(event, observations.ActionObservation):
          self._known_names.add(event.actor)
        elif isinstance(event, observations.ConversationObservation):
          self._known_names.update(event.participants)

  def pre_observe(self, observation: str) -> str:
    self.note(observation)
    return ""

  def _make_pre_act_value(self) -> str:
    return ""

  def pre_act(self, action_spec) -> str:
    return ""

  # -- news -------------------------------------------------------------------

  def _note_identified(self, rec: Mapping[str, Any]) -> None:
    """Keeps "a norm identified" only while a candidate since the last act
    is not rejected. The caller holds the lock."""
    norm_id = str(rec.get("norm_id"))
    if rec["kind"] == CANDIDATE:
      self._identified.add(norm_id)
    elif (rec["kind"] == VERDICT and not rec.get("accepted")
          and norm_id in self._identified):
      self._identified.discard(norm_id)
      if not self._identified and IDENTIFIED in self._news:
        self._news.remove(IDENTIFIED)

  def add_news(self, news: str) -> None:
    """Something new a component found that no record says by itself."""
    with self._lock:
      if news not in self._news:
        self._news.append(news)

  def pop_news(self) -> list[str]:
    """What the agent's CRSEC components found new since the last call
    (a conflict noticed, a norm identified or qualified, a plan revised):
    reasons for a plan-driven act to ask the model (structured_act.py)."""
    with self._lock:
      news, self._news = self._news, []
      self._identified.clear()
    return news

  # -- state ------------------------------------------------------------------

  def get_state(self) -> entity_component.ComponentState:
    with self._lock:
      return {"last_stamp": stamp_state(self.last_stamp),
              "known_names": sorted(self._known_names),
              "records": list(self._records),
              "news": list(self._news),
              "identified": sorted(self._identified)}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._lock:
      self.last_stamp = stamp_from_state(state.get("last_stamp"))
      self._known_names = set(state.get("known_names", [self.agent_name]))
      self._records = [dict(r) for r in state.get("records", [])]
      self._news = [str(n) for n in state.get("news", [])]
      self._identified = {str(n) for n in state.get("identified", [])}

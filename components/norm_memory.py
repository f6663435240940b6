"""NormMemory: the personal norm database as a Concordia component.

CRSEC's Creation & Representation module. It owns the agent's
`NormDatabase`, runs CreateNorm once for a norm entrepreneur (an agent
given initial norms starts with those instead), holds a committed agent's
starting norms as committed (never replaced or revised), shows the
qualified norms (with utilities) in the act context, and keeps the journal of
structured CRSEC records that all of the agent's CRSEC components write and a
run drains each step for its metrics (no prose parsing).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from concordia.components.agent import action_spec_ignored
from concordia.language_model import language_model
from concordia.typing import entity_component

from crsec_concordia import observations
from crsec_concordia.components._events import parse_events
from crsec_concordia.models.concordia_adapter import structured_view
from crsec_concordia.norms import NormDatabase, Origin, RejectionReason
from crsec_concordia.operations import create_norm, failure_notice
from crsec_concordia.operations.immediate_evaluation import names_person
from crsec_concordia.rundir.format import CREATED, FAILURE

NORM_MEMORY_KEY = "NormMemory"
ENTREPRENEUR, ORDINARY = "entrepreneur", "ordinary"


# The records that are news to the agent's act: something its CRSEC
# components found in this slot's observations (see `news_of`).
# A conflict is news only if the agent does not raise it in a talk (the
# ConflictDetector says so with `add_news`): a conflict it raises has its
# reaction in the conversation, whose end is a reason of its own. A norm
# identified is news until ImmediateEvaluation rejects it: a candidate
# judged not a norm, a duplicate or against its source leaves the agent
# as it was, and is no reason for a new action and its adjudication.
IDENTIFIED = "a norm identified"
NEWS = {"candidate": IDENTIFIED,
        "verdict": "a norm qualified", "synthesis": "a norm qualified",
        "plan": "the plan revised"}


def news_of(record: Mapping[str, Any]) -> str | None:
  """The reason to act anew a record gives, or None.

  A verdict or synthesis counts when accepted, a plan when revised (the
  day's first plan is the start of a task, which is a reason already).
  """
  kind = record.get("kind")
  if kind in ("verdict", "synthesis") and not record.get("accepted"):
    return None
  if kind == "plan" and not record.get("revised"):
    return None
  return NEWS.get(str(kind))


class NormMemory(action_spec_ignored.ActionSpecIgnored,
                 entity_component.ComponentWithLogging):
  """The agent's personal norms, their creation, and the CRSEC journal."""

  def __init__(
      self,
      model: language_model.LanguageModel,
      *,
      agent_name: str,
      persona: str,
      role: str = ORDINARY,
      setting: str = "",
      initial_norm_count: int = 5,
      initial_norms: Sequence[Mapping[str, Any]] = (),
      committed: bool = False,
      show_in_context: bool = True,
      pre_act_label: str = "Personal norms",
  ):
    """Creates the database.

    Args:
      model: the model for CreateNorm (any Concordia LanguageModel;
        a tagged view counts its calls apart).
      agent_name: the owner.
      persona: the owner's description, for CreateNorm.
      role: `entrepreneur` (starts with norms) or `ordinary` (starts empty).
      setting: where the agent is, for CreateNorm.
      initial_norm_count: how many norms CreateNorm writes (paper: 5).
      initial_norms: norms given by the scenario instead of CreateNorm
        (an ordinary agent given some starts with them too).
      committed: whether the norms the agent starts with (given or
        created) are committed: held as given, whatever it meets later.
      show_in_context: whether the act prompt sees the norms (the
        compliance module; off in its ablation).
      pre_act_label: label of the norm list in the act context.
    """
    super().__init__(pre_act_label)
    if role not in (ENTREPRENEUR, ORDINARY):
      raise ValueError(f"role must be {ENTREPRENEUR} or {ORDINARY}")
    self._model = structured_view(model)
    self.agent_name = agent_name
    self.persona = persona
    self.role = role
    self._setting = setting
    self._count = initial_norm_count
    self._initial_norms = [dict(n) for n in initial_norms]
    self.committed = committed
    self._show = show_in_context
    self.database = NormDatabase(agent_name)
    self._journal_lock = threading.Lock()
    self._records: list[dict[str, Any]] = []
    self._create_lock = threading.Lock()
    self._created = role != ENTREPRENEUR and not self._initial_norms
    self.last_stamp: observations.Stamp | None = None
    self._known_names: set[str] = {agent_name}
    self._news: list[str] = []
    # Norms identified since the act last took the news, not yet rejected.
    self._identified: set[str] = set()
    self._free_text = ""

  # -- journal ----------------------------------------------------------------

  def record(self, kind: str, *, publish: bool = True,
             stamp: observations.Stamp | None = None,
             **fields: Any) -> dict[str, Any]:
    """Adds a structured record stamped with the simulated time.

    With `publish`, it also goes to this component's logging channel (the
    other CRSEC components publish their records on their own channels).
    """
    stamp = stamp or self.last_stamp
    rec = {"kind": kind, "agent": self.agent_name,
           "step": stamp.step if stamp else 0,
           "time": stamp.time if stamp else None,
           "day": stamp.day if stamp else None,
           "clock": stamp.clock if stamp else None, **fields}
    news = news_of(rec)
    with self._journal_lock:
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
    self._logging_channel({"Key": "failure", "Summary": told or "failure",
                           "Value": record})

  def drain_records(self) -> list[dict[str, Any]]:
    """The records since the last drain (a run writes them each step)."""
    with self._journal_lock:
      records, self._records = self._records, []
    return records

  @property
  def known_names(self) -> list[str]:
    return sorted(self._known_names)

  # -- creation ---------------------------------------------------------------

  def ensure_created(self, stamp: observations.Stamp | None = None) -> None:
    """CreateNorm, once, for an entrepreneur (idempotent and thread-safe).

    A run calls it for every entrepreneur at once before the first slot
    (`stamp` is then that slot's time): the norms an entrepreneur starts
    with exist before the episode does, and a first slot that had to wait
    for them made the entrepreneurs' plans and acts a call later than
    everyone else's. The hooks call it too, for agents used on their own.
    """
    with self._create_lock:
      if self._created:
        return
      self._created = True
      stamp = self.last_stamp or stamp
      norms = self._initial_norms or create_norm(
          self._model, name=self.agent_name, persona=self.persona,
          setting=self._setting, count=self._count,
          on_failure=lambda f: self.record_failure(f, stamp))
      step = stamp.step if stamp else 0
      time = stamp.time if stamp else None
      kept: dict[str, str] = {}  # Wording -> the id of the norm kept.
      for n in norms or ():
        rejection = None if self._initial_norms else self._created_rejection(
            n["content"], kept)
        norm = self.database.add(
            n["content"], n["type"], n["utility"], origin=Origin.CREATED,
            qualified=rejection is None, source_text=self.persona,
            step=step, time=time,
            committed=self.committed and rejection is None)
        if rejection is not None:
          self.database.reject(norm.id, *rejection, step=step, time=time)
        else:
          kept[_wording(norm.content)] = norm.id
        self.record(CREATED, stamp=stamp, norm_id=norm.id,
                    content=norm.content,
                    type=norm.type, utility=norm.utility,
                    accepted=rejection is None,
                    **({"reason": str(rejection[0])} if rejection else {}),
                    **({"committed": True} if norm.committed else {}))

  def _created_rejection(self, content: str, kept: dict[str, str]
                         ) -> tuple[RejectionReason, str] | None:
    """Why a created norm is not held, or None: one that names its person
    describes them (rejected as not a norm, as ImmediateEvaluation rejects
    a norm naming someone), and the same norm twice in one answer would
    count twice wherever norms are counted (the second is a duplicate;
    docs/trials/operations.md#createnorm).
    """
    if person := names_person(content, [self.agent_name]):
      return RejectionReason.NOT_A_NORM, f"names {person}"
    if same := kept.get(_wording(content)):
      return RejectionReason.DUPLICATE, f"same as {same}"
    return None

  # -- Concordia hooks --------------------------------------------------------

  def note(self, observation: str) -> None:
    """Takes the simulated time and names from an observation.

    Every CRSEC component calls this first in its own pre_observe: the
    components' hooks run in parallel threads, so none may rely on this
    component's pre_observe having run before it. Idempotent.
    """
    events = parse_events(observation)
    with self._journal_lock:
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

  def _note_identified(self, rec: Mapping[str, Any]) -> None:
    """Keeps "a norm identified" only while a candidate since the last act
    is not rejected. The caller holds the journal lock."""
    norm_id = str(rec.get("norm_id"))
    if rec["kind"] == "candidate":
      self._identified.add(norm_id)
    elif (rec["kind"] == "verdict" and not rec.get("accepted")
          and norm_id in self._identified):
      self._identified.discard(norm_id)
      if not self._identified and IDENTIFIED in self._news:
        self._news.remove(IDENTIFIED)

  def add_news(self, news: str) -> None:
    """Something new a component found that no record says by itself."""
    with self._journal_lock:
      if news not in self._news:
        self._news.append(news)

  def pop_news(self) -> list[str]:
    """What the agent's CRSEC components found new since the last call
    (a conflict noticed, a norm identified or qualified, a plan revised):
    reasons for a plan-driven act to ask the model (structured_act.py)."""
    with self._journal_lock:
      news, self._news = self._news, []
      self._identified.clear()
    return news

  def waits_on_model(self, hook: str) -> bool:
    """Whether `hook` may call the model now: only CreateNorm, once."""
    return hook in ("pre_observe", "pre_act") and not self._created

  def pre_observe(self, observation: str) -> str:
    self.note(observation)
    self.ensure_created()
    return ""

  def _make_pre_act_value(self) -> str:
    self.ensure_created()
    if not self._show:
      return ""
    norms = self.database.render_qualified()
    # Nothing while no norm is held: the act prompt is then the baseline
    # agent's, word for word, as the plan is (normative_planner.py), so the
    # arms differ only once CRSEC has given an agent a norm.
    return (f"{self.agent_name}'s personal norms (importance 100 = must "
            f"follow, 1 = may disregard):\n{norms}" if norms else "")

  def pre_act(self, action_spec) -> str:
    value = self.get_pre_act_value()
    return f"{value}\n" if value else ""

  # -- state ------------------------------------------------------------------

  def get_state(self) -> entity_component.ComponentState:
    stamp = self.last_stamp
    with self._journal_lock:
      records = list(self._records)
    return {
        "database": self.database.to_json(),
        "created": self._created,
        "last_stamp": [stamp.day, stamp.clock, stamp.step] if stamp else None,
        "known_names": sorted(self._known_names),
        "records": records,
        **self._news_snapshot(),
    }

  def _news_snapshot(self) -> dict[str, list[str]]:
    """The news and the norms identified behind it, read together."""
    with self._journal_lock:
      return {"news": list(self._news),
              "identified": sorted(self._identified)}

  def set_state(self, state: entity_component.ComponentState) -> None:
    self.database.load_json(dict(state["database"]))
    self._created = bool(state["created"])
    stamp = state.get("last_stamp")
    self.last_stamp = (observations.Stamp(int(stamp[0]), str(stamp[1]),
                                          int(stamp[2])) if stamp else None)
    self._known_names = set(state.get("known_names", [self.agent_name]))
    with self._journal_lock:
      self._records = [dict(r) for r in state.get("records", [])]
      self._news = [str(n) for n in state.get("news", [])]
      self._identified = {str(n) for n in state.get("identified", [])}


def _wording(content: str) -> str:
  """A norm's words, case, spacing and end punctuation aside."""
  return " ".join(content.lower().split()).rstrip(".!")

"""NormMemory: the personal norm database as a Concordia component.

CRSEC's Creation & Representation module. It owns the agent's
`NormDatabase`, runs CreateNorm once for a norm entrepreneur (an agent
given initial norms starts with those instead), holds a committed agent's
starting norms as committed (never replaced or revised), shows the
qualified norms (with utilities) in the act context, and takes a norm
taught to the agent from outside (`receive`, through the agent's port:
components/port.py). Its records go to the agent's journal (AgentJournal,
found by key), as every CRSEC component's do.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from concordia.components.agent import action_spec_ignored
from concordia.language_model import language_model
from concordia.typing import entity_component

from crsec_concordia import observations
from crsec_concordia.components.agent_journal import (JOURNAL_KEY,
                                                      TAUGHT_NEWS,
                                                      AgentJournal)
from crsec_concordia.models.concordia_adapter import structured_view
from crsec_concordia.norms import ROLES, NormDatabase, Origin, RejectionReason
from crsec_concordia.operations import create_norm
from crsec_concordia.operations.immediate_evaluation import names_person
from crsec_concordia.rundir.format import CREATED, TAUGHT

NORM_MEMORY_KEY = "NormMemory"
ENTREPRENEUR, ORDINARY = ROLES
# The state keys an older checkpoint kept here, now the journal's.
_JOURNAL_STATE = ("last_stamp", "known_names", "records", "news",
                  "identified")


class NormMemory(action_spec_ignored.ActionSpecIgnored,
                 entity_component.ComponentWithLogging):
  """The agent's personal norms and their creation."""

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
      journal_key: str = JOURNAL_KEY,
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
      journal_key: the entity's AgentJournal, where the records go.
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
    self._journal_key = journal_key
    self.database = NormDatabase(agent_name)
    self._create_lock = threading.Lock()
    self._created = role != ENTREPRENEUR and not self._initial_norms

  @property
  def journal(self) -> AgentJournal:
    return self.get_entity().get_component(self._journal_key,
                                           type_=AgentJournal)

  def _record(self, kind: str, stamp: observations.Stamp | None,
              **fields: Any) -> dict[str, Any]:
    """A record in the journal, published on this component's channel."""
    record = self.journal.record(kind, publish=False, stamp=stamp, **fields)
    self._logging_channel({"Key": kind, "Summary": kind, "Value": record})
    return record

  # -- creation ---------------------------------------------------------------

  def ensure_created(self, stamp: observations.Stamp | None = None) -> None:
    """CreateNorm, once, for an entrepreneur (idempotent and thread-safe).

    A run calls it for every entrepreneur at once before the first slot
    (`stamp` is then that slot's time; through the agent's port,
    `set_up`): the norms an entrepreneur starts with exist before the
    episode does, and a first slot that had to wait for them made the
    entrepreneurs' plans and acts a call later than everyone else's. The
    hooks call it too, for agents used on their own.
    """
    with self._create_lock:
      if self._created:
        return
      self._created = True
      journal = self.journal
      stamp = journal.last_stamp or stamp
      norms = self._initial_norms or create_norm(
          self._model, name=self.agent_name, persona=self.persona,
          setting=self._setting, count=self._count,
          on_failure=lambda f: journal.record_failure(f, stamp))
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
        self._record(CREATED, stamp, norm_id=norm.id,
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

  def receive(self, content: str, type: str, utility: int, *,  # pylint: disable=redefined-builtin
              committed: bool = False, origin: Origin | str = Origin.TAUGHT,
              source_text: str = "",
              stamp: observations.Stamp | None = None) -> str:
    """A norm given from outside (an intervention): held qualified from
    now, committed or not, with no evaluation (what the agent is taught
    it holds, as an entrepreneur holds its initial norms); recorded as
    TAUGHT. Returns the norm's id."""
    journal = self.journal
    stamp = stamp or journal.last_stamp
    norm = self.database.add(
        content, type, utility, origin=origin, qualified=True,
        source_text=source_text, step=stamp.step if stamp else 0,
        time=stamp.time if stamp else None, committed=committed)
    self._record(TAUGHT, stamp, norm_id=norm.id, content=norm.content,
                 type=norm.type, utility=norm.utility, origin=norm.origin,
                 **({"committed": True} if norm.committed else {}))
    journal.add_news(TAUGHT_NEWS)
    return norm.id

  # -- Concordia hooks --------------------------------------------------------

  def waits_on_model(self, hook: str) -> bool:
    """Whether `hook` may call the model now: only CreateNorm, once."""
    return hook in ("pre_observe", "pre_act") and not self._created

  def pre_observe(self, observation: str) -> str:
    self.journal.note(observation)
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
    return {"database": self.database.to_json(), "created": self._created}

  def set_state(self, state: entity_component.ComponentState) -> None:
    self.database.load_json(dict(state["database"]))
    self._created = bool(state["created"])
    if "records" in state:
      # An older checkpoint kept the journal here: it goes to the journal
      # (whose own state such a checkpoint does not hold).
      self.journal.set_state({k: state[k] for k in _JOURNAL_STATE
                              if k in state})


def _wording(content: str) -> str:
  """A norm's words, case, spacing and end punctuation aside."""
  return " ".join(content.lower().split()).rstrip(".!")

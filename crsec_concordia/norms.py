"""The personal norm and the personal norm database (CRSEC's Representation).

A personal norm is the paper's quintuple (content, utility, type, activated,
valid) plus what the original code lacked and what makes diffusion
measurable: a stable id, where it came from (origin, source text, source
agent), when (simulated step and time), which norms it replaced or replaced
it, and, if rejected, why. Pure Python: no LLM, no Concordia.

Lifecycle (enforced here, so no component can skip a state):
  candidate  = activated False, valid False, no rejection reason
  qualified  = activated True,  valid True
  replaced   = activated False, valid True   (by an abstract norm)
  rejected   = activated False, valid False, with a rejection reason

A committed norm (one a committed agent starts with) is qualified for good:
no transition leaves it, so nothing that composes the components can
replace, revise or drop it.
"""

from __future__ import annotations

import dataclasses
import enum
import threading
from collections.abc import Iterable
from typing import Any

NORM_TYPES = ("descriptive", "injunctive")
# An agent's role: a norm entrepreneur starts with norms of its own
# (CreateNorm); an ordinary agent learns them from others.
ROLES = ("entrepreneur", "ordinary")
MIN_UTILITY, MAX_UTILITY = 1, 100


class Origin(enum.StrEnum):
  CREATED = "created"            # CreateNorm, entrepreneurs at the start
  CONVERSATION = "conversation"  # IdentifyNorm on a conversation
  OBSERVATION = "observation"    # Reflect + IdentifyNorm on observations
  NOTICE = "notice"              # IdentifyNorm on a notice (an announce)
  SYNTHESIS = "synthesis"        # LongTermSynthesis
  TAUGHT = "taught"              # Given from outside (an intervention)


class RejectionReason(enum.StrEnum):
  """Why ImmediateEvaluation rejected a candidate (the original's -2/-3/-4)."""
  INCONSISTENT_WITH_SOURCE = "inconsistent_with_source"
  DUPLICATE = "duplicate"
  NOT_A_NORM = "not_a_norm"
  CONFLICTS_WITH_NORM = "conflicts_with_norm"


class Status(enum.StrEnum):
  CANDIDATE = "candidate"
  QUALIFIED = "qualified"
  REPLACED = "replaced"
  REJECTED = "rejected"


class LifecycleError(ValueError):
  """A transition the CRSEC lifecycle does not allow."""


def clamp_utility(value: int | float) -> int:
  return int(max(MIN_UTILITY, min(MAX_UTILITY, round(value))))


@dataclasses.dataclass
class PersonalNorm:
  """One entry of an agent's personal norm database."""
  id: str
  content: str
  utility: int
  type: str
  activated: bool = False
  valid: bool = False
  origin: str = Origin.CONVERSATION.value
  source_text: str = ""
  source_agent: str | None = None
  step: int | None = None
  time: str | None = None
  replaces: list[str] = dataclasses.field(default_factory=list)
  replaced_by: str | None = None
  rejection_reason: str | None = None
  rejection_detail: str | None = None
  evaluated_step: int | None = None
  evaluated_time: str | None = None
  committed: bool = False

  def __post_init__(self):
    if self.type not in NORM_TYPES:
      raise ValueError(f"norm type must be one of {NORM_TYPES}, not {self.type!r}")
    if not MIN_UTILITY <= self.utility <= MAX_UTILITY:
      raise ValueError(f"utility must be in 1..100, not {self.utility}")
    if not self.content.strip():
      raise ValueError("a norm needs content")

  @property
  def qualified(self) -> bool:
    return self.activated and self.valid

  @property
  def status(self) -> Status:
    if self.activated and self.valid:
      return Status.QUALIFIED
    if self.valid:
      return Status.REPLACED
    if self.rejection_reason:
      return Status.REJECTED
    return Status.CANDIDATE

  def to_json(self) -> dict[str, Any]:
    data = dataclasses.asdict(self)
    if not self.committed:  # Absent when false: snapshots read as before.
      del data["committed"]
    data["status"] = self.status.value
    return data

  @classmethod
  def from_json(cls, data: dict[str, Any]) -> "PersonalNorm":
    fields = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in fields})


class NormDatabase:
  """An agent's personal norms, with the lifecycle and synthesis counter.

  Thread-safe: Concordia runs an entity's components in parallel threads,
  and the identifier, evaluator and planner all touch the same database.
  """

  def __init__(self, owner: str):
    self.owner = owner
    self._lock = threading.RLock()
    self._norms: dict[str, PersonalNorm] = {}
    self._next_id = 1
    self.counter = 0  # Sum of utilities accepted since the last synthesis.

  # -- reading --------------------------------------------------------------

  def get(self, norm_id: str) -> PersonalNorm:
    with self._lock:
      return self._norms[norm_id]

  def all(self) -> list[PersonalNorm]:
    with self._lock:
      return list(self._norms.values())

  def qualified(self) -> list[PersonalNorm]:
    with self._lock:
      return [n for n in self._norms.values() if n.qualified]

  def revisable(self) -> list[PersonalNorm]:
    """The qualified norms synthesis may condense: all but committed ones."""
    with self._lock:
      return [n for n in self._norms.values()
              if n.qualified and not n.committed]

  def candidates(self) -> list[PersonalNorm]:
    with self._lock:
      return [n for n in self._norms.values() if n.status == Status.CANDIDATE]

  def __len__(self) -> int:
    with self._lock:
      return len(self._norms)

  # -- transitions ----------------------------------------------------------

  def _new_id(self) -> str:
    norm_id = f"{self.owner.split()[0].lower()}-{self._next_id}"
    self._next_id += 1
    return norm_id

  def add(self, content: str, type: str, utility: int, *,  # pylint: disable=redefined-builtin
          origin: Origin | str, qualified: bool = False,
          source_text: str = "", source_agent: str | None = None,
          step: int | None = None, time: str | None = None,
          replaces: Iterable[str] = (), committed: bool = False
          ) -> PersonalNorm:
    """Adds a candidate, or a qualified norm for CreateNorm's seeds (a
    committed one is qualified and stays so)."""
    if committed and not qualified:
      raise LifecycleError("a committed norm is held from the start: "
                           "add it qualified")
    with self._lock:
      norm = PersonalNorm(
          id=self._new_id(), content=content.strip(), type=type,
          utility=clamp_utility(utility), activated=qualified, valid=qualified,
          origin=str(Origin(origin)), source_text=source_text,
          source_agent=source_agent, step=step, time=time,
          replaces=list(replaces), committed=committed)
      self._norms[norm.id] = norm
      return norm

  def _candidate(self, norm_id: str) -> PersonalNorm:
    norm = self._norms.get(norm_id)
    if norm is None:
      raise LifecycleError(f"no norm {norm_id!r} in {self.owner}'s database")
    if norm.status != Status.CANDIDATE:
      raise LifecycleError(f"{norm_id} is {norm.status}, not a candidate")
    return norm

  def qualify(self, norm_id: str, utility: int, *, type: str | None = None,  # pylint: disable=redefined-builtin
              step: int | None = None, time: str | None = None
              ) -> PersonalNorm:
    """A candidate passed ImmediateEvaluation: it counts toward synthesis."""
    with self._lock:
      norm = self._candidate(norm_id)
      if type is not None:
        if type not in NORM_TYPES:
          raise ValueError(f"norm type must be one of {NORM_TYPES}")
        norm.type = type
      norm.utility = clamp_utility(utility)
      norm.activated = norm.valid = True
      norm.evaluated_step, norm.evaluated_time = step, time
      self.counter += norm.utility
      return norm

  def reject(self, norm_id: str, reason: RejectionReason | str,
             detail: str = "", *, step: int | None = None,
             time: str | None = None) -> PersonalNorm:
    with self._lock:
      norm = self._candidate(norm_id)
      norm.rejection_reason = str(RejectionReason(reason))
      norm.rejection_detail = detail or None
      norm.evaluated_step, norm.evaluated_time = step, time
      return norm

  def replace(self, source_ids: Iterable[str], abstract_id: str) -> None:
    """LongTermSynthesis: a qualified abstract norm replaces its sources."""
    with self._lock:
      abstract = self._norms.get(abstract_id)
      if abstract is None or not abstract.qualified:
        raise LifecycleError(f"{abstract_id} is not a qualified norm")
      sources = [self._norms.get(i) for i in source_ids]
      for norm_id, norm in zip(source_ids, sources):
        if norm is None or not norm.qualified:
          raise LifecycleError(f"{norm_id} is not a qualified norm to replace")
        if norm.committed:
          raise LifecycleError(f"{norm_id} is committed: nothing replaces it")
      for norm in sources:
        norm.activated = False
        norm.replaced_by = abstract_id

  def reset_counter(self) -> None:
    with self._lock:
      self.counter = 0

  # -- persistence ----------------------------------------------------------

  def to_json(self) -> dict[str, Any]:
    with self._lock:
      return {"owner": self.owner, "next_id": self._next_id,
              "counter": self.counter,
              "norms": [n.to_json() for n in self._norms.values()]}

  @classmethod
  def from_json(cls, data: dict[str, Any]) -> "NormDatabase":
    db = cls(data["owner"])
    db.load_json(data)
    return db

  def load_json(self, data: dict[str, Any]) -> None:
    with self._lock:
      self.owner = data["owner"]
      self._next_id = int(data["next_id"])
      self.counter = int(data["counter"])
      self._norms = {}
      for item in data["norms"]:
        norm = PersonalNorm.from_json(item)
        self._norms[norm.id] = norm

  def render_qualified(self) -> str:
    """The qualified norms as a numbered list, for prompts and pre-act:
    each with its type and importance out of 100, the list's header saying
    once what the number is (components/norm_memory.py)."""
    norms = self.qualified()
    return "\n".join(
        f"{i}. {n.content} ({n.type}, {n.utility}/100)"
        for i, n in enumerate(norms, 1))

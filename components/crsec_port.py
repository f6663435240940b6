"""CrsecPort: the port (port.py) of an agent built from this project's parts.

Both entity prefabs add it under PORT_KEY. It answers for the agent from
the components the agent has, found by key: the norm database (NormMemory),
the journal (AgentJournal), the ConflictDetector's talk requests and
questions, and the planner's own journal for an agent without
AgentJournal. A baseline agent has only the planner, so its answers are
empty where it has no CRSEC (no norms, no talks) and its records are its
planner's; a norm taught to it is only something it was told (it goes to
its memory, as a notice does), since it has no database to hold it in.
The component adds nothing to the act's context and keeps no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from concordia.components.agent import memory as memory_lib
from concordia.components.agent import observation as observation_lib
from concordia.typing import entity_component

from crsec_concordia import gate_tally, observations
from crsec_concordia.components.agent_journal import (JOURNAL_KEY,
                                                      NOTICE_NEWS,
                                                      TAUGHT_NEWS)
from crsec_concordia.components.conflict_detector import CONFLICT_DETECTOR_KEY
from crsec_concordia.components.norm_identifier import NORM_IDENTIFIER_KEY
from crsec_concordia.components.norm_memory import NORM_MEMORY_KEY
from crsec_concordia.components.normative_planner import NORMATIVE_PLANNER_KEY
from crsec_concordia.components.port import record_order
from crsec_concordia.operations.detect_conflict_sharing import SharedJudgements
from crsec_concordia.rundir.format import NOTICE, TAUGHT

# What the agent remembers of a norm it was taught (a baseline agent, which
# keeps no norms) and of a notice, among its observations.
TAUGHT_TEXT = "{name} was told a rule: {content}"


class CrsecPort(entity_component.ContextComponent):
  """The agent's port, answered from its components (see the module)."""

  def __init__(self, *, norm_memory_key: str = NORM_MEMORY_KEY,
               journal_key: str = JOURNAL_KEY,
               conflict_detector_key: str = CONFLICT_DETECTOR_KEY,
               planner_key: str = NORMATIVE_PLANNER_KEY,
               memory_key: str = memory_lib.DEFAULT_MEMORY_COMPONENT_KEY,
               identifier_key: str = NORM_IDENTIFIER_KEY):
    super().__init__()
    self._keys = {"memory": norm_memory_key, "journal": journal_key,
                  "detector": conflict_detector_key, "planner": planner_key,
                  "bank": memory_key, "identifier": identifier_key}

  def _part(self, role: str) -> Any:
    """The agent's component in `role`, or None if it has none."""
    components = self.get_entity().get_all_context_components()  # type: ignore[attr-defined]
    return components.get(self._keys[role])

  def _news(self, news: str) -> None:
    """A reason for the act to ask the model anew (structured_act.py)."""
    for role in ("journal", "planner"):
      part = self._part(role)
      if part is not None:
        part.add_news(news)
        return

  def _record(self, kind: str, stamp: observations.Stamp | None,
              **fields: Any) -> None:
    """A record in the agent's journal, or its planner's without one."""
    journal = self._part("journal")
    if journal is not None:
      journal.record(kind, stamp=stamp, **fields)
      return
    planner = self._part("planner")
    if planner is not None:
      planner.record(kind, **fields)

  # -- what the agent holds and hands over --------------------------------------

  def held_norms(self) -> list[str]:
    memory = self._part("memory")
    return ([] if memory is None else
            [n.content for n in memory.database.qualified()])

  def norm_snapshot(self) -> Mapping[str, Any] | None:
    memory = self._part("memory")
    return None if memory is None else memory.database.to_json()

  def talk_requests(self) -> list[dict[str, Any]]:
    detector = self._part("detector")
    return [] if detector is None else detector.pop_conversation_requests()

  def drain_records(self) -> list[dict[str, Any]]:
    """The journal's records, and the planner's (an agent without a
    journal keeps its records there), in their fixed order."""
    records = []
    for role in ("journal", "planner"):
      part = self._part(role)
      if part is not None:
        records.extend(part.drain_records())
    return sorted(records, key=record_order)

  def act_reasons(self) -> list[str]:
    getter = getattr(self.get_entity(), "get_act_component", None)
    act = getter() if callable(getter) else None
    return list(getattr(act, "last_reasons", None) or ())

  # -- setup and shared questions -------------------------------------------------

  def gate_counts(self) -> dict[str, int]:
    components = self.get_entity().get_all_context_components()  # type: ignore[attr-defined]
    return gate_tally.summed(c.gate_counts() for c in components.values()
                             if c is not self and hasattr(c, "gate_counts"))

  def set_up(self, stamp: observations.Stamp | None) -> None:
    memory = self._part("memory")
    if memory is not None:
      memory.ensure_created(stamp)

  def detects_conflicts(self) -> bool:
    return self._part("detector") is not None

  def share_judgements(self, shared: SharedJudgements | None) -> None:
    detector = self._part("detector")
    if detector is not None:
      detector.share_judgements(shared)

  # -- what the world gives it ----------------------------------------------------

  def receive_norm(self, content: str, type: str, utility: int, *,  # pylint: disable=redefined-builtin
                   committed: bool = False,
                   stamp: observations.Stamp | None = None) -> str | None:
    """Held qualified in the agent's database (NormMemory.receive); an
    agent with none remembers being told it, recorded as not held, and
    None is returned."""
    memory = self._part("memory")
    if memory is not None:
      return memory.receive(content, type, utility, committed=committed,
                            stamp=stamp)
    name = self.get_entity().name
    self._remember(TAUGHT_TEXT.format(name=name, content=content.strip()))
    self._record(TAUGHT, stamp, norm_id=None, content=content.strip(),
                 type=type, utility=utility, held=False,
                 **({"committed": True} if committed else {}))
    self._news(TAUGHT_NEWS)
    return None

  def receive_notice(self, text: str,
                     stamp: observations.Stamp | None = None) -> None:
    """Among the agent's observations (its memory, which the act's recent
    events read; Concordia's memory takes it at the end of the agent's next
    hook, as it takes an observation), recorded as NOTICE, and handed to
    its NormIdentifier, which reads it with the slot's observation."""
    self._remember(text.strip())
    self._record(NOTICE, stamp, text=text.strip())
    self._news(NOTICE_NEWS)
    identifier = self._part("identifier")
    if identifier is not None:
      identifier.receive_notice(text)

  def _remember(self, text: str) -> None:
    bank = self._part("bank")
    if bank is not None:
      bank.add(f"{observation_lib.OBSERVATION_TAG} {text}")

  def get_state(self) -> entity_component.ComponentState:
    return {}

  def set_state(self, state: entity_component.ComponentState) -> None:
    del state

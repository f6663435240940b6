"""Helpers the CRSEC components share (not a component)."""

from __future__ import annotations

from crsec_concordia.components.agent_journal import JOURNAL_KEY, AgentJournal
from crsec_concordia.components.norm_memory import NORM_MEMORY_KEY, NormMemory


class UsesNormMemory:
  """Mixin: find the entity's NormMemory and AgentJournal by key (set at
  construction).

  `_record` writes a structured record to the agent's journal (which a run
  drains for its metrics, through the agent's port) and publishes it on
  this component's own logging channel, so Concordia's log shows each
  component's work under its name.
  """

  _norm_memory_key: str = NORM_MEMORY_KEY
  _journal_key: str = JOURNAL_KEY

  @property
  def norm_memory(self) -> NormMemory:
    return self.get_entity().get_component(  # type: ignore[attr-defined]
        self._norm_memory_key, type_=NormMemory)

  @property
  def journal(self) -> AgentJournal:
    return self.get_entity().get_component(  # type: ignore[attr-defined]
        self._journal_key, type_=AgentJournal)

  def _record(self, kind: str, stamp=None, **fields) -> dict:
    record = self.journal.record(kind, publish=False, stamp=stamp, **fields)
    self._logging_channel(  # type: ignore[attr-defined]
        {"Key": kind, "Summary": kind, "Value": record})
    return record

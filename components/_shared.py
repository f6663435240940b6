"""Helpers the CRSEC components share (not a component)."""

from __future__ import annotations

from crsec_concordia.components.norm_memory import NORM_MEMORY_KEY, NormMemory


class UsesNormMemory:
  """Mixin: find the entity's NormMemory by key (set at construction)."""

  _norm_memory_key: str = NORM_MEMORY_KEY

  @property
  def norm_memory(self) -> NormMemory:
    return self.get_entity().get_component(  # type: ignore[attr-defined]
        self._norm_memory_key, type_=NormMemory)

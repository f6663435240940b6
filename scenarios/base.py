"""The base of every model of the scenario file (loader.py, places.py,
population.py), and the initial norm that agents and population groups share.

Frozen, because one Scenario is shared by the runner, the game master and
the metrics; closed (`extra="forbid"`), so that a misspelt key is a
problem with a fix rather than a setting silently ignored; and a key the
format gained after runs were recorded with it is left out of a dump
unless the file gave it (`OPTIONAL_KEYS`), so that a scenario written
before dumps, and its runs record scenario.json and config.json, as before.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pydantic

from crsec_concordia.scenarios.checks import NormType, Text, Utility


class ScenarioModel(pydantic.BaseModel):
  """A part of the scenario file."""
  model_config = pydantic.ConfigDict(extra="forbid", str_strip_whitespace=True,
                                     frozen=True)
  OPTIONAL_KEYS: ClassVar[frozenset[str]] = frozenset()

  def _left_out(self) -> set[str]:
    """The keys a dump leaves out."""
    return set(self.OPTIONAL_KEYS - self.model_fields_set)

  @pydantic.model_serializer(mode="wrap")
  def _dump(self, handler: pydantic.SerializerFunctionWrapHandler
            ) -> dict[str, Any]:
    data = handler(self)
    for key in self._left_out():
      data.pop(key, None)
    return data


class InitialNorm(ScenarioModel):
  content: Text
  type: NormType
  utility: Utility

"""Which model a calibration measured: its name, endpoint kind and prompts.

A model's judgement error is a property of the model and of the words it
is asked in: the same model asked in other words errs otherwise, and
another model's error says nothing of this one's. So a calibration is
keyed by the model's name, the kind of endpoint that served it (the
embedded llama.cpp model, an OpenAI-compatible endpoint, a model factory
named on the command line, or a model a program handed over) and a hash of the judgement prompts
(crsec_concordia/judgement_prompts.py computes it from the prompts the
calls use: this package sits below them, and is handed the hash).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from crsec_concordia.models import factory
from crsec_concordia.models.config import EndpointConfig

EMBEDDED = "embedded"
ENDPOINT = "openai-compatible"
GIVEN = "given"  # A model a program handed to run_episode (tests, benches).
FACTORY = factory.KIND  # --model-factory's, known by its module:function.


@dataclasses.dataclass(frozen=True)
class ModelIdentity:
  """A calibration's key. `prompts` is None for one recorded before the
  prompts were hashed (or a run that did not record them)."""
  name: str
  endpoint: str
  prompts: str | None

  @classmethod
  def of_endpoint(cls, config: EndpointConfig,
                  prompts: str | None) -> "ModelIdentity":
    """The identity of the model an endpoint serves, asked in the prompts
    whose hash is `prompts` (judgement_prompts.identity_of: today's)."""
    return cls.of_described(config.describe(), prompts)

  @classmethod
  def of_described(cls, described: Mapping[str, Any],
                   prompts: str | None = None) -> "ModelIdentity":
    """From what a run records of its model (run.json's `model`:
    EndpointConfig.describe, with `judgement_prompts`)."""
    endpoint = str(described.get("endpoint") or "")
    kind = endpoint if endpoint in (EMBEDDED, GIVEN, FACTORY) else ENDPOINT
    return cls(str(described.get("model") or endpoint or "unnamed model"),
               kind, prompts or described.get("judgement_prompts"))

  @classmethod
  def from_dict(cls, data: Mapping[str, Any]) -> "ModelIdentity":
    return cls(str(data["name"]), str(data["endpoint"]), data.get("prompts"))

  def to_dict(self) -> dict[str, Any]:
    return dataclasses.asdict(self)

  def same_model(self, other: "ModelIdentity") -> bool:
    """The same model served the same way (the prompts may differ)."""
    return (self.name, self.endpoint) == (other.name, other.endpoint)

  @property
  def file_name(self) -> str:
    """The calibration's file name: model, endpoint kind and prompts."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", self.name).strip("-.") or "model"
    return f"{slug}.{self.endpoint}.{self.prompts or 'unhashed'}.json"

  def __str__(self) -> str:
    where = {EMBEDDED: "the embedded model", GIVEN: "a given model",
             FACTORY: "a model factory"}.get(
        self.endpoint, "an OpenAI-compatible endpoint")
    return f"{self.name} ({where})"

"""Which model a calibration measured: its name, endpoint kind and prompts.

A model's judgement error is a property of the model and of the words it
is asked in: the same model asked in other words errs otherwise, and
another model's error says nothing of this one's. So a calibration is
keyed by the model's name, the kind of endpoint that served it (the
embedded llama.cpp model, an OpenAI-compatible endpoint, or a model a
program handed over) and a hash of the judgement prompts. The hash is
computed from the prompt builders and answer schemas the run actually
calls (the referee's general call and its retry, the doer check, the
second look, an occasion's check, DetectConflict and the matcher's LLM
judge), each rendered on fixed placeholder inputs: a change to any of
their words or schemas changes the hash, and a calibration made before it
is then reported as made with other prompts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from crsec_concordia.game_masters.referee import (doer_check, general_call,
                                                  occasion_check, second_look)
from crsec_concordia.metrics.classifiers import judge
from crsec_concordia.models.config import EndpointConfig
from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations.detect_conflict import Observed
from crsec_concordia.operations.detect_conflict import prompt as conflict_prompt
from crsec_concordia.operations.detect_conflict import schema as conflict_schema

EMBEDDED = "embedded"
ENDPOINT = "openai-compatible"
GIVEN = "given"  # A model a program handed to run_episode (tests, benches).
HASH_CHARS = 12

# Placeholder inputs the prompts are rendered on (never shown to a model).
_IDS = ("behaviour_a", "behaviour_b")
_BEHAVIOURS = [{"id": i, "description": f"{{description of {i}}}"}
               for i in _IDS]
_PLACES = [{"id": "place_a", "description": "{description of place_a}"}]
_CASE = dict(actor="{actor}", action="{action}")


def _rendered() -> list[Any]:
  """Every judgement prompt and schema, rendered on the placeholders."""
  general = general_call.adjudication_prompt(
      place="{setting}", behaviours=_BEHAVIOURS, **_CASE)
  observed = Observed(
      "{actor}", "{action}", "{place}",
      PersonalNorm(id="n", content="{norm}", utility=80, type="injunctive"),
      "{focus}")
  return [
      general,
      general_call.adjudication_prompt(
          place="{setting}", behaviours=_BEHAVIOURS, situation="{situation}",
          default_place="{default place}", **_CASE),
      general_call.adjudication_prompt(
          place="{setting}", behaviours=_BEHAVIOURS, places=_PLACES,
          here="place_a", **_CASE),
      general_call.adjudication_schema(_IDS),
      general_call.retry_prompt(general, "{evidence}", "{actor}", _IDS),
      doer_check.doer_prompt("{action}", "{description}"), doer_check.SCHEMA,
      second_look.look_prompt(place="{setting}", behaviours=_BEHAVIOURS,
                              **_CASE),
      second_look.look_prompt(place="{setting}", behaviours=_BEHAVIOURS,
                              reverse=True, **_CASE),
      second_look.look_schema(_IDS),
      occasion_check.check_prompt(place="{setting}", situation="{situation}",
                                  behaviours=_BEHAVIOURS, **_CASE),
      occasion_check.check_schema(_IDS),
      conflict_prompt("{observer}", [observed]),
      conflict_prompt(None, [observed]),  # Asked of no one: shared questions.
      conflict_schema([observed]),
      judge.prompt("{target}", "{norm}"), judge.JUDGE_SCHEMA]


def prompts_hash() -> str:
  """The judgement prompts' hash: the first HASH_CHARS hex digits of the
  SHA-256 of their rendered words and schemas."""
  text = json.dumps(_rendered(), sort_keys=True, ensure_ascii=False)
  return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


@dataclasses.dataclass(frozen=True)
class ModelIdentity:
  """A calibration's key. `prompts` is None for one recorded before the
  prompts were hashed (or a run that did not record them)."""
  name: str
  endpoint: str
  prompts: str | None

  @classmethod
  def of_endpoint(cls, config: EndpointConfig) -> "ModelIdentity":
    """The identity of the model an endpoint serves, with today's prompts."""
    return cls.of_described(config.describe(), prompts_hash())

  @classmethod
  def of_described(cls, described: Mapping[str, Any],
                   prompts: str | None = None) -> "ModelIdentity":
    """From what a run records of its model (run.json's `model`:
    EndpointConfig.describe, with `judgement_prompts`)."""
    endpoint = str(described.get("endpoint") or "")
    kind = endpoint if endpoint in (EMBEDDED, GIVEN) else ENDPOINT
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
    where = {EMBEDDED: "the embedded model", GIVEN: "a given model"}.get(
        self.endpoint, "an OpenAI-compatible endpoint")
    return f"{self.name} ({where})"

"""The hash of the judgement prompts a run's model is asked in.

A model's judgement error holds for the words it was measured in
(calibration/identity.py keys a calibration by this hash). The hash is
computed from the prompt builders and answer schemas the run actually
calls (the referee's general call and its retry, the doer check, the
second look, an occasion's check, DetectConflict and the matcher's LLM
judge), each rendered on fixed placeholder inputs: a change to any of
their words or schemas changes the hash, and a calibration made before it
is then reported as made with other prompts. It sits above every owner of
those prompts, so that the calibration below them imports none.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.game_masters.referee import (batch_prompts, doer_check,
                                                  general_call, occasion_check,
                                                  second_look)
from crsec_concordia.models.config import EndpointConfig
from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations.detect_conflict import Observed
from crsec_concordia.operations.detect_conflict import prompt as conflict_prompt
from crsec_concordia.operations.detect_conflict import schema as conflict_schema
from crsec_concordia.operations import detect_conflict_batch as conflict_batch
from crsec_concordia.operations import judge_means

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
      judge_means.prompt("{target}", "{norm}"), judge_means.JUDGE_SCHEMA]


def prompts_hash() -> str:
  """The judgement prompts' hash: the first HASH_CHARS hex digits of the
  SHA-256 of their rendered words and schemas."""
  return _hash(_rendered())


def _rendered_batches() -> list[Any]:
  """The referee's batch prompts and schemas (a place's slot judged
  together), rendered on the placeholders."""
  keys = [batch_prompts.key_of(n) for n in range(2)]
  items = [dict(key=k, actor=f"{{actor {k}}}", action=f"{{action {k}}}",
                here="place_a", situation="{situation}") for k in keys]
  none = general_call.none_token(_IDS)
  return [
      batch_prompts.batch_prompt(place="{setting}", behaviours=_BEHAVIOURS,
                                 items=items, places=None,
                                 default_place="{default place}", doer=True),
      batch_prompts.batch_prompt(place="{setting}", behaviours=_BEHAVIOURS,
                                 items=items, places=_PLACES,
                                 default_place=None, doer=False),
      batch_prompts.batch_schema(keys, _IDS, ["place_a"], True),
      batch_prompts.retry_note({keys[0]: ("{actor}", "{evidence}")}, _IDS),
      batch_prompts.batch_look_prompt(
          place="{setting}", items=[dict(item, listed=_BEHAVIOURS)
                                    for item in items],
          none=none, reverse=True, doer=True),
      batch_prompts.batch_look_schema({k: _IDS for k in keys}, none, True)]


def _hash(rendered: list[Any]) -> str:
  text = json.dumps(rendered, sort_keys=True, ensure_ascii=False)
  return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def conflict_batch_prompts_hash() -> str:
  """The hash of DetectConflict's batch prompt and schema
  (calibration/batching.py keys its measurements by it)."""
  observed = [Observed(f"{{actor {k}}}", f"{{action {k}}}", "{place}",
                       PersonalNorm(id=f"n{k}", content=f"{{norm {k}}}",
                                    utility=80, type="injunctive"),
                       f"{{focus {k}}}") for k in range(2)]
  return _hash([conflict_batch.prompt(observed),
                conflict_batch.schema(observed)])


def batch_prompts_hash() -> str:
  """The hash of the referee's batch prompts (calibration/batching.py
  keys its measurements by it), as prompts_hash does the others."""
  return _hash(_rendered_batches())


def identity_of(config: EndpointConfig) -> ModelIdentity:
  """The identity of the model an endpoint serves, with today's prompts."""
  return ModelIdentity.of_endpoint(config, prompts_hash())

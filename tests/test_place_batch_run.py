"""A run with the referee's batched setting (game_masters/referee/batch.py)
against the same run per action: the scripted café of bench/place_batch.py,
its game master's calls counted under their tags."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from crsec_concordia.embedding import shared_embedder

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import place_batch  # noqa: E402
import place_slot_sizes  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  out = tmp_path_factory.mktemp("place_batch")
  embedder = shared_embedder()
  return {on: place_batch.measure(6, 2, on, embedder, out)
          for on in (False, True)}


def test_one_general_call_per_place_slot_and_the_same_tags(runs):
  alone, joint = runs[False], runs[True]
  assert alone["tags"] == joint["tags"]
  assert any(joint["tags"].values())  # Some deed was tagged.
  hours = 6 * place_batch.cafe.SLOTS * place_batch.cafe.MINUTES / 60
  place_slots = len(place_slot_sizes.sizes(joint["run_dir"]))
  assert round(joint["per"]["GM.adjudicate"] * hours) == place_slots
  # The doer is in the batched answer: no call of its own.
  assert joint["per"]["GM.doer"] == 0 < alone["per"]["GM.doer"]
  assert joint["per"]["GM"] < alone["per"]["GM"]


def test_the_batched_records_say_so(runs):
  records = place_batch.reading.read_records(
      runs[True]["run_dir"] / place_batch.format_lib.EVENTS)
  asked = [r for r in records if place_slot_sizes.put_to_referee(r)]
  assert asked and all(r.get("batched") for r in asked)
  alone = place_batch.reading.read_records(
      runs[False]["run_dir"] / place_batch.format_lib.EVENTS)
  assert not any(r.get("batched") for r in alone)

"""The hot paths' shortcuts give what the long way gives.

A town of a thousand agents spends its CPU on a few paths run for every
model call or comparison (bench/society_scaling.py --town; the figures in
docs/measurements.md). Each shortcut taken there is checked here against
the long way: the script check of an answer, the words of a text with
names taken out, the referee's similarity through the embedder's cache,
and the set-up frozen out of the garbage collector while slots play.
"""

from __future__ import annotations

import gc
import re
import unicodedata
import zlib

import numpy as np
import pytest

from crsec_concordia import embedding
from crsec_concordia.game_masters.referee import similarity_of
from crsec_concordia.models.scripts import foreign_scripts, strings
from crsec_concordia.repetition import words
from crsec_concordia.runs import heap


def _scripts_long_way(text: str) -> set[str]:
  return {unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0]
          for ch in text if ch.isalpha()}


def _foreign_long_way(answer, prompt: str) -> list[str]:
  seen = _scripts_long_way("".join(strings(answer)))
  return sorted(seen - _scripts_long_way(prompt)) if seen else []


@pytest.mark.parametrize("answer", [
    {"answer": "Ada reads the paper."}, {"answer": "1, 2: 3."},
    {"answer": ""}, {"a": ["be kind and考虑ate", "ok"]},
    {"answer": "Ютта читает."}, {"answer": "café au lait"},
    {"n": [1, 2.5, None, True]}])
@pytest.mark.parametrize("prompt", [
    "What does Ada do next?", "Что делает Ютта?", "考虑 12345",
    "12345 !?", "", "Élodie à la café"])
def test_foreign_scripts_as_the_long_way(answer, prompt):
  assert foreign_scripts(answer, prompt) == _foreign_long_way(answer, prompt)


def _words_long_way(text: str, names) -> list[str]:
  lowered = text.lower()
  parts = {p for n in names for p in (n.lower(), n.lower().split()[0])}
  for part in sorted(parts, key=len, reverse=True):
    lowered = re.sub(rf"\b{re.escape(part)}\b", " ", lowered)
  return re.findall(r"[a-z0-9']+", lowered)


@pytest.mark.parametrize("text,names", [
    ("Ada Abbott waves at Ben and Ada.", ["Ada Abbott", "Ben Baker"]),
    ("Adam and Ada: adalbert's tea.", ["Ada Cole", "Adam Dunn"]),
    ("Ann-Marie Ford meets Ann.", ["Ann-Marie Ford", "Ann Hale"]),
    ("nobody named here", ["Cleo Cole"]),
    ("O'Brien Joyce greets o'brien", ["O'Brien Joyce"]),
    ("", ["Eva Ellis"])])
def test_words_as_the_long_way(text, names):
  assert words(text, names) == _words_long_way(text, names)


def _bag(text: str) -> np.ndarray:
  vector = np.zeros(64, dtype=np.float32)
  for word in re.findall(r"[a-z]{3,}", text.lower()):
    vector[zlib.crc32(word.encode()) % 64] += 1.0
  return vector if vector.any() else np.ones(64, dtype=np.float32)


def test_the_referees_cached_similarity_is_the_uncached_one():
  value = embedding.of(_bag)
  similarity = similarity_of(value)
  texts = ["makes phone calls at the tables", "reads the paper at a table",
           "leaves cups lying around", "makes phone calls at the tables"]
  for a in texts:
    for b in texts:
      once, again = similarity(a, b), similarity(a, b)
      assert once == again == embedding.pair_similarity(value, a, b)
  # The agents' components and the referee share one cache.
  assert similarity.args[0] is embedding.cached(value)


def test_the_set_up_is_frozen_while_slots_play_and_given_back_after():
  kept = [[i] for i in range(10)]  # Containers: tracked by the collector.
  assert gc.get_freeze_count() == 0
  # Frozen objects freed meanwhile (by other tests' threads) leave the
  # count, so it is read as frozen or not, never compared across reads.
  with heap.set_up_frozen():
    assert gc.get_freeze_count() >= len(kept)
    with heap.set_up_frozen():  # A second session in the same process.
      assert gc.get_freeze_count() >= len(kept)
    assert gc.get_freeze_count() >= len(kept)  # Still, for the first.
  assert gc.get_freeze_count() == 0
  with pytest.raises(RuntimeError), heap.set_up_frozen():
    raise RuntimeError("a slot failed")
  assert gc.get_freeze_count() == 0

"""The gates: the sentence embedder's check of the referee's behaviour tags.

Code checks that the general call's quote is the action's words; that
catches an invented quote, not an invented reading of a true one ("reads
the town budget report over his coffee" tagged as keeping quiet). Such a
reading is far, for the embedder, from the behaviour's description. So a
tag counts only if the action is at least MIN_TAG_SIMILARITY (cosine) from
that description, and also once the words of the setting and the place
field are left out of both texts (the deed, not the place: "eats his
snacks on the terrace" shares the terrace with smoking outside); a tag
below is kept apart, visibly, with its scores. The floor is low on purpose,
to drop readings the words do not support at all and hold on venues the
labels do not cover. The same floor spares the call: an action far from
every behaviour could keep no tag, so the referee is not asked
(`nearest_behaviour`). Measurements: docs/trials/referee.md ("The gates").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.game_masters.referee._shared import Similarity

# MiniLM's floor; a referee reads its embedder's (`tag`, `spare_far`:
# embedder_thresholds.py).
MIN_TAG_SIMILARITY = MINILM_THRESHOLDS.tag
# The words of the place field (general_call.PLACES) and their forms.
PLACE_WORDS = frozenset({"indoors", "outdoors", "indoor", "outdoor",
                         "inside", "outside"})
# Kept however a setting line uses them: they say nothing of a place.
FUNCTION_WORDS = frozenset({
    "a", "an", "the", "and", "or", "of", "with", "to", "on", "at", "for",
    "in", "into", "by", "from", "its", "is", "are", "has", "have", "where",
    "which", "that", "this", "who"})
_WORD = re.compile(r"[^\W\d_]+(?:['\u2019][^\W\d_]+)*")


def tag_similarities(action: str, ids: Sequence[str],
                     descriptions: Mapping[str, str],
                     similarity: Similarity) -> dict[str, float]:
  """Each tagged id's cosine to the action, rounded for the record."""
  return {i: round(float(similarity(action, descriptions[i])), 3)
          for i in ids}


def split_tags(scores: Mapping[str, float], floor: float | None = None,
               deed_scores: Mapping[str, float] | None = None
               ) -> tuple[list[str], list[str]]:
  """(the tags that count, the tags too far from the action), in order:
  a tag counts if its score, and its score without the place words (if
  given), reach the floor."""
  floor = MIN_TAG_SIMILARITY if floor is None else floor
  kept = [i for i, s in scores.items() if s >= floor and (
      deed_scores is None or deed_scores[i] >= floor)]
  return kept, [i for i in scores if i not in kept]


def place_words(setting: str) -> frozenset[str]:
  """The words that say where something happens: the setting line's (a
  café's room and terrace, a garden's beds and shed) and the place field's."""
  return (frozenset(w.lower() for w in _WORD.findall(setting))
          | PLACE_WORDS) - FUNCTION_WORDS


def without_place(text: str, words: frozenset[str]) -> str:
  """`text` with the place words left out: what the deed is, not where."""
  kept = _WORD.sub(lambda m: "" if m.group(0).lower() in words
                   else m.group(0), text)
  return " ".join(kept.split())


def deed_similarities(action: str, ids: Sequence[str],
                      descriptions: Mapping[str, str],
                      similarity: Similarity, words: frozenset[str]
                      ) -> dict[str, float]:
  """Each tagged id's cosine to the action, place words left out of both
  (a description that is nothing but place words keeps its full texts: it
  names no deed to compare)."""
  deeds = {i: without_place(descriptions[i], words) for i in ids}
  bare = without_place(action, words)

  def names_a_deed(text: str) -> bool:
    return any(w.lower() not in FUNCTION_WORDS for w in _WORD.findall(text))
  return {i: round(float(similarity(bare, deeds[i])
                         if names_a_deed(deeds[i]) else
                         similarity(action, descriptions[i])), 3)
          for i in ids}


def near_scores(action: str, descriptions: Mapping[str, str],
                similarity: Similarity, words: frozenset[str]
                ) -> dict[str, float]:
  """Each behaviour's nearness to the action: the lower of its cosine with
  and without the place words (what a tag must reach the floor on)."""
  ids = list(descriptions)
  full = tag_similarities(action, ids, descriptions, similarity)
  deed = deed_similarities(action, ids, descriptions, similarity, words)
  return {i: min(full[i], deed[i]) for i in ids}


def nearest_behaviour(action: str, descriptions: Mapping[str, str],
                      similarity: Similarity, words: frozenset[str]
                      ) -> tuple[str, float] | None:
  """The behaviour nearest the action and its score (near_scores), or None
  if there is none."""
  near = near_scores(action, descriptions, similarity, words)
  return max(near.items(), key=lambda kv: kv[1]) if near else None

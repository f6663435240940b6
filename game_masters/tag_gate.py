"""The embedder's check of the referee's behaviour tags.

The referee (one call, referee_question.py) names the behaviours an action
shows and quotes its words; code checks that the quote is the action's
words. That catches an invented quote, not an invented reading of a true
one: on Qwen2.5-Coder-1.5B, "reads the town budget report over his coffee"
was tagged as keeping quiet, "declines the cigarette Sam offers her" as
refusing a tip, "carefully counts his change and tips the server" as
refusing a tip. Each such action is far, for the sentence embedder, from
the description of the behaviour it was given. So a tag counts only if the
action's embedding is at least MIN_TAG_SIMILARITY (cosine) from that
behaviour's description; a tag below is kept apart, visibly, with its
score, and costs no call.

The floor is low on purpose: it drops readings the action's words do not
support at all, not borderline ones, so that it holds on a venue whose
behaviours the labels do not cover. Measured with the project's embedder
(all-MiniLM-L6-v2) on the referee's recorded answers to the labelled
probes of the three shipped venues (crsec_concordia/metrics/data/
referee_decisions): every right tag scored 0.18 or more (lowest: "shouts
across the room" as loud, "cuts courgettes from Gus's plot" as picking
from another's plot), and 4 of the 17 wrong ones scored below 0.16. In
three runs' tags (a 12-slot café, two mini cafés; 51 tags), the 6 below
0.16 were all wrong ("begins reading a book" as quiet, 5 times; a tip as a
refused tip) and none above it was dropped; in the first run with the
floor (a 12-slot café at f814e1c) it left out 3 of 16 tags, each a book or
a workout read as keeping quiet (0.07-0.16). What it cannot see: a wrong
tag on an action that is about the behaviour without doing it ("tells
Wolfgang that cigarette smoke is bad for a singer's voice" as smoking,
0.42; "empties the ashtray on the terrace" as smoking there, 0.60): the
doer check asks that of each tag kept (doer_check.py).

The deed, not the place: a behaviour's description often says where
("smokes a cigarette outside, on the terrace or the street"), and an action
that only happens there shares those words ("takes a break to eat his
snacks at the small outdoor terrace", 0.23, tagged as smoking outside). The
place is the place field's to say. So the tag must also reach the floor
with the words of the setting line and of the place field left out of both
texts (`deed_similarities`, recorded as `tag_deed_similarity`). On the
recorded probe answers it left out one more wrong tag ("steps outside onto
the terrace to stretch his legs", 0.28 -> 0.10; mini café precision 0.78
-> 0.82, the café and the garden unchanged) and no right one; in five
runs' tags, three wrong ones (that snack, "leaves the outdoor terrace for
the rest of the day", "leaves her seat to go outside to rest") and no
right one.

Before the call: an action that is far from every behaviour, by the same
floor, with and without the place words, could keep no tag the referee
gave it, so the referee is not asked (`nearest_behaviour`): its record has
no behaviour, its place is the unsaid one, and observers read the agent's
own words (it is asked only of an action that tells of its actor: other
text is read through the referee's narration). On two 12-slot cafés (s15),
10 of 36 and 11 of 37 adjudicated actions outside an occasion were so far;
of their tags, one would have been lost, and it was wrong ("stands outside
the cafe, looking for a place" as smoking outside).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from crsec_concordia.game_masters.occasion_check import Similarity

MIN_TAG_SIMILARITY = 0.16
# The words of the place field (referee_question.PLACES) and their forms.
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

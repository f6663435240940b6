"""The act's copy check, with the work shared across agents (not a component).

`repetition.copied_from` compares an answer with every action and line in
view; in a slot of fifty agents each act compared its answer with 49
actions, each turned into words by one regular-expression pass per name
part (about a hundred), i.e. some 150,000 passes a slot, all under the GIL
while other agents waited to send their calls. Here the words of a text
are computed once per text and set of names, and the exact comparison
(difflib) is skipped when the word counts alone rule a copy out. The
answer is `repetition.copied_from`'s, always: the skip is a necessary
condition of each of its three tests.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Iterable

from crsec_concordia import repetition


@functools.lru_cache(maxsize=8192)
def _words(text: str, names: frozenset[str]) -> tuple[str, ...]:
  return tuple(repetition.words(text, names))


def _may_copy(mine: collections.Counter, size: int, theirs: tuple[str, ...],
              ratio: float, run: int | None) -> bool:
  """False only if `theirs` cannot pass any of copied_from's tests.

  Every test needs shared words: containment all of `mine`, a run of `run`
  words that many, and difflib's ratio 2*M/(|a|+|b|) at least `ratio`,
  where M (matched words) is at most the words the two have in common.
  """
  if not theirs:  # likeness() is all zeros then.
    return 0.0 >= ratio or (run is not None and 0 >= run)
  common = sum((mine & collections.Counter(theirs)).values())
  return (common >= size or (run is not None and common >= run)
          or 2.0 * common / (size + len(theirs)) >= ratio)


def copied_from(text: str, earlier: Iterable[str], *, names: Iterable[str],
                ratio: float, run: int | None = None,
                min_words: int = 1) -> str | None:
  """`repetition.copied_from(text, earlier, ...)`, with shared work."""
  key = frozenset(names)
  mine = _words(text, key)
  if len(mine) < min_words:
    return None
  counts = collections.Counter(mine)
  for other in earlier:
    theirs = _words(other, key)
    if not _may_copy(counts, len(mine), theirs, ratio, run):
      continue
    like = repetition.likeness(list(mine), list(theirs))
    if (like.ratio >= ratio or like.contained
        or (run is not None and like.run >= run)):
      return other
  return None

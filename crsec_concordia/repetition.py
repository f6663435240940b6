"""Is this text a copy of one already said or done?

Small models copy what is in front of them: the other side's last line as
their next turn, another agent's latest action as their own. A copy is not
the agent's own choice; counted, it would put Carlos's smoking on Abigail's
record (how often it happened: docs/trials/acting-and-planning.md).

Names are taken out before comparing: "Tom reads a book" and "Tamara reads
a book" are the same words about different people. So are the words the
writer was given as its own (`given`: its task, its plan, where it is): an
agent whose task is "goes to the Copper Kettle's warm indoor room" does not
copy a neighbour who "arrives at the Copper Kettle's warm indoor room"
when it writes its task's words, and in a town where a dozen agents are in
view, such shared phrases of the place and the plan are the rule.
"""

from __future__ import annotations

import collections
import dataclasses
import difflib
import functools
import re
from collections.abc import Iterable, Sequence

from crsec_concordia.name_patterns import pattern_of

_WORD = re.compile(r"[a-z0-9']+")


def words(text: str, names: Iterable[str] = ()) -> list[str]:
  """Lower-case words of `text`, without the given names (full and first)."""
  lowered = text.lower()
  parts = {p for n in names for p in (n.lower(), n.lower().split()[0])}
  for part in sorted(parts, key=len, reverse=True):
    # A part not in the text has nothing to take out: a substring test is
    # far cheaper than the pattern's pass over a long given text.
    if part in lowered:
      lowered = pattern_of(rf"\b{re.escape(part)}\b").sub(" ", lowered)
  return _WORD.findall(lowered)


@dataclasses.dataclass(frozen=True)
class Likeness:
  """How much of one text is another's."""
  ratio: float  # difflib's similarity of the two word sequences, 0..1.
  run: int  # The longest stretch of words the two share, in order.
  contained: bool  # The whole first text appears in the second.


def likeness(a: Sequence[str], b: Sequence[str]) -> Likeness:
  if not a or not b:
    return Likeness(0.0, 0, False)
  matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
  run = matcher.find_longest_match(0, len(a), 0, len(b)).size
  return Likeness(matcher.ratio(), run, run == len(a))


@functools.lru_cache(maxsize=8192)
def _words(text: str, names: frozenset[str]) -> tuple[str, ...]:
  """`words`, once per text and set of names: in a slot of fifty agents
  each act compares its answer with 49 actions in view, and turning them
  into words is one regular-expression pass per name part."""
  return tuple(words(text, names))


def _may_copy(mine: collections.Counter, size: int, theirs: tuple[str, ...],
              ratio: float, run: int | None) -> bool:
  """False only if `theirs` cannot pass any of copied_from's tests.

  Every test needs shared words: containment all of `mine`, a run of `run`
  words that many, and difflib's ratio 2*M/(|a|+|b|) at least `ratio`,
  where M (matched words) is at most the words the two have in common. So
  the exact comparison (difflib) is skipped when the counts rule a copy out.
  """
  if not theirs:  # likeness() is all zeros then.
    return 0.0 >= ratio or (run is not None and 0 >= run)
  common = sum((mine & collections.Counter(theirs)).values())
  return (common >= size or (run is not None and common >= run)
          or 2.0 * common / (size + len(theirs)) >= ratio)


# A stretch of this many words of the writer's given text is its own.
GIVEN_RUN = 3


def _grams(tokens: Sequence[str], n: int = GIVEN_RUN) -> frozenset[tuple]:
  return frozenset(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def _outside(tokens: tuple[str, ...], grams: frozenset[tuple],
             n: int = GIVEN_RUN) -> tuple[str, ...]:
  """`tokens` without those inside a stretch of `n` words found in `grams`."""
  if not grams:
    return tokens
  covered = [False] * len(tokens)
  for i in range(len(tokens) - n + 1):
    if tuple(tokens[i:i + n]) in grams:
      covered[i:i + n] = [True] * n
  return tuple(t for t, c in zip(tokens, covered) if not c)


def copied_from(text: str, earlier: Iterable[str], *, names: Iterable[str] = (),
                ratio: float, run: int | None = None,
                min_words: int = 1, given: str = "") -> str | None:
  """The first of `earlier` that `text` copies, or None.

  A copy is most of the same words in the same order (`ratio`), the whole
  text found inside an earlier one, or, with `run`, that many words in a row.
  Names are removed first, and every stretch of GIVEN_RUN words that
  `given` (what the writer was given as its own) holds too. Texts shorter
  than `min_words` after that are never copies.
  """
  key = frozenset(names)
  grams = _grams(_words(given, key)) if given else frozenset()
  mine = _outside(_words(text, key), grams)
  if len(mine) < min_words:
    return None
  counts = collections.Counter(mine)
  for other in earlier:
    theirs = _outside(_words(other, key), grams)
    if not _may_copy(counts, len(mine), theirs, ratio, run):
      continue
    like = likeness(mine, theirs)
    if (like.ratio >= ratio or like.contained
        or (run is not None and like.run >= run)):
      return other
  return None


def quotes(evidence: str, text: str, *, names: Iterable[str] = (),
           share: float = 0.6) -> bool:
  """Whether `evidence` is words of `text`: at least `share` of its words
  (names aside) occur in `text`.

  Asked to quote before it judges, a small referee model sometimes "quoted" a
  behaviour's id or its own claim instead ("smoking_indoors" for a man
  reading on his phone): evidence that is not the action's words supports
  nothing. Loose enough for a quote that drops or changes a word.
  """
  key = frozenset(names)
  quoted = _words(evidence, key)
  if not quoted:
    return False
  present = set(_words(text, key))
  return sum(w in present for w in quoted) >= share * len(quoted)

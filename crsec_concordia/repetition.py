"""Is this text a copy of one already said or done?

Small models copy what is in front of them: the 1.5B model answered a
conversation turn with the other side's last line, and wrote another agent's
latest action as its own (in the seed-1 runs of the mini café 56 of 139
actions shared six or more words in a row, or most of their words, with
another agent's action in view: Abigail "lights one cigarette after another
right there at the table", in Carlos's words). A copy is not the agent's
own choice; counted, it would put Carlos's smoking on Abigail's record.

Names are taken out before comparing: "Tom reads a book" and "Tamara reads
a book" are the same words about different people.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Iterable, Sequence

_WORD = re.compile(r"[a-z0-9']+")


def words(text: str, names: Iterable[str] = ()) -> list[str]:
  """Lower-case words of `text`, without the given names (full and first)."""
  lowered = text.lower()
  parts = {p for n in names for p in (n.lower(), n.lower().split()[0])}
  for part in sorted(parts, key=len, reverse=True):
    lowered = re.sub(rf"\b{re.escape(part)}\b", " ", lowered)
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


def copied_from(text: str, earlier: Iterable[str], *, names: Iterable[str] = (),
                ratio: float, run: int | None = None,
                min_words: int = 1) -> str | None:
  """The first of `earlier` that `text` copies, or None.

  A copy is most of the same words in the same order (`ratio`), the whole
  text found inside an earlier one, or, with `run`, that many words in a row.
  Texts shorter than `min_words` (after names are removed) are never copies.
  """
  names = tuple(names)
  mine = words(text, names)
  if len(mine) < min_words:
    return None
  for other in earlier:
    like = likeness(mine, words(other, names))
    if (like.ratio >= ratio or like.contained
        or (run is not None and like.run >= run)):
      return other
  return None

"""Letters of a writing system the prompt does not use.

Qwen2.5 models, trained on much Chinese text, drift into it mid-word in an
English run ("be kind and考虑ate"), and such words reached held norms
(docs/trials/models.md#letters-of-another-script). An
answer whose strings hold letters of a script that no letter of its prompt
is written in is treated as one that breaks its schema: sampled again, and
recorded as a failure if it never comes right. A prompt in any language,
or naming a person in another script, allows that script.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any


def _scripts(text: str) -> set[str]:
  """The scripts of `text`'s letters, by the first word of their Unicode
  names (LATIN, CJK, HANGUL, CYRILLIC, ...)."""
  out = set()
  for ch in set(text):
    if ch.isalpha():
      out.add(unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0])
  return out


def strings(value: Any) -> Iterator[str]:
  """Every string in a JSON value."""
  if isinstance(value, str):
    yield value
  elif isinstance(value, dict):
    for v in value.values():
      yield from strings(v)
  elif isinstance(value, list):
    for v in value:
      yield from strings(v)


_ASCII_LETTER = re.compile(r"[A-Za-z]")


def foreign_scripts(answer: Any, prompt: str) -> list[str]:
  """The scripts of `answer`'s strings that `prompt` has no letter of.

  An answer in ASCII has at most Latin letters, foreign only to a prompt
  with no ASCII letter: that case is settled by two scans in C, not by a
  Unicode name looked up for every letter of the prompt (every structured
  answer passes here, a thousand agents' worth a slot).
  """
  text = "".join(strings(answer))
  if text.isascii() and (not _ASCII_LETTER.search(text)
                         or _ASCII_LETTER.search(prompt)):
    return []
  seen = _scripts(text)
  return sorted(seen - _scripts(prompt)) if seen else []

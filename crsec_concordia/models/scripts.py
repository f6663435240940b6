"""Letters of a writing system the prompt does not use.

Qwen2.5 models, trained on much Chinese text, drift into it mid-word in an
English run ("be kind and考虑ate"), and such words reached held norms
(docs/trials/models.md#letters-of-another-script). An
answer whose strings hold letters of a script that no letter of its prompt
is written in is treated as one that breaks its schema: sampled again, and
recorded as a failure if it never comes right. A prompt in any language,
or naming a person in another script, allows that script. Where the
server's grammar can say it (llguidance, the embedded model), the same
rule is held while the answer is written (`confine`), so that a word the
model would write in another script costs no new sample.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator, Mapping
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


@functools.cache
def _letters_by_script() -> dict[str, str]:
  """Each script's letters as the inside of a regex class of ranges.

  Scanned once from Python's own Unicode tables, so that the grammar and
  `foreign_scripts` name scripts alike.
  """
  ranges: dict[str, list[list[int]]] = {}
  for cp in range(0x110000):
    ch = chr(cp)
    if not ch.isalpha():
      continue
    spans = ranges.setdefault(_scripts(ch).pop(), [])
    if spans and spans[-1][1] == cp - 1:
      spans[-1][1] = cp
    else:
      spans.append([cp, cp])
  return {name: "".join(
      rf"\x{{{a:X}}}" if a == b else rf"\x{{{a:X}}}-\x{{{b:X}}}"
      for a, b in spans) for name, spans in ranges.items()}


def letters_pattern(prompt: str) -> str:
  """A regex a string matches if all its letters are of `prompt`'s scripts.

  What `foreign_scripts` checks after an answer is written, for a grammar
  to hold while it is written: every character that is not a letter, and
  the letters of the scripts `prompt` has letters of. (Syntax of Rust's
  regex crate, which llguidance compiles. A letter that Python's Unicode
  tables do not know yet is refused too.)
  """
  letters = _letters_by_script()
  allowed = "".join(letters[s] for s in sorted(_scripts(prompt)))
  return rf"^(?:\P{{L}}|[{allowed}])*$" if allowed else r"^\P{L}*$"


def confine(schema: Mapping[str, Any], prompt: str) -> dict[str, Any]:
  """`schema` with every free-text string held to `prompt`'s scripts.

  A string with an enum, a const, a format or a pattern of its own is left
  as it is: its values are fixed by the caller, not written freely.
  """
  pattern = letters_pattern(prompt)

  def walk(node: Any) -> Any:
    if not isinstance(node, Mapping):
      return node
    out = dict(node)
    for key, value in node.items():
      if key in _MAPS and isinstance(value, Mapping):
        out[key] = {name: walk(sub) for name, sub in value.items()}
      elif key in _SUBSCHEMAS:
        out[key] = ([walk(sub) for sub in value] if isinstance(value, list)
                    else walk(value))
    kind = node.get("type")
    if ((kind == "string" or isinstance(kind, list) and "string" in kind)
        and not _FIXED.intersection(node)):
      out["pattern"] = pattern
    return out

  return walk(schema)


# Keywords whose values hold subschemas: a map of them by name, or one
# subschema or a list of them. Not `not`: a pattern under it would let
# through what it should hold back.
_MAPS = frozenset({"properties", "$defs", "definitions"})
_SUBSCHEMAS = frozenset({"items", "prefixItems", "anyOf", "oneOf", "allOf",
                         "additionalProperties"})
_FIXED = frozenset({"enum", "const", "format", "pattern"})

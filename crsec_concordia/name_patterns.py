"""Regular expressions built from a person's name, compiled once per name.

Several checks look for an agent's name in a text (an action that says
nothing but the name, a norm that names a person, an answer's own name
taken out before its words are compared), with a pattern made of the
escaped name. `re` keeps the last 512 patterns it compiled: in a society
of a thousand agents those per-name patterns pushed each other out, and
every call compiled its pattern again, CPU under the GIL that the other
agents' threads need. Here each is compiled once and kept (a name's
patterns are few, and the names are the scenario's).
"""

from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=None)
def pattern_of(pattern: str, flags: int = 0) -> re.Pattern[str]:
  """`re.compile(pattern, flags)`, kept for the process."""
  return re.compile(pattern, flags)

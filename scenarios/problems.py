"""A problem in a scenario file, and where it is.

Every problem the loader finds (explain.py's explanations of pydantic
errors, checks.py's checks across fields, yaml_reading.py's syntax) is a
`Problem`: a location in the file's data (pydantic-style, e.g.
("agents", 2, "name")), what is wrong and how to fix it, rendered as one
line `FILE:LINE: agents[2].name: what; fix`, the line found by walking the
YAML node tree along the location. `ScenarioError` carries them all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from crsec_concordia.errors import UserError


DESIGN_DOC = "see docs/design.md, 'Scenario file (YAML)'"


class ScenarioError(UserError):
  """A scenario that cannot be used, with every problem found, one per line.

  Each problem reads `FILE:LINE: field.path: what is wrong; how to fix it`
  (no LINE when the file itself is missing).
  """

  def __init__(self, problems: list[str]):
    self.problems = list(problems)
    super().__init__("\n".join(self.problems))

  def __str__(self) -> str:
    return "\n".join(self.problems)


class Problem:
  """One problem: where (a pydantic-style location), what, and the fix."""

  def __init__(self, loc: tuple, what: str, fix: str, line: int | None = None):
    self.loc, self.what, self.fix, self.line = tuple(loc), what, fix, line

  def render(self, source: str, root: yaml.Node | None) -> tuple[int, str]:
    """(line or 0, the one-line message)."""
    line = self.line or (line_of(root, self.loc) if root is not None else 0)
    where = f"{source}:{line}" if line else source
    return line, f"{where}: {path_text(self.loc)}: {self.what}; {self.fix}"


def path_text(loc: tuple) -> str:
  out = ""
  for part in loc:
    out += f"[{part}]" if isinstance(part, int) else (
        f".{part}" if out else str(part))
  return out or "(top level)"


def show(value: Any) -> str:
  """A value as the user wrote it, short."""
  if isinstance(value, bool):
    return "true" if value else "false"
  if value is None:
    return "an empty value"
  if isinstance(value, Mapping):
    return "a mapping"
  if isinstance(value, list):
    return "a list"
  if isinstance(value, str):
    text = value if len(value) <= 40 else value[:37] + "..."
    # Invisible characters (a bidirectional override, a separator) shown
    # by their code, so that the line reads as it is on any terminal.
    return "".join(c if c.isprintable() or c == " " else
                   f"\\u{ord(c):04x}" if ord(c) < 0x10000 else
                   f"\\U{ord(c):08x}"
                   for c in json.dumps(text, ensure_ascii=False))
  if isinstance(value, int) and abs(value) >= 10**40:
    return "a number of more than 40 digits"  # str() refuses past 4300.
  text = str(value)
  return text if len(text) <= 40 else text[:37] + "..."


def line_of(root: yaml.Node, loc: tuple) -> int:
  """The 1-based line of `loc` in the node tree, or of its nearest parent.

  A mapping key points at the key's line (where `persona: >-` is written), a
  list item at the item's line.
  """
  node, line = root, root.start_mark.line + 1
  for part in loc:
    if isinstance(node, yaml.MappingNode) and isinstance(part, str):
      match = None
      for key, value in node.value:  # The last duplicate wins, as in YAML.
        if isinstance(key, yaml.ScalarNode) and key.value == part:
          match = key, value
      if match is None:
        break
      line, node = match[0].start_mark.line + 1, match[1]
    elif (isinstance(node, yaml.SequenceNode) and isinstance(part, int)
          and 0 <= part < len(node.value)):
      node = node.value[part]
      line = node.start_mark.line + 1
    else:
      break
  return line

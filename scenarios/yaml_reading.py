"""Reading a scenario's YAML safely, with one line for every way it fails.

YAML 1.1 quirks are switched off on purpose: `16:00` stays the text "16:00"
(YAML 1.1 reads it as the number 960) and `no`, `yes`, `on`, `off` stay
text (YAML 1.1 reads them as booleans, which would turn the preference
`smoking: no` into False). Only plain YAML is read (no tags of the file's
own); a value its tag cannot read, a control character or nesting too deep
for PyYAML's recursive composer is a line, not a traceback; two equal keys
in a mapping, which YAML resolves silently, are reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml

from crsec_concordia.scenarios.checks import MAX_DIGITS
from crsec_concordia.scenarios.problems import Problem, ScenarioError, show


class YamlLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
  """SafeLoader with YAML 1.2 booleans and integers (see the module doc)."""


YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers
            if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:int")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))
YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"),
    list("-+0123456789"))


class _BadValue(yaml.constructor.ConstructorError):
  """A scalar its tag cannot read (`!!bool maybe`, `!!int twelve`, a number
  of 5000 digits): PyYAML raises ValueError, KeyError or AttributeError for
  those, which would end in a traceback; this points at the value."""

  def __init__(self, node: yaml.ScalarNode):
    tag = node.tag.rsplit(":", 1)[-1]
    digits = node.value.lstrip("+-")
    if tag == "int" and digits.isdigit() and len(digits) > MAX_DIGITS:
      what = f"a number of {len(digits)} digits is out of range"
      self.fix = "use a number in the range the field takes (see docs/design.md)"
    else:
      what = f"{show(node.value)} is not a valid !!{tag}"
      self.fix = f"write a valid {tag} value, or remove the !!{tag} tag"
    super().__init__(None, None, what, node.start_mark)


def _checked(construct: Any) -> Any:
  def construct_or_explain(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    try:
      return construct(loader, node)
    except (ValueError, KeyError, AttributeError, TypeError, OverflowError):
      raise _BadValue(node) from None
  return construct_or_explain


for _tag in ("int", "float", "bool", "timestamp"):
  _tag = f"tag:yaml.org,2002:{_tag}"
  YamlLoader.add_constructor(_tag, _checked(yaml.SafeLoader.yaml_constructors[_tag]))


def duplicate_keys(node: yaml.Node, loc: tuple = (),
                    seen: set[int] | None = None) -> Iterator[Problem]:
  """YAML keeps the last of two equal keys without a word; we say so."""
  seen = set() if seen is None else seen
  if id(node) in seen:
    return
  seen.add(id(node))
  if isinstance(node, yaml.MappingNode):
    first: dict[str, int] = {}
    for key, value in node.value:
      if not isinstance(key, yaml.ScalarNode):
        continue
      line = key.start_mark.line + 1
      if key.value in first:
        yield Problem(loc + (key.value,),
                       f"key {key.value!r} appears twice in this mapping "
                       f"(first on line {first[key.value]})",
                       "keep only one of them (YAML silently uses the last)", line)
      else:
        first[key.value] = line
      yield from duplicate_keys(value, loc + (key.value,), seen)
  elif isinstance(node, yaml.SequenceNode):
    for i, item in enumerate(node.value):
      yield from duplicate_keys(item, loc + (i,), seen)
def read_yaml(text: str, source: str) -> tuple[Any, yaml.Node | None]:
  """The data and node tree of YAML `text` (None, None when it holds no
  document), read with the rules above; ScenarioError with one line for
  anything PyYAML cannot read (syntax, characters, tags, nesting)."""
  loader = None
  try:
    loader = YamlLoader(text)  # Reads the whole text: control characters fail here.
    root = loader.get_single_node()
    data = None if root is None else loader.construct_document(root)
  except RecursionError:
    # PyYAML composes nested collections recursively: a few hundred levels
    # (`[[[[...`) exhaust Python's stack.
    mark = loader.get_mark() if loader else None
    where = f":{mark.line + 1}" if mark else ""
    raise ScenarioError([
        f"{source}{where}: YAML syntax: collections nest too deeply to read; "
        "a scenario nests a few levels, so close the brackets or check the "
        "indentation here"]) from None
  except yaml.reader.ReaderError as e:
    line = text.count("\n", 0, e.position) + 1
    column = e.position - (text.rfind("\n", 0, e.position) + 1) + 1
    code = ord(e.character) if isinstance(e.character, str) else e.character
    raise ScenarioError([
        f"{source}:{line}: YAML syntax: the character #x{code:04x} is not "
        f"allowed (column {column}); remove it: a scenario is plain text"]) from None
  except yaml.MarkedYAMLError as e:
    mark = e.problem_mark or e.context_mark
    line = f":{mark.line + 1}" if mark else ""
    problem = " ".join(str(e.problem or e.context or "invalid YAML").split())
    column = f" (column {mark.column + 1})" if mark else ""
    if isinstance(e, _BadValue):
      fix = e.fix
    elif "constructor for the tag" in problem:
      fix = "remove the tag: a scenario needs no `!` or `!!` tags"
    elif "\\t" in problem or "'\\t'" in problem or "tab" in problem:
      fix = "indent with spaces, never tabs"
    else:
      fix = ("check the indentation and quoting here: text containing ': ' or "
             "' #', or starting with one of - { } [ ] * & ! | > % @ ` must be in quotes")
    raise ScenarioError([f"{source}{line}: YAML syntax: {problem}{column}; {fix}"]) from None
  except yaml.YAMLError as e:
    raise ScenarioError([f"{source}: YAML syntax: {' '.join(str(e).split())}; "
                         "check the file is valid YAML"]) from None
  finally:
    if loader is not None:
      loader.dispose()
  return data, root

"""Each module-level name of the package is defined in one module.

A constant, function or class defined in two modules is two things under
one name: a reader who meets `read_run` or `ARMS` cannot tell which is
meant, and the two drift apart (four `ARMS`, two `now`). Read from the
source, as tests/test_house.py reads it (nothing imported): the public
UPPER_CASE constants, functions and classes at the top of every module of
crsec_concordia, its components, game masters and scenarios. Imports are
not definitions, so a name defined once and imported (or re-exported as
`NAME = module.NAME`) elsewhere is fine; private names (`_x`) are each
module's own.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from tests.test_house import MODULES, ROOT

CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]*$")
# A module's interface: the same name in every module of a kind, always
# read through its module, so never ambiguous where it is used.
INTERFACES = {
    # Each LLM operation's (operations/, the referee's calls, the judge):
    # its usage tag, answer schema and prompt (`ops.reflect.prompt`).
    "OP": "an LLM operation's failure-record name",
    "TAG": "an LLM call's usage tag",
    "SCHEMA": "an LLM operation's answer schema",
    "schema": "an LLM operation's answer schema, built per call",
    "prompt": "an LLM operation's prompt",
    # Each `crsec` subcommand's (commands/): what cli.py registers.
    "add_parser": "a subcommand's flags",
    "run": "a subcommand's or a sweep's entry point",
    # A module's `python -m` entry point.
    "main": "a module's command-line entry point",
    # A file kind's reader and writer (store.read, sheet.write).
    "read": "a file kind's reader",
    "write": "a file kind's writer",
    # Each classifier's measured error as correction rates (measured.py,
    # judge_quality.py, referee_quality.py): what correction.py takes.
    "rates": "a classifier's measured error as correction rates",
}


def _aliased(node: ast.expr, name: str) -> bool:
  """`NAME = module.NAME` or `NAME = NAME`: a re-export, no definition."""
  return ((isinstance(node, ast.Attribute) and node.attr == name)
          or (isinstance(node, ast.Name) and node.id == name))


def _defined(path: Path) -> list[str]:
  names = []
  for node in ast.parse(path.read_text(encoding="utf-8")).body:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                         ast.ClassDef)):
      names.append(node.name)
    elif isinstance(node, ast.Assign):
      names += [t.id for t in node.targets if isinstance(t, ast.Name)
                and CONSTANT.match(t.id) and not _aliased(node.value, t.id)]
    elif (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
          and CONSTANT.match(node.target.id) and node.value is not None
          and not _aliased(node.value, node.target.id)):
      names.append(node.target.id)
  return [n for n in names if not n.startswith("_")]


def _definitions() -> dict[str, list[str]]:
  where: dict[str, list[str]] = defaultdict(list)
  for path in MODULES.values():
    for name in _defined(path):
      where[name].append(str(path.relative_to(ROOT)))
  return where


def test_each_name_is_defined_once():
  twice = [f"{name}: {', '.join(sorted(paths))}"
           for name, paths in sorted(_definitions().items())
           if len(paths) > 1 and name not in INTERFACES]
  assert twice == []


def test_the_names_once_scattered_are_defined_once():
  where = _definitions()
  for name in ("ARMS", "read_run", "write_json", "now", "is_sweep_dir",
               "precision", "recall", "Occasion"):
    assert len(where[name]) == 1, (name, where[name])
  for name in ("aggregate", "summarize"):
    assert len(where[name]) <= 1, (name, where[name])


def test_the_interfaces_allowed_are_in_use():
  where = _definitions()
  assert [n for n in INTERFACES if len(where[n]) < 2] == []

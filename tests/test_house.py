"""The house's rules, checked from the source: layering, no notebook, a short README.

Read from the files as text (nothing imported): import circles between the
project's modules, imports made inside functions to get around them, trials
and dates in source, the README's length and module length.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The installed package's sub-packages live in the design card's folders.
PACKAGES = {"crsec_concordia": ROOT / "crsec_concordia",
            "crsec_concordia.components": ROOT / "components",
            "crsec_concordia.game_masters": ROOT / "game_masters",
            "crsec_concordia.scenarios": ROOT / "scenarios"}
README_WORDS = 2000
MODULE_LINES = 450
# Optional heavy dependencies may be imported late (errors.require does it).
NOTEBOOK = re.compile(
    r"tried and dropped|also tried|\b20\d\d-\d\d-\d\d\b|\bsessions? \d+\b|"
    r"\bs\d{1,2}\b(?=[ ,.;:)])|the one before|last session",
    re.IGNORECASE)


def _modules() -> dict[str, Path]:
  found: dict[str, Path] = {}
  for package, folder in sorted(PACKAGES.items(), key=lambda kv: -len(kv[0])):
    for path in sorted(folder.rglob("*.py")):
      parts = list(path.relative_to(folder).with_suffix("").parts)
      if parts[-1] == "__init__":
        parts = parts[:-1]
      name = ".".join([package, *parts])
      if any(p.startswith(".") for p in parts):
        continue
      found.setdefault(name, path)
  return found


MODULES = _modules()


def _target(name: str) -> str | None:
  while name and name not in MODULES:
    name = name.rpartition(".")[0]
  return name or None


def _imports(path: Path) -> list[tuple[str, bool, int]]:
  """(module imported, inside a function, line) for first-party imports."""
  tree = ast.parse(path.read_text(encoding="utf-8"))
  out: list[tuple[str, bool, int]] = []

  def visit(node: ast.AST, nested: bool) -> None:
    for child in ast.iter_child_nodes(node):
      inner = nested or isinstance(child, (ast.FunctionDef,
                                           ast.AsyncFunctionDef))
      if isinstance(child, ast.Import):
        for alias in child.names:
          if alias.name.startswith("crsec_concordia"):
            out.append((alias.name, nested, child.lineno))
      elif isinstance(child, ast.ImportFrom) and child.module and (
          child.module.startswith("crsec_concordia")) and not child.level:
        for alias in child.names:
          full = f"{child.module}.{alias.name}"
          out.append((full if full in MODULES else child.module, nested,
                      child.lineno))
      visit(child, inner)

  visit(tree, False)
  return out


def _graph() -> dict[str, set[str]]:
  graph: dict[str, set[str]] = {m: set() for m in MODULES}
  for module, path in MODULES.items():
    for name, _, _ in _imports(path):
      target = _target(name)
      if target and target != module and not module.startswith(target + "."):
        graph[module].add(target)
  return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
  """Strongly connected components of more than one module (Tarjan)."""
  index: dict[str, int] = {}
  low: dict[str, int] = {}
  stack: list[str] = []
  on: set[str] = set()
  found: list[list[str]] = []

  def strong(v: str) -> None:
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in sorted(graph[v]):
      if w not in index:
        strong(w)
        low[v] = min(low[v], low[w])
      elif w in on:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      component = []
      while True:
        w = stack.pop()
        on.discard(w)
        component.append(w)
        if w == v:
          break
      if len(component) > 1:
        found.append(sorted(component))

  for v in sorted(graph):
    if v not in index:
      strong(v)
  return found


def test_no_import_circles():
  assert _cycles(_graph()) == []


def test_no_first_party_import_inside_a_function():
  late = [f"{path.relative_to(ROOT)}:{line}: {name}"
          for module, path in MODULES.items()
          for name, nested, line in _imports(path) if nested]
  assert late == []


def _prose(path: Path) -> list[tuple[int, str]]:
  """Comments and string literals, with their line numbers."""
  tokens = tokenize.generate_tokens(
      io.StringIO(path.read_text(encoding="utf-8")).readline)
  return [(t.start[0], t.string) for t in tokens
          if t.type in (tokenize.COMMENT, tokenize.STRING)]


@pytest.mark.parametrize("folder", ["crsec_concordia", "components",
                                    "game_masters", "scenarios", "bench",
                                    "scripts", "examples"])
def test_no_lab_notebook_in_source(folder):
  found = [f"{path.relative_to(ROOT)}:{line}: {m.group(0)!r}"
           for path in sorted((ROOT / folder).rglob("*.py"))
           for line, text in _prose(path)
           for m in NOTEBOOK.finditer(text)]
  assert found == []


def test_the_readme_is_a_newcomers_page():
  words = len((ROOT / "README.md").read_text(encoding="utf-8").split())
  assert words <= README_WORDS


def test_modules_hold_one_concern():
  long = [f"{path.relative_to(ROOT)}: {n} lines"
          for path in MODULES.values()
          if (n := len(path.read_text(encoding="utf-8").splitlines()))
          > MODULE_LINES]
  assert long == []


def test_every_sub_package_is_listed_for_installation():
  """A folder of modules missing from pyproject.toml's `packages` works in
  an editable install and is left out of a wheel (`crsec` then fails on a
  plain `pip install`)."""
  listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(
      encoding="utf-8"))["tool"]["setuptools"]["packages"])
  found = {package + "".join(f".{p}" for p in init.parent.relative_to(
      folder).parts)
           for package, folder in PACKAGES.items()
           for init in folder.rglob("__init__.py")
           if ".venv" not in init.parts}
  assert found - listed == set()

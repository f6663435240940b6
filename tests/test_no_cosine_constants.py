"""No cosine constant that decides a judgement remains in code.

Every threshold on a similarity is the embedder's measured record
(calibration/data/embedders/, embedding/thresholds.py). The source is
scanned, not a list of files: a comparison whose one side is a float
literal in [0, 1] and whose other side names a similarity, and a keyword
argument, parameter default or assignment of a similarity's name given a
float literal.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("crsec_concordia", "components", "game_masters")
SIMILAR = re.compile(r"sim|cos|score|relevan|thresh", re.I)
NAMED = re.compile(r"thresh|similar|relevan|floor|margin", re.I)


def _is_unit_float(node: ast.AST) -> bool:
  return (isinstance(node, ast.Constant) and type(node.value) is float
          and 0.0 <= node.value <= 1.0)


def _zero_difference(name: str, node: ast.AST) -> bool:
  """A margin of zero ("the nearest only") is a difference of cosines that
  no rescaling of them changes."""
  return "margin" in name.lower() and node.value == 0.0


def _names(node: ast.AST) -> str:
  return " ".join(n.id if isinstance(n, ast.Name) else n.attr
                  for n in ast.walk(node)
                  if isinstance(n, (ast.Name, ast.Attribute)))


def found(tree: ast.AST) -> list[tuple[int, str]]:
  out = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Compare):
      sides = [node.left, *node.comparators]
      for i, side in enumerate(sides):
        others = sides[:i] + sides[i + 1:]
        if _is_unit_float(side) and any(SIMILAR.search(_names(o))
                                        for o in others):
          out.append((node.lineno, ast.unparse(node)))
    elif isinstance(node, ast.keyword):
      if (node.arg and NAMED.search(node.arg) and _is_unit_float(node.value)
          and not _zero_difference(node.arg, node.value)):
        out.append((node.value.lineno, f"{node.arg}={node.value.value}"))
    elif isinstance(node, (ast.Assign, ast.AnnAssign)):
      targets = node.targets if isinstance(node, ast.Assign) else [node.target]
      if node.value is not None and _is_unit_float(node.value) and any(
          NAMED.search(_names(t)) for t in targets):
        out.append((node.lineno, ast.unparse(node)))
    elif isinstance(node, ast.arguments):
      args = [*node.posonlyargs, *node.args]
      pairs = list(zip(args[len(args) - len(node.defaults):], node.defaults))
      pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults)
                if d is not None]
      out += [(d.lineno, f"{a.arg}={d.value}") for a, d in pairs
              if NAMED.search(a.arg) and _is_unit_float(d)
              and not _zero_difference(a.arg, d)]
  return out


def test_the_scan_finds_what_it_looks_for():
  source = ("if cosine >= 0.15: pass\n"
            "f(related_threshold=0.45)\n"
            "def g(floor=0.25): pass\n"
            "ok = scores[i] < 0.5 * x\n"
            "MIN_TAG_SIMILARITY = 0.16\n")
  assert sorted(line for line, _ in found(ast.parse(source))) == [1, 2, 3, 5]


def test_no_similarity_constant_is_left_in_the_source():
  left = []
  for package in PACKAGES:
    for path in sorted((ROOT / package).rglob("*.py")):
      tree = ast.parse(path.read_text(encoding="utf-8"))
      left += [f"{path.relative_to(ROOT)}:{line}: {text}"
               for line, text in found(tree)]
  assert not left, ("cosine constants outside the embedders' records "
                    "(calibration/data/embedders/):\n" + "\n".join(left))

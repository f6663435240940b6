"""Importing a component costs no analysis, metrics or report.

An agent's components are imported by anyone who builds an agent; the
project's readers of runs (analysis, metrics, the report) and what they
bring (pandas, matplotlib) are for those who read runs. Measured in a
subprocess with `-X importtime`, so nothing this test session has imported
counts. What Concordia's own components import is theirs: a heavy module is
only refused when a module of this project imports it.
"""

from __future__ import annotations

import subprocess
import sys

READERS = ("crsec_concordia.metrics", "crsec_concordia.analysis",
           "crsec_concordia.commands.report", "crsec_concordia.sweeps.report")
HEAVY = ("matplotlib", "pandas")


def _imported(statement: str) -> list[tuple[str, str | None]]:
  """(module, the module that imported it) in -X importtime's order."""
  done = subprocess.run([sys.executable, "-X", "importtime", "-c", statement],
                        capture_output=True, text=True, check=True,
                        timeout=300)
  rows = []
  for line in done.stderr.splitlines():
    if not line.startswith("import time:") or line.count("|") != 2:
      continue
    name = line.split("|")[2]
    if name.strip() == "imported package":
      continue
    rows.append((len(name) - len(name.lstrip()), name.strip()))
  # A module is listed after the ones it imports, one level less indented.
  found = []
  for i, (depth, name) in enumerate(rows):
    parent = next((n for d, n in rows[i + 1:] if d < depth), None)
    found.append((name, parent))
  return found


def _first_party(name: str | None) -> bool:
  return bool(name) and name.split(".")[0] == "crsec_concordia"


def test_a_component_imports_no_reader_of_runs():
  found = _imported("import crsec_concordia.components")
  assert any(name == "crsec_concordia.components" for name, _ in found)
  readers = sorted({name for name, _ in found
                    if name.startswith(READERS)})
  assert readers == []


def test_a_component_brings_no_matplotlib_and_no_pandas_of_ours():
  found = _imported("import crsec_concordia.components")
  assert [name for name, _ in found if name.split(".")[0] == "matplotlib"] == []
  ours = sorted(f"{parent} -> {name}" for name, parent in found
                if name.split(".")[0] in HEAVY and _first_party(parent))
  assert ours == []


def test_the_package_still_offers_load_run():
  done = subprocess.run(
      [sys.executable, "-c",
       "import sys, crsec_concordia as c\n"
       "assert 'crsec_concordia.analysis' not in sys.modules\n"
       "print(c.load_run.__module__, c.RunData.__name__)"],
      capture_output=True, text=True, check=True, timeout=300)
  assert done.stdout.split() == ["crsec_concordia.analysis", "RunData"]

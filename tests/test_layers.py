"""The layers, read from the source (nothing imported): who may import whom.

Below: what a model and an embedder get wrong (crsec_concordia.calibration:
judgement error, measured thresholds, their store), the run directory's
format, the components. Above them: the classifiers and metrics that read
calibrations, the game master, the runs. An arrow that runs back up makes
the lower layer depend on the one above it (a change to a metric breaks
calibration), so each rule lists the packages a layer must not import.
"""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.test_house import MODULES, ROOT, _imports, _target

CALIBRATION = "crsec_concordia.calibration"
EMBEDDING = "crsec_concordia.embedding"


def _arrows(source: str, forbidden: tuple[str, ...]) -> list[str]:
  """`module -> imported` for every import from a module under `source`
  (a package, or one module) of a module under one of `forbidden`."""
  found = []
  for module, path in MODULES.items():
    if module != source and not module.startswith(source + "."):
      continue
    for name, _, line in _imports(path):
      target = _target(name) or name
      if any(target == f or target.startswith(f + ".") for f in forbidden):
        found.append(f"{module}:{line} -> {target}")
  return found


def test_calibration_sits_below_the_classifiers_and_metrics():
  assert _arrows(CALIBRATION, (
      "crsec_concordia.metrics", "crsec_concordia.analysis",
      "crsec_concordia.components", "crsec_concordia.game_masters",
      "crsec_concordia.prefabs", "crsec_concordia.runs",
      "crsec_concordia.sweeps", "crsec_concordia.commands")) == []


def test_the_metrics_reach_calibration_only_downward():
  # The metrics read calibrations; the arrow from calibration back is the
  # test above. No calibration module imports a metrics module, so the
  # two never form a circle.
  back = _arrows(CALIBRATION, ("crsec_concordia.metrics",))
  reads = _arrows("crsec_concordia.metrics", (CALIBRATION,))
  assert back == [] and reads


def test_components_never_import_the_game_master():
  assert _arrows("crsec_concordia.components", (
      "crsec_concordia.game_masters", "crsec_concordia.runs")) == []


def test_the_game_master_never_imports_the_agents_prefabs():
  assert _arrows("crsec_concordia.game_masters",
                 ("crsec_concordia.prefabs",)) == []


@pytest.mark.parametrize("writer", ["crsec_concordia.runs.episode",
                                    "crsec_concordia.runs.session"])
def test_the_runs_writer_imports_no_metrics(writer):
  assert writer in MODULES
  assert _arrows(writer, ("crsec_concordia.metrics",
                          "crsec_concordia.analysis")) == []


def test_the_game_master_parses_the_scenario_once():
  # The params carry the scenario as JSON (checkpoints keep them); it is
  # parsed in one place, and every component gets the scenario's own types
  # (no part dumped to dicts and read back into a class of its own).
  game_masters = {m: p for m, p in MODULES.items()
                  if m.startswith("crsec_concordia.game_masters")}
  text = {m: p.read_text(encoding="utf-8") for m, p in game_masters.items()}
  parses = [m for m, t in text.items() if "Scenario.from_dict(" in t]
  assert parses == ["crsec_concordia.game_masters.prefab"]
  assert text[parses[0]].count("Scenario.from_dict(") == 1
  assert [m for m, t in text.items() if "model_dump(" in t] == []


@pytest.mark.parametrize("writer", ["crsec_concordia.runs.episode",
                                    "crsec_concordia.runs.session"])
def test_importing_the_runs_writer_loads_no_metrics(writer):
  # What it imports, and what they import, in a fresh interpreter: the
  # source check above sees direct imports only.
  code = (f"import sys, {writer}\n"
          "print([m for m in sys.modules if m.startswith("
          "('crsec_concordia.metrics', 'crsec_concordia.analysis'))])")
  done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                        text=True, check=True, cwd=ROOT)
  assert done.stdout.strip() == "[]"


def test_the_game_master_imports_no_private_module_of_the_components():
  private = [f for f in MODULES if f.startswith("crsec_concordia.components.")
             and f.rpartition(".")[2].startswith("_")]
  assert private
  assert _arrows("crsec_concordia.game_masters", tuple(private)) == []


# What resolves an embedder's identity and thresholds: called only inside
# the embedder package, whose Embedder value the others read.
LOOKUPS = {"load_similarity", "record_for", "threshold_dirs", "fingerprint",
           "identify", "unmeasured"}


def _looked_up(path) -> list[tuple[int, str]]:
  """(line, name) of every call of, or import of, a look-up."""
  found = []
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
    if isinstance(node, ast.Call):
      f = node.func
      name = (f.attr if isinstance(f, ast.Attribute) else
              f.id if isinstance(f, ast.Name) else None)
    elif isinstance(node, ast.ImportFrom):
      name = next((a.name for a in node.names if a.name in LOOKUPS), None)
    else:
      continue
    if name in LOOKUPS:
      found.append((node.lineno, name))
  return found


def test_thresholds_and_identities_are_looked_up_only_in_the_embedder_package():
  inside = [m for m in MODULES if m.startswith(EMBEDDING + ".")]
  assert any(_looked_up(MODULES[m]) for m in inside)
  outside = [f"{module}:{line} {name}" for module, path in MODULES.items()
             if module != EMBEDDING and not module.startswith(EMBEDDING + ".")
             for line, name in _looked_up(path)]
  assert outside == []

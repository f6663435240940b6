"""The layers, read from the source (nothing imported): who may import whom.

Below: what a model and an embedder get wrong (crsec_concordia.calibration:
judgement error, measured thresholds, their store), the run directory's
format, the components. Above them: the classifiers and metrics that read
calibrations, the game master, the runs. An arrow that runs back up makes
the lower layer depend on the one above it (a change to a metric breaks
calibration), so each rule lists the packages a layer must not import.
"""

from __future__ import annotations

import pytest

from tests.test_house import MODULES, _imports, _target

CALIBRATION = "crsec_concordia.calibration"


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

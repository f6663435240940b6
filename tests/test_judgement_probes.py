"""The labelled cases of bench/judgement_probe.py: valid for their scenario.

A label naming a behaviour the scenario lacks would make the probe count a
right answer wrong; cases that miss a behaviour would leave it unmeasured.
The probe itself needs a model and is run by hand (see README).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from crsec_concordia.errors import UserError
from crsec_concordia.scenarios import load_scenario

ROOT = Path(__file__).resolve().parent.parent


def _probe_module():
  spec = importlib.util.spec_from_file_location(
      "judgement_probe", ROOT / "bench" / "judgement_probe.py")
  module = importlib.util.module_from_spec(spec)
  sys.modules.setdefault("judgement_probe", module)
  spec.loader.exec_module(module)
  return module


probe = _probe_module()


@pytest.mark.parametrize("name", ["hobbs_cafe_mini", "community_garden"])
def test_every_probe_file_labels_its_scenario(name):
  scenario = load_scenario(name)
  cases = probe.load_probes(probe.probes_path(scenario), scenario)
  assert cases.referee and cases.occasion and cases.conflicts
  labelled = {b for c in [*cases.referee, *cases.occasion.answers]
              for b in c.behaviours}
  assert labelled == set(scenario.behaviour_ids)
  assert sum(not c.behaviours for c in cases.referee) >= 3
  occasion = next(o for o in scenario.occasions if o.id == cases.occasion.id)
  answered = {b for c in cases.occasion.answers for b in c.behaviours}
  assert answered == set(occasion.behaviours)
  assert any(not c.behaviours for c in cases.occasion.answers)
  assert {c.breaks for c in cases.conflicts} == {True, False}


def test_the_garden_has_cases_enough_for_each_behaviour_and_place():
  scenario = load_scenario("community_garden")
  cases = probe.load_probes(probe.probes_path(scenario), scenario)
  assert len(cases.referee) >= 14
  labelled = {b for c in cases.referee for b in c.behaviours}
  assert labelled == set(scenario.behaviour_ids)  # In the general call too.
  assert {c.place for c in cases.referee} >= {"indoors", "outdoors"}
  targets = {t.text for t in scenario.target_norms}
  assert {c.norm for c in cases.conflicts} == targets


def test_a_probe_file_for_another_scenario_is_refused(tmp_path):
  garden = load_scenario("community_garden")
  cafe_cases = probe.probes_path(load_scenario("hobbs_cafe_mini"))
  with pytest.raises(UserError) as info:
    probe.load_probes(cafe_cases, garden)
  lines = str(info.value).splitlines()
  assert f"{cafe_cases}: 'smoking_indoors' is not a behaviour of community_garden" in lines
  assert f"{cafe_cases}: community_garden has no occasion 'bill' naming behaviours" in lines
  bad = tmp_path / "bad.yaml"
  bad.write_text("referee: [{actor: Ruth Okafor}]\n", encoding="utf-8")
  with pytest.raises(UserError, match="not a probe file"):
    probe.load_probes(bad, garden)


def test_the_probe_says_what_is_wrong_in_one_line_and_exit_2(tmp_path, capsys):
  assert probe.main(["--scenario", "community_garden", "--probes",
                     str(tmp_path / "missing.yaml")]) == 2
  assert "cannot be read" in capsys.readouterr().err

"""The labelled cases (crsec_concordia/calibration/probes.py): valid for their scenario.

A label naming a behaviour the scenario lacks would make the probe count a
right answer wrong; cases that miss a behaviour would leave it unmeasured.
The probe on a model is run by hand (bench/judgement_probe.py); on the
oracle, with no model, in tests/test_judgement_oracle.py.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest

from crsec_concordia import judgement_prompts, models
from crsec_concordia.calibration import identity, probes, store
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.errors import UserError
from crsec_concordia.metrics.classifiers import probe_run
from crsec_concordia.metrics.classifiers import referee_quality
from crsec_concordia.models import ScriptedModel
from crsec_concordia.scenarios import builtin_names, load_scenario
from tests import crsec_script

ROOT = Path(__file__).resolve().parent.parent


def _probe_module():
  spec = importlib.util.spec_from_file_location(
      "judgement_probe", ROOT / "bench" / "judgement_probe.py")
  module = importlib.util.module_from_spec(spec)
  sys.modules.setdefault("judgement_probe", module)
  spec.loader.exec_module(module)
  return module


probe = _probe_module()


probe_scores = probe.probe_scores
SHIPPED = ["community_garden", "hobbs_cafe", "hobbs_cafe_mini", "tea_crates"]
# Venues that declare places, with a few cases of their own across their
# places (not one per agent: the town has 41).
PLACED = ["town"]
# Scenarios drawn by a population block whose cases (one actor each of
# 20-41 drawn agents) are still to be written; until then a calibration
# reads them with a venue's probe file passed by --probes.
POPULATED = ["committed_minority", "entrepreneur_share", "entrepreneur_ties",
             "open_day", "posted_rule"]


@pytest.mark.parametrize("name", SHIPPED + PLACED)
def test_every_probe_file_labels_its_scenario(name):
  scenario = load_scenario(name)
  cases = probes.load_probes(probes.probes_path(scenario), scenario)
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
  cases = probes.load_probes(probes.probes_path(scenario), scenario)
  assert len(cases.referee) >= 14
  labelled = {b for c in cases.referee for b in c.behaviours}
  assert labelled == set(scenario.behaviour_ids)  # In the general call too.
  assert {c.place for c in cases.referee} >= {"indoors", "outdoors"}
  targets = {t.text for t in scenario.target_norms}
  assert {c.norm for c in cases.conflicts} == targets


def test_every_shipped_venue_has_a_probe_file_beside_it():
  assert probes.probed_venues() == sorted(SHIPPED + PLACED)
  # A venue shipped later needs its probe file (and a place in SHIPPED);
  # the probe files beside the scenarios are no scenarios themselves.
  assert builtin_names() == sorted(SHIPPED + PLACED + POPULATED)
  for name in SHIPPED + PLACED:
    path = probes.probes_path(load_scenario(name))
    assert path.name == f"{name}.probes.yaml"
    assert path.parent == load_scenario(name).source_path.parent


def test_the_probe_files_are_package_data():
  """`crsec calibrate` runs from an installed package, without bench/."""
  text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
  setup = tomllib.loads(text)["tool"]["setuptools"]
  assert {"*.yaml", "*.probes.yaml"} <= set(
      setup["package-data"]["crsec_concordia.scenarios"])
  assert "crsec_concordia.calibration" in setup["packages"]


@pytest.mark.parametrize("paths", [
    *[(load_scenario(n).source_path, None) for n in SHIPPED + PLACED],
    *probes.venues_in(ROOT / "bench" / "heldout")],
    ids=lambda p: p[0].stem if p else "")
def test_every_venue_has_intentions_marked_apart(paths):
  """DetectConflict's false alarms on deeds only meant or begun are
  counted apart: every venue has some, each a non-breach."""
  scenario = load_scenario(str(paths[0]))
  cases = probes.load_probes(paths[1] or probes.probes_path(scenario),
                             scenario).conflicts
  meant = [c for c in cases if c.intention]
  assert len(meant) >= 4
  assert not any(c.breaks for c in meant)
  assert any(not c.breaks and not c.intention for c in cases)


def test_an_intention_that_breaks_its_norm_is_refused(tmp_path):
  scenario = load_scenario("hobbs_cafe_mini")
  bad = tmp_path / "bad.probes.yaml"
  bad.write_text(
      "conflicts:\n  - {norm: No smoking indoors., actor: Carlos Gomez, "
      "breaks: true, intention: true, action: Carlos Gomez reaches for "
      "his lighter.}\n", encoding="utf-8")
  with pytest.raises(UserError, match="an intention breaks nothing yet"):
    probes.load_probes(bad, scenario)


@pytest.mark.parametrize("name", SHIPPED)
def test_each_venue_has_40_referee_cases_half_of_them_none(name):
  scenario = load_scenario(name)
  cases = probes.load_probes(probes.probes_path(scenario), scenario)
  referee = cases.referee
  assert len(referee) >= 40
  assert 2 * sum(not c.behaviours for c in referee) >= len(referee)
  tagged = [b for c in referee for b in c.behaviours]
  # Every behaviour of the venue in the general call, none left at one case.
  assert {b: tagged.count(b) >= 2 for b in scenario.behaviour_ids} == {
      b: True for b in scenario.behaviour_ids}
  assert {c.place for c in referee} >= {"indoors", "outdoors"}
  assert len({c.actor for c in referee}) == len(scenario.agent_names)
  assert len({c.action for c in referee}) == len(referee)  # No twins.
  assert len(cases.conflicts) >= 8
  assert {c.breaks for c in cases.conflicts} == {True, False}
  assert {c.norm for c in cases.conflicts} >= {
      t.text for t in scenario.target_norms}


@pytest.mark.parametrize("name", PLACED)
def test_a_venue_with_places_has_cases_in_each_place(name):
  """Each behaviour twice, half the cases none, every place where a deed
  happens and where an actor is told to be, an actor moving once."""
  scenario = load_scenario(name)
  cases = probes.load_probes(probes.probes_path(scenario), scenario)
  referee, places = cases.referee, {p.id for p in scenario.places}
  assert 12 <= len(referee) <= 40
  assert 2 * sum(not c.behaviours for c in referee) >= len(referee) - 4
  tagged = [b for c in referee for b in c.behaviours]
  assert all(tagged.count(b) >= 1 for b in scenario.behaviour_ids)
  assert {c.place for c in referee} == places
  assert {c.at for c in referee} <= places
  assert any(c.at and c.place != c.at for c in referee)
  assert {c.norm for c in cases.conflicts} >= {
      t.text for t in scenario.target_norms}


@pytest.mark.parametrize("paths", probes.venues_in(ROOT / "bench" / "heldout"),
                         ids=lambda p: p[0].stem)
def test_each_heldout_venue_is_a_whole_scenario_with_labelled_cases(paths):
  """A held-out venue (bench/heldout/) loads as any scenario does and has
  the shipped venues' kind of cases: >= 40 for the referee, half of them
  none, every behaviour in two or more, and DetectConflict both ways."""
  scenario_path, probes_path = paths
  scenario = load_scenario(str(scenario_path))
  assert scenario.name not in SHIPPED
  assert probes_path.name == f"{scenario.name}.probes.yaml"
  cases = probes.load_probes(probes_path, scenario)
  referee = cases.referee
  assert len(referee) >= 40
  assert 2 * sum(not c.behaviours for c in referee) >= len(referee)
  tagged = [b for c in referee for b in c.behaviours]
  assert all(tagged.count(b) >= 2 for b in scenario.behaviour_ids)
  assert len({c.action for c in referee}) == len(referee)
  assert len(cases.conflicts) >= 8
  assert {c.breaks for c in cases.conflicts} == {True, False}


def test_there_is_a_heldout_venue_and_heldout_takes_no_scenario(capsys):
  assert probe.heldout_venues() == probes.venues_in(ROOT / "bench" / "heldout")
  assert probe.heldout_venues()
  with pytest.raises(SystemExit) as info:
    probe.main(["--heldout", "--probes", "x.yaml"])
  assert info.value.code == 2
  assert "--heldout" in capsys.readouterr().err
  with pytest.raises(SystemExit) as info:
    probe.main(["--heldout", "--record"])
  assert info.value.code == 2


def test_tag_counts_are_micro_averaged_over_cases():
  counts = probe_scores.TagCounts()
  assert counts.add(["loud"], ["loud"])  # TP 1
  assert not counts.add(["smoking_indoors", "loud"], ["smoking_indoors"])
  assert not counts.add([], ["quiet"])  # A none case: its false tag.
  assert counts.add([], [])  # A none case right: nothing counted.
  assert not counts.add(["tipped"], ["refused_tip"])  # FP 1 and FN 1.
  assert not counts.add(["tipped"], ())  # A failed answer: FN 1.
  assert (counts.tp, counts.fp, counts.fn) == (2, 2, 3)
  assert (counts.cases, counts.none_cases, counts.exact) == (6, 2, 2)
  assert counts.precision == pytest.approx(2 / 4)
  assert counts.recall == pytest.approx(2 / 5)
  assert not counts.meets_target()
  assert counts.line() == "referee P 0.50 R 0.40 (n=6, 2 none)"


def test_tag_counts_of_a_referee_that_tags_nothing_and_the_target():
  silent = probe_scores.TagCounts()
  silent.add(["loud"], [])
  silent.add([], [])
  assert (silent.precision, silent.recall) == (1.0, 0.0)
  assert not silent.meets_target()
  good = probe_scores.TagCounts()
  for _ in range(9):
    good.add(["loud"], ["loud"])
  good.add([], ["quiet"])
  good.add(["tipped"], [])
  good.add(["tipped"], [])
  assert (good.precision, good.recall) == (0.9, pytest.approx(9 / 11))
  assert good.meets_target()


def test_the_summary_line_of_a_venue():
  counts = probe_scores.TagCounts()
  counts.add(["loud"], ["loud"])
  counts.add([], [])
  assert probe_scores.summary_line(
      "hobbs_cafe", counts, (10, 12), (9, 10)) == (
          "hobbs_cafe: referee P 1.00 R 1.00 (n=2, 1 none); places 10/12; "
          "DetectConflict 9/10")
  assert probe_scores.summary_line(
      "x", None, None, (1, 2), ("bill", 3, 4)) == (
          "x: DetectConflict 1/2; bill check 3/4")


def test_all_takes_no_scenario(capsys):
  with pytest.raises(SystemExit) as info:
    probe.main(["--all", "--scenario", "hobbs_cafe"])
  assert info.value.code == 2
  assert "--all" in capsys.readouterr().err


def test_a_probe_file_for_another_scenario_is_refused(tmp_path):
  garden = load_scenario("community_garden")
  cafe_cases = probes.probes_path(load_scenario("hobbs_cafe_mini"))
  with pytest.raises(UserError) as info:
    probes.load_probes(cafe_cases, garden)
  lines = str(info.value).splitlines()
  assert f"{cafe_cases}: 'smoking_indoors' is not a behaviour of community_garden" in lines
  assert f"{cafe_cases}: community_garden has no occasion 'bill' naming behaviours" in lines
  bad = tmp_path / "bad.yaml"
  bad.write_text("referee: [{actor: Ruth Okafor}]\n", encoding="utf-8")
  with pytest.raises(UserError, match="not a probe file"):
    probes.load_probes(bad, garden)


def test_the_probe_says_what_is_wrong_in_one_line_and_exit_2(tmp_path, capsys):
  assert probe.main(["--scenario", "community_garden", "--probes",
                     str(tmp_path / "missing.yaml")]) == 2
  assert "cannot be read" in capsys.readouterr().err


def test_recorded_decisions_give_the_referee_rates_the_correction_reads(
    tmp_path):
  """--record writes the model's calibration, which metrics/classifiers/
  referee_quality.py reads: a referee that answers every case as labelled
  gives no false tag for a target; only for the model it measured."""
  scenario = load_scenario("hobbs_cafe_mini")
  cases = probes.load_probes(probes.probes_path(scenario), scenario).referee
  measured = {"venue": scenario.name, "summary": {},
              "behaviours": {b.id: b.description
                             for b in scenario.behaviours},
              "referee": [{"action": c.action, "truth": sorted(c.behaviours),
                           "given": sorted(c.behaviours)} for c in cases]}
  described = {"endpoint": "http://127.0.0.1:1/v1", "model": "a scripted "
               "referee", "judgement_prompts": judgement_prompts.prompts_hash()}
  who = identity.ModelIdentity.of_described(described)
  path = store.write(store.target_path(who, tmp_path), who,
                     {scenario.name: store.probe_entry(measured, who.prompts)})
  assert json.loads(path.read_text())["model"]["name"] == "a scripted referee"
  target = scenario.target_norms[0]
  as_dict = scenario.model_dump(mode="json")
  same = referee_quality.rates(target, as_dict, calibrations=[tmp_path],
                               model=described)
  assert same.rates is not None, same.note
  assert same.rates.fp == same.rates.fn == 0
  assert same.rates.tp > 0
  assert path.name in same.note and "NOTE" not in same.note
  # Another model's answers say nothing of this run's referee.
  other = referee_quality.rates(target, as_dict, calibrations=[tmp_path],
                                model={**described, "model": "a 7B model"})
  assert other.rates is None
  assert other.note.startswith("not calibrated for a 7B model on "
                               "hobbs_cafe_mini: run crsec calibrate "
                               "hobbs_cafe_mini --base-url http://127.0.0.1:1"
                               "/v1 --model 'a 7B model'")


def test_only_keeps_the_sections_asked_for(capsys):
  scenario = load_scenario("hobbs_cafe_mini")
  cases = probes.load_probes(probes.probes_path(scenario), scenario)
  conflicts = cases.only(["conflicts"])
  assert conflicts.conflicts == cases.conflicts
  assert not conflicts.referee and conflicts.occasion is None
  assert cases.only(None) is cases
  with pytest.raises(SystemExit) as info:
    probe.main(["--record", "--only", "conflicts"])
  assert info.value.code == 2
  assert "--only must include referee" in capsys.readouterr().err


def test_jobs_must_be_one_or_more(capsys):
  with pytest.raises(SystemExit) as info:
    probe.main(["--jobs", "0"])
  assert info.value.code == 2
  assert "--jobs must be 1 or more" in capsys.readouterr().err


def test_cases_asked_at_once_are_recorded_in_the_cases_order():
  """However many are asked at once, the calibration (and the decisions
  --record writes) follows the cases' order: it does not depend on which
  thread finishes first."""
  scenario = load_scenario("community_garden")
  cases = probes.load_probes(probes.probes_path(scenario), scenario)

  def general(prompt):
    action = re.search(r'^[^:\n]+: "(.*)"$', prompt, re.M)[1]
    own = "own plot" in action
    return {"narration": action, "place": "outdoors",
            "behaviour": "picked_own_plot" if own else "none",
            "also": "none", "evidence": action if own else "none"}

  def model():
    return ScriptedModel([(crsec_script.LOOK, crsec_script.look_none),
                          (crsec_script.DOER, crsec_script.doer_answer),
                          (crsec_script.DETECT, crsec_script.each(
                              {"evidence": "none", "verdict": "unrelated"})),
                          (r"Which of these does", {"evidence": "none",
                                                    "behaviour": "none"}),
                          (r"You are the referee", general)])
  one = probe_run.measure_venue(model(), shared_embedder(), scenario, cases,
                                jobs=1)
  four = probe_run.measure_venue(model(), shared_embedder(), scenario, cases,
                                 jobs=4)
  assert [d["action"] for d in four["referee"]] == [
      c.action for c in cases.referee]
  assert four == one
  recorded = store.decisions(four)
  assert any(d["given"] == ["picked_own_plot"] for d in recorded)
  # The answers, and every structure's inputs, so any policy replays.
  assert set(recorded[0]) == {"action", "truth", "given", "scores",
                              "deed_scores", "doers", "by_actor", "looked",
                              "spared", "failed", "look"}


def test_cache_replays_the_models_answers_from_the_file_given(
    tmp_path, monkeypatch):
  """--cache hands the response cache to the model, so a replay asks only
  the prompts a change made new."""
  given = {}

  class Stop(Exception):
    pass

  def make_model(endpoint, **kwargs):
    del endpoint
    given.update(kwargs)
    raise Stop
  monkeypatch.setattr(models, "make_model", make_model)
  with pytest.raises(Stop):
    probe.main(["--scenario", "hobbs_cafe_mini", "--only", "conflicts",
                "--cache", str(tmp_path / "answers.sqlite")])
  assert given["cache_path"] == tmp_path / "answers.sqlite"
  with pytest.raises(Stop):
    probe.main(["--scenario", "hobbs_cafe_mini", "--only", "conflicts"])
  assert given["cache_path"] is None

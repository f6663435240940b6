"""One referee: a venue is measured with the settings its runs apply.

The referee's settings (its policy, the embedder's thresholds and the
nearest rule's near tie) are built by one function
(calibration/run_policy.py, `settings`), from the policy a run resolves
for its venue and model. A run passes that policy to its game master in
the params; the probe runner (`crsec calibrate`, bench/judgement_probe.py)
asks `for_venue` for it. Both must end with the same settings, on a venue
with labelled cases of its own (every structure for the embedded model),
on one without (the held-out default) and for a model nobody measured.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from crsec_concordia.calibration import held_out, run_policy
from crsec_concordia.calibration.identity import (EMBEDDED, ENDPOINT, GIVEN,
                                                  ModelIdentity)
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.embedding import thresholds_of
from crsec_concordia.game_masters import adjudication as adjudication_lib
from crsec_concordia.game_masters import prefab
from crsec_concordia.judgement_prompts import prompts_hash
from crsec_concordia.metrics.classifiers import probe_run
from crsec_concordia.models import ScriptedModel
from crsec_concordia.runs import config as config_lib
from crsec_concordia.scenarios import load_scenario

HELDOUT = Path(__file__).resolve().parents[1] / "bench" / "heldout"
EMBEDDED_MODEL = ModelIdentity("qwen2.5-coder-1.5b-instruct-q4_k_m",
                               EMBEDDED, prompts_hash())
NOBODYS = ModelIdentity("nobody-measured-this", ENDPOINT, prompts_hash())
HANDED = ModelIdentity("ScriptedModel", GIVEN, prompts_hash())


def _run_settings(scenario, identity, embedder) -> run_policy.RefereeSettings:
  """The settings of the referee a run builds: the policy resolved as
  run_episode resolves it, through config.json's params into the game
  master's prefab."""
  chosen = run_policy.resolve(run_policy.AUTO, identity, scenario)
  config = config_lib.build_config(scenario, "normative", 1,
                                   chosen.policy if chosen else None)
  params, = [i.params for i in config.instances
             if i.role.name == "GAME_MASTER"]
  params = json.loads(json.dumps(params))  # As config.json holds them.
  built = prefab.components(ScriptedModel([]), embedder, scenario, [],
                            scenario.agent_names,
                            prefab.referee_policy(params))
  return built[adjudication_lib.ADJUDICATION_KEY].settings


def _probe_settings(scenario, identity, embedder):
  settings = run_policy.for_venue(scenario, identity, thresholds_of(embedder))
  venue = probe_run._Venue(  # pylint: disable=protected-access
      ScriptedModel([]), embedder, scenario, settings)
  return venue.referee.settings


@pytest.mark.parametrize("venue,identity,expected", [
    ("hobbs_cafe_mini", EMBEDDED_MODEL, "all_on"),
    ("community_garden", EMBEDDED_MODEL, "all_on"),
    ("posted_rule", EMBEDDED_MODEL, "held_out"),
    (str(HELDOUT / "office_kitchen.yaml"), EMBEDDED_MODEL, "held_out"),
    ("posted_rule", HANDED, "all_on"),
    ("hobbs_cafe_mini", NOBODYS, "trusting"),
], ids=lambda v: Path(str(v)).stem if isinstance(v, str) else None)
def test_a_probe_run_and_a_run_of_the_venue_build_the_same_referee(
    venue, identity, expected, embedder):
  scenario = load_scenario(venue)
  run = _run_settings(scenario, identity, embedder)
  probe = _probe_settings(scenario, identity, embedder)
  assert run == probe
  assert run.tie == probe.tie
  assert run.policy == {"all_on": RefereePolicy.all_on(),
                        "trusting": RefereePolicy.trusting(),
                        "held_out": run_policy.held_out_default().policy
                        }[expected]
  assert run.floors == thresholds_of(embedder)


def test_the_tie_applies_exactly_where_the_nearest_rule_is_not_strict():
  floors = thresholds_of(None)
  strict = run_policy.settings(RefereePolicy.all_on(), floors)
  lenient = run_policy.settings(dataclasses.replace(
      RefereePolicy.all_on(), look_strict=False), floors)
  assert strict.tie == 0.0 and lenient.tie == floors.near_tie > 0
  assert strict.recorded()["near_tie"] == floors.near_tie


def test_a_venue_has_labelled_cases_of_its_own_only_where_they_are_its(
    tmp_path, monkeypatch):
  monkeypatch.setattr(run_policy.store, "entries", lambda dirs=None: [])
  assert run_policy.labelled(load_scenario("town"), EMBEDDED_MODEL)
  assert not run_policy.labelled(load_scenario("posted_rule"),
                                 EMBEDDED_MODEL)
  heldout = load_scenario(str(HELDOUT / "office_kitchen.yaml"))
  assert not run_policy.labelled(heldout, EMBEDDED_MODEL)
  # A file elsewhere under a shipped venue's name is not that venue.
  copy = tmp_path / "hobbs_cafe_mini.yaml"
  copy.write_text(Path(load_scenario("hobbs_cafe_mini").source_path
                       ).read_text(encoding="utf-8"), encoding="utf-8")
  assert not run_policy.labelled(load_scenario(str(copy)), EMBEDDED_MODEL)
  # Calibrated on it, the model has the venue's own labels.
  monkeypatch.setattr(run_policy.store, "entries", lambda dirs=None: [
      {"scenario": "office_kitchen", "model": EMBEDDED_MODEL.to_dict()}])
  assert run_policy.labelled(heldout, EMBEDDED_MODEL)
  assert run_policy.resolve(run_policy.AUTO, EMBEDDED_MODEL, heldout) is None


def test_a_policy_written_before_the_strict_switch_reads_it_as_on():
  old = {k: v for k, v in RefereePolicy.trusting().to_dict().items()
         if k != "look_strict"}
  assert RefereePolicy.from_dict(old).look_strict is True
  assert RefereePolicy.from_dict(old).structures() == ("look_strict",)


def _case(truth, given, by_actor):
  return {"truth": truth, "given": given, "scores": dict.fromkeys(given, 1.0),
          "deed_scores": dict.fromkeys(given, 1.0),
          "by_actor": dict.fromkeys(given, by_actor), "spared": False,
          "look": None, "failed": False}


def _venue(name, cases):
  return {"venue": name, "floors": run_policy.settings(
      None, thresholds_of(None)).recorded(), "sides": {},
          "referee": cases, "occasion": [], "conflicts": []}


def test_a_structure_is_on_by_default_only_if_it_helps_the_venues_held_out():
  """The doer check refuses wrong tags by someone else in both folds: on.
  In one fold it refuses right tags too, more than it saves there, yet
  summed over the folds it still helps; the second look never tells
  anything apart here: off, since it has not shown that it helps."""
  right = [_case(["a"], ["a"], True)] * 4
  wrong = [_case([], ["a"], False)] * 3
  refused_right = [_case(["a"], ["a"], False)] * 2
  folds = held_out.folds_of([("garden", _venue("garden", right + wrong)),
                             ("cafe", _venue("cafe", right + wrong
                                             + refused_right)),
                             ("cafe", _venue("cafe_mini", right))])
  assert list(folds) == ["garden", "cafe"]
  rows = {row.structure: row for row in held_out.held_out_table(folds)}
  doer = rows["doer_check"]
  assert doer.told_apart and doer.verdict == held_out.ON
  assert sum(doer.with_it.values()) > sum(doer.without.values())
  assert rows["second_look"].verdict == held_out.UNDECIDED
  assert not rows["second_look"].on
  # Right tags by the actor the check calls someone else's, everywhere:
  # off.
  folds = held_out.folds_of([("garden", _venue("garden", right
                                               + refused_right)),
                             ("cafe", _venue("cafe", right + refused_right))])
  rows = {row.structure: row for row in held_out.held_out_table(folds)}
  assert rows["doer_check"].verdict == held_out.OFF
  assert not held_out.default_policy(list(rows.values())).doer_check

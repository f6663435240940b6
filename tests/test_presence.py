"""Shares over the agents present: an agent not yet arrived, or gone, is
neither counted nor flagged, and the viewer draws it away.

The two rooms of tests/test_places_run.py on the scripted model, with
Nora, who holds "No smoking indoors." from the start and arrives at slot
3, and Carlos, who shouts at the dartboard in every slot and leaves at
slot 4. Mei smokes and shouts in slot 1. So at slot 1 the belief share is
Abigail's alone, 1 of the 4 present (not 2 of 5), and the share of agents
not shouting is 2 of 4, then 3 of 5 once Nora is there, then 3 of 4 once
Carlos has gone. Hand-built runs check the rule alone: a run ended before
an arrival, a group arriving, a run with neither.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crsec_concordia import runner
from crsec_concordia.metrics.classifiers import corrected, correction
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.metrics.measure import adoption, run_metrics
from crsec_concordia.rundir import presence
from crsec_concordia.rundir.reading import Run, read_run
from crsec_concordia.scenarios import parse_scenario
from crsec_concordia.view import extract, load
from tests import test_places_run as rooms

ABIGAIL, MEI, CARLOS, TOM = rooms.ABIGAIL, rooms.MEI, rooms.CARLOS, rooms.TOM
NORA = "Nora Park"
STEPS = [1, 2, 3, 4, 5, 6]


def scenario_text() -> str:
  """The rooms with Nora (holding the norm), two target norms, Nora
  arriving at 3 and Carlos leaving at 4."""
  nora = (f"  - {{name: {NORA}, role: ordinary, persona: A new member., "
          "home: reading_room,\n     initial_norms: [{content: No smoking "
          "indoors., type: injunctive, utility: 90}]}\n")
  return rooms.ROOMS.replace("behaviours:\n", nora + "behaviours:\n") + f"""
target_norms:
  - {{id: no_smoking, text: No smoking indoors., type: injunctive,
     violates: [smoking_indoors]}}
  - {{id: quiet, text: Do not shout in the club., type: injunctive,
     violates: [loud]}}
interventions:
  - {{kind: arrive, at: 3, agents: [{NORA}]}}
  - {{kind: leave, at: 4, agents: [{CARLOS}]}}
"""


def model():
  def deed(name: str, clock: str, _prompt: str) -> str:
    if name == MEI:
      return ("Mei lights a cigarette and shouts for an ashtray."
              if clock == "09:00" else "Mei joins in a round of whist.")
    return {ABIGAIL: "Abigail reads by the window.",
            CARLOS: "Carlos shouts at the dartboard.",
            NORA: "Nora hangs up her coat.",
            TOM: "Tom shuffles the deck."}[name]

  return rooms.acting_model(deed)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, embedder) -> Path:
  return runner.run_episode(
      parse_scenario(scenario_text(), "present.yaml"), arm="normative",
      seed=1, out_dir=tmp_path_factory.mktemp("present") / "run",
      model=model(), embedder=embedder, progress=False)


@pytest.fixture(scope="module")
def measured(run_dir, embedder):
  run = read_run(run_dir)
  matcher = NormMatcher(run.targets, behaviours=run.behaviours,
                        embedder=embedder)
  return (run, adoption.belief(run, STEPS, matcher),
          adoption.behaviour(run, STEPS, matcher, flags=True),
          run_metrics.compute(run, matcher))


def test_who_is_present_follows_the_arrive_and_leave_records(measured):
  run = measured[0]
  away = presence.absence(run, STEPS)
  assert away[:2] == [{NORA: presence.NOT_YET}] * 2
  assert away[2] == {}
  assert away[3:] == [{CARLOS: presence.LEFT}] * 3
  assert [len(p) for p in presence.present_at(run, STEPS)] == [4, 4, 5, 4, 4, 4]


def test_belief_counts_only_the_agents_present(measured, run_dir):
  run, belief, _, _ = measured
  # Nora holds the norm before she arrives, but is not counted.
  assert [n["content"] for n in rooms.held(run_dir, 1)[NORA]] == [
      "No smoking indoors."]
  assert belief["share"]["no_smoking"][0] == 0.25
  index = {a: i for i, a in enumerate(run.agents)}
  for k, flags in enumerate(belief["flags"]["no_smoking"]):
    step = STEPS[k]
    assert (flags[index[NORA]] is None) == (step < 3)
    assert (flags[index[CARLOS]] is None) == (step >= 4)
    here = [f for f in flags if f is not None]
    assert belief["share"]["no_smoking"][k] == sum(here) / len(here)
  assert NORA in belief["holders"]["no_smoking"]
  assert CARLOS not in belief["holders"]["no_smoking"]


def test_behaviour_counts_only_the_agents_present(measured):
  _, _, behaviour, _ = measured
  assert behaviour["behaviour_nonviolating"]["quiet"] == [
      0.5, 0.5, 0.6, 0.75, 0.75, 0.75]
  # Carlos, who shouted, is no longer among those observed once gone.
  assert behaviour["observed"]["quiet"] == [2.0, 2.0, 2.0, 1.0, 1.0, 1.0]
  assert behaviour["behaviour_observed"]["quiet"] == [0.0] * 6
  index = {a: i for i, a in enumerate(measured[0].agents)}
  flags = behaviour["flags"]["quiet"]
  assert [f[index[CARLOS]] for f in flags] == [False] * 3 + [None] * 3
  assert [f[index[NORA]] for f in flags] == [None] * 2 + [False] * 4


def test_the_report_and_its_windows_use_the_same_shares(measured):
  _, belief, behaviour, m = measured
  assert m.per_step["belief.no_smoking"].tolist() == belief["share"][
      "no_smoking"]
  assert m.per_step["behaviour_nonviolating.quiet"].tolist() == behaviour[
      "behaviour_nonviolating"]["quiet"]
  windows = {(w["intervention"], w["target"]): w
             for w in m.summary["interventions"]}
  left = windows[("leave", "no_smoking")]
  assert left["belief_before"] == belief["share"]["no_smoking"][2]
  assert left["belief_after"] == belief["share"]["no_smoking"][5]


def test_the_corrected_share_leaves_the_absent_out():
  rates = correction.Rates(tp=90, fn=10, tn=95, fp=5)
  with_absent = corrected._series([[True, None, False, True]], None, rates)
  present = correction.estimate(np.asarray([[True, False, True]]), rates)
  assert with_absent[0].raw == present.raw == pytest.approx(2 / 3)
  assert with_absent[0].corrected == present.corrected
  pooled = corrected.pooled_estimate([[True, None, False], [None, True, True]],
                                     None, rates)
  assert pooled.raw == pytest.approx(0.75) and pooled.agents == 4


def test_the_viewer_draws_the_absent_away(run_dir):
  data = extract.run_data(load.loaded_run(run_dir))
  names = [a["n"] for a in data["agents"]]
  nora, carlos = names.index(NORA), names.index(CARLOS)
  assert data["away"][:2] == [[[nora, presence.NOT_YET]]] * 2
  assert data["away"][2] == []
  assert data["away"][3:] == [[[carlos, presence.LEFT]]] * 3


def _run(interventions: list[dict], records: list[dict],
         agents=(("Ann", None), ("Bo", "late"), ("Cy", "late"))) -> Run:
  scenario = {"agents": [{"name": n, "group": g} for n, g in agents],
              "interventions": interventions}
  return Run(path=Path("."), run={"seed": 3}, scenario=scenario,
             records=records, snapshots={}, usage=None)


def test_an_arrival_the_run_never_reached_stays_absent():
  run = _run([{"kind": "arrive", "at": 9, "group": "late"}], [])
  assert presence.absence(run, [1, 2]) == [
      {"Bo": presence.NOT_YET, "Cy": presence.NOT_YET}] * 2
  assert presence.present_at(run, [1, 2]) == [["Ann"], ["Ann"]]


def test_a_group_arrives_and_a_share_leaves_as_recorded():
  run = _run([{"kind": "arrive", "at": 2, "group": "late"},
              {"kind": "leave", "at": 3, "share": 0.5}],
             [{"kind": "intervention", "step": 2, "intervention": "arrive",
               "agents": ["Bo", "Cy"]},
              {"kind": "intervention", "step": 3, "intervention": "leave",
               "agents": ["Ann"]},
              {"kind": "intervention", "step": 3, "what": "a sign"}])
  assert presence.present_at(run, [1, 2, 3]) == [
      ["Ann"], ["Ann", "Bo", "Cy"], ["Bo", "Cy"]]


def test_without_arrive_or_leave_everyone_is_present():
  run = _run([{"kind": "announce", "at": 1, "text": "Hello."}], [])
  assert presence.present_at(run, [1, 2]) == [["Ann", "Bo", "Cy"]] * 2

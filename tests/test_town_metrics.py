"""Adoption per place and group, and the norms carried between places.

A hand-built run of known answers (tests/metrics_fixtures.py) for the
shares, and a run of real CRSEC agents on the scripted model (the two
rooms of tests/test_places_run.py, where Mei takes the norm in the
reading room and walks to the games room) for the attribution of a
carried norm to the agent who carried it and the slot it came.
"""

from __future__ import annotations

import copy
import json

import pytest

from crsec_concordia import cli, load_run, runner
from crsec_concordia.metrics.measure import places, run_metrics
from crsec_concordia.metrics.present import report, tables
from crsec_concordia.rundir.format import SUMMARY_JSON
from crsec_concordia.rundir.reading import read_run
from crsec_concordia.scenarios import parse_scenario
from tests import test_places_run as two_rooms
from tests.metrics_fixtures import (ABIGAIL, CARLOS, ISABELLA, SAM,
                                    SCENARIO, RunBuilder)

NORM = "no_smoking_indoors"


def town_scenario() -> dict:
  s = copy.deepcopy(SCENARIO)
  s["name"] = "two_place_cafe"
  s["places"] = [
      {"id": "cafe_room", "description": "the room", "indoors": True},
      {"id": "terrace", "description": "the terrace", "indoors": False}]
  s["default_place"] = "cafe_room"
  homes = {ABIGAIL: ("cafe_room", "locals"), ISABELLA: ("cafe_room", "locals"),
           CARLOS: ("terrace", "visitors"), SAM: ("terrace", "visitors")}
  for agent in s["agents"]:
    agent["home"], agent["group"] = homes[agent["name"]]
  return s


def town_run(tmp_path, seed: int = 1, path: str = "town"):
  """Abigail holds the norm in the café room from slot 1 and tells
  Isabella in slot 2; Isabella goes out to the terrace in slot 3; Sam
  takes the norm from her there in slot 4 (with seed 1; with another, he
  does not)."""
  b = RunBuilder(tmp_path / path, steps=5, seed=seed,
                 scenario=town_scenario())
  b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  b.action(1, ABIGAIL, ["quiet_talk"], place="cafe_room")
  b.action(1, SAM, ["smoking_indoors"], place="terrace")
  b.hold(2, ISABELLA, "Do not smoke inside the café.", source_agent=ABIGAIL)
  b.action(3, ISABELLA, ["smoking_outside"], place="terrace")
  if seed == 1:
    b.hold(4, SAM, "Indoor smoking is prohibited.", source_agent=ISABELLA)
  return b.write()


def test_adoption_per_place_and_group(tmp_path, embedder):
  del embedder  # Loaded once per session.
  m = run_metrics.compute(read_run(town_run(tmp_path)))
  rows = m.places[m.places["target"] == NORM].set_index(
      ["step", "by", "where"])
  def at(step, by, where):
    row = rows.loc[(step, by, where)]
    return int(row["agents"]), row["belief"], row["behaviour"]
  assert at(1, "place", "cafe_room") == (2, 0.5, 0.0)
  assert at(1, "place", "terrace") == (2, 0.0, 0.0)
  assert at(2, "place", "cafe_room") == (2, 1.0, 0.0)
  # Isabella has gone out: the café room is Abigail's alone.
  assert at(3, "place", "cafe_room") == (1, 1.0, 0.0)
  assert at(3, "place", "terrace") == pytest.approx((3, 1 / 3, 1 / 3))
  assert at(4, "place", "terrace") == pytest.approx((3, 2 / 3, 1 / 3))
  assert at(2, "group", "locals") == (2, 1.0, 0.0)
  assert at(4, "group", "visitors") == (2, 0.5, 0.0)
  final = m.summary["places"]["final"]
  assert final["place"]["terrace"][NORM]["belief"] == pytest.approx(2 / 3)
  assert final["group"]["locals"][NORM] == {"agents": 2, "belief": 1.0,
                                            "behaviour": 0.5}
  carried = [c for c in m.summary["places"]["carried"] if c["target"] == NORM]
  assert carried == [
      {"place": "cafe_room", "target": NORM, "step": 1, "agent": ABIGAIL,
       "carried": False, "from_place": None, "held_since": None,
       "arrived": None, "time": "Day 1 09:00"},
      {"place": "terrace", "target": NORM, "step": 3, "agent": ISABELLA,
       "carried": True, "from_place": "cafe_room", "held_since": 2,
       "arrived": 3, "time": "Day 1 09:20"}]
  # The files and load_run carry the same table.
  out = tables.write_run(m)
  written = json.loads((out / SUMMARY_JSON).read_text())
  assert written["places"]["carried"][1]["agent"] == ISABELLA
  assert (out / f"{tables.BY_PLACE}.csv").is_file()
  data = load_run(m.run.path)
  terrace = data.adoption[(data.adoption["where"] == "terrace")
                          & (data.adoption["target"] == NORM)]
  assert terrace["belief"].round(3).tolist() == [0.0, 0.0, 0.333, 0.667,
                                                 0.667]
  assert set(data.adoption["run"]) == {"normative seed 1"}


def test_a_one_room_run_has_no_places_block(tmp_path, embedder):
  del embedder
  b = RunBuilder(tmp_path / "room", steps=2)
  b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  b.action(1, CARLOS, ["smoking_indoors"])
  m = run_metrics.compute(read_run(b.write()))
  assert m.places.empty and "places" not in m.summary
  out = tables.write_run(m)
  assert not (out / f"{tables.BY_PLACE}.csv").exists()
  assert load_run(m.run.path).adoption.empty


def test_the_report_of_a_town_shows_places_groups_and_carried_norms(
    tmp_path, embedder):
  del embedder
  run_dir = town_run(tmp_path)
  result = report.run_report(run_dir)
  page = result.index.read_text()
  assert "Places and groups" in page and "terrace" in page
  assert "visitors" in page
  assert "from cafe_room" in page
  assert (result.index.parent / "figures" / "places.png").is_file()
  out = tmp_path / "results"
  assert cli.main(["report", "--publish", str(out), str(run_dir)]) == 0
  readme = (out / "README.md").read_text()
  assert "### Places and groups" in readme
  assert "| place | terrace | 3.0 | 67% / 33% |" in readme
  assert f"| 1 | terrace | No smoking indoors. | step 3 | {ISABELLA} |" in (
      readme)
  assert (out / "figures" / "two_place_cafe__places.png").is_file()
  assert "places" in json.loads((out / "results.json").read_text())[
      "groups"][0]


def test_the_compare_report_of_a_town_means_its_runs(tmp_path, embedder):
  del embedder
  base = tmp_path / "cmp"
  for seed in (1, 2):
    town_run(base, seed, f"normative/seed_{seed}")
  (base / "compare.json").write_text(json.dumps(
      {"scenario": "two_place_cafe", "seeds": [1, 2],
       "arms": {"normative": ["normative/seed_1", "normative/seed_2"]}}))
  result = report.compare_report(base)
  assert {"places.png", "groups.png"} <= {p.name for p in result.figures}
  page = result.index.read_text()
  assert "Places and groups" in page and "(mean of 2 runs)" in page
  # The terrace at the end: 2/3 hold in seed 1, 1/3 in seed 2.
  assert "<td>terrace</td><td>3</td><td>50% / 33%</td>" in page
  assert f"{ISABELLA} (seed 2)" in page


ROOMS_WITH_TARGET = two_rooms.ROOMS + """\
target_norms:
  - {id: no_smoking_indoors, text: No smoking indoors., type: injunctive, violates: [smoking_indoors]}
"""


def test_a_norm_carried_by_an_agent_who_moves_is_attributed_to_it(
    tmp_path, embedder):
  """Real agents: Abigail tells Mei "No smoking indoors." in the reading
  room in slot 2; Mei takes the norm up as slot 3 begins (observing) and
  then walks to the games room (acting): the games room's first holder is
  Mei, after slot 3, carrying it from the reading room; Carlos takes it
  from her there later."""
  scenario = parse_scenario(ROOMS_WITH_TARGET, "rooms.yaml")
  run_dir = runner.run_episode(
      scenario, arm="normative", seed=1, out_dir=tmp_path / "moves",
      model=two_rooms.model(True), embedder=embedder, progress=False)
  m = run_metrics.compute(read_run(run_dir))
  carried = {(c["place"], c["agent"]): c
             for c in m.summary["places"]["carried"] if c["target"] == NORM}
  assert set(carried) == {("reading_room", two_rooms.ABIGAIL),
                          ("games_room", two_rooms.MEI)}
  assert carried[("reading_room", two_rooms.ABIGAIL)]["carried"] is False
  mei = carried[("games_room", two_rooms.MEI)]
  assert mei["carried"] and mei["from_place"] == "reading_room"
  assert mei["step"] == mei["arrived"] == mei["held_since"] == 3
  games = m.places[(m.places["by"] == "place")
                   & (m.places["where"] == "games_room")].set_index("step")
  assert games.loc[2, "belief"] == 0.0 and games.loc[2, "agents"] == 2
  assert games.loc[3, "agents"] == 3
  assert games.loc[3, "belief"] == pytest.approx(1 / 3)
  assert games["belief"].iloc[-1] >= 2 / 3  # Carlos took it from Mei.
  assert not places.groups(m.run) or set(places.groups(m.run).values()) == {
      None}

"""The committed-minority sweep end to end on the scripted model.

`crsec sweep` on three sweep files: a small club of five hand-written
members whose committed minority (0, 1 or 2 members greeting with a bow
among members who shake hands) is marked by `group` and `committed` and
patched by name; the same club drawn by a population block, its
committed group's share set by a dotted path; and the shipped
examples/sweeps/committed_minority_small.yaml. Two seeds each, real CRSEC
agents answering from tests/convention_script.py, the runs in a thread of
the test's process instead of Ray tasks (the scripted model lives here).
Then `crsec report` on the sweep: the tipping curve computed, its table
and figure written. Seed 2's members value a norm they are told less
than their own (they hold the bow but go on shaking hands), so the seeds
differ and the interval is an interval.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from crsec_concordia import cli, runner
from crsec_concordia.commands import sweep as sweep_command
from crsec_concordia.metrics.measure import tipping
from crsec_concordia.runs import episode
from crsec_concordia.scenarios import load_scenario
from crsec_concordia.sweeps import aggregate, execute, spec as spec_lib
from tests import convention_script as club

BOW = {"content": club.BOW, "type": "descriptive", "utility": 90}
MEMBERS = ("Ann Lee", "Bo Chan", "Cy Diaz", "Dee Moss", "Eli Ford")
# Five members who greet with a handshake; entrepreneurs, so that each
# starts holding the norm it is given.
CLUB = """\
name: small_club
premise: A morning at the Linden Rooms, a members' club with one lounge.
setting: Linden Rooms, a members' club with one large lounge
clock: {start: "09:00", end: "10:00", minutes_per_step: 10, days: 1}
conversation: {max_rounds: 2}
agents:
""" + "".join(f"""\
  - name: {name}
    role: entrepreneur
    persona: {name} is a member of the Linden Rooms.
    group: majority
    initial_norms: [{{content: {club.HANDSHAKE}, type: descriptive, utility: 80}}]
""" for name in MEMBERS) + """\
behaviours:
  - {id: handshake, description: greets someone by shaking their hand}
  - {id: bow, description: greets someone with a bow}
target_norms:
  - {id: handshake_greeting, text: Greet people with a handshake., type: descriptive, complies: [handshake], violates: [bow]}
  - {id: bow_greeting, text: Greet people with a bow., type: descriptive, complies: [bow], violates: [handshake]}
"""
SWEEP = """\
name: small_minority
scenarios: [club.yaml]
seeds: 1-2
arms: [normative]
steps: 4
conditions:
  share_0: {}
  share_20:
    scenario:
      agents.Ann Lee.group: minority
      agents.Ann Lee.committed: true
      agents.Ann Lee.initial_norms: [%(bow)s]
  share_40:
    scenario:
      agents:
        Ann Lee: {group: minority, committed: true, initial_norms: [%(bow)s]}
        Bo Chan: {group: minority, committed: true, initial_norms: [%(bow)s]}
""" % {"bow": json.dumps(BOW)}


# The same club drawn by a population block, its committed group's share
# the sweep's axis by a dotted path.
DRAWN = """\
name: drawn_club
premise: A morning at the Linden Rooms, a members' club with one lounge.
setting: Linden Rooms, a members' club with one large lounge
clock: {start: "09:00", end: "10:00", minutes_per_step: 10, days: 1}
conversation: {max_rounds: 2}
population:
  seed: 3
  count: 5
  entrepreneurs: 0
  templates:
    - {occupation: baker, ages: [25, 65], persona: "{name} is a {age}-year-old {occupation} and a member of the club."}
  groups:
    convention:
      initial_norms: [{content: Greet people with a handshake., type: descriptive, utility: 80}]
    committed:
      share: 0
      committed: true
      initial_norms: [{content: Greet people with a bow., type: descriptive, utility: 90}]
behaviours:
  - {id: shook_hands, description: greets someone by shaking their hand}
  - {id: bowed, description: greets someone with a bow}
target_norms:
  - {id: greet_handshake, text: Greet people with a handshake., type: descriptive, complies: [shook_hands], violates: [bowed]}
  - {id: greet_bow, text: Greet people with a bow., type: descriptive, complies: [bowed], violates: [shook_hands]}
"""
DRAWN_SWEEP = """\
name: drawn_minority
scenarios: [club.yaml]
seeds: 1-2
arms: [normative]
steps: 4
conditions:
  share_0: {}
  share_20: {scenario: {population.groups.committed.share: 0.2}}
  share_40: {scenario: {population.groups.committed.share: 0.4}}
"""


def club_file(tmp_path, scenario: str = CLUB, sweep: str = SWEEP):
  (tmp_path / "club.yaml").write_text(scenario)
  (tmp_path / "sweep.yaml").write_text(sweep)


def sweep_scripted(tmp_path, embedder, monkeypatch,
                   ids: tuple[str, str] = ("bow", "handshake"),
                   sweep_file: Path | None = None):
  """`crsec sweep` on `sweep_file` (default tmp_path/sweep.yaml), its runs
  in a thread of this process on the scripted club (seed 1 takes up a
  norm it is told at 85, seed 2 at 78); returns the sweep directory."""
  real = episode.run_episode

  def scripted(scenario, **kwargs):
    kwargs.pop("endpoint", None)
    return real(scenario, model=club.club_model(
        scenario.agent_names, 85 if kwargs["seed"] == 1 else 78, ids),
                embedder=embedder, **kwargs)

  monkeypatch.setattr(runner, "run_episode", scripted)
  monkeypatch.setattr(sweep_command, "RayBackend",
                      lambda **kwargs: execute.ThreadBackend(1))
  out = tmp_path / "out"
  assert cli.main(["sweep", str(sweep_file or tmp_path / "sweep.yaml"),
                   "--out", str(out)]) == 0
  return out


def test_a_dotted_path_sets_one_value_by_index_or_name():
  data = {"groups": [{"id": "locals", "share": 0.5}, {"id": "minority",
                                                      "share": 0.1}]}
  assert spec_lib.set_path(data, "groups.1.share", 0.3)["groups"][1] == {
      "id": "minority", "share": 0.3}
  named = spec_lib.set_path(data, "groups.minority.share", 0.2)
  assert named["groups"][1]["share"] == 0.2
  assert data["groups"][1]["share"] == 0.1  # A copy: the data is unchanged.
  with pytest.raises(spec_lib.PathError, match="no entry with id or name"):
    spec_lib.set_path(data, "groups.visitors.share", 0.2)
  with pytest.raises(spec_lib.PathError, match="2 entries, no entry 2"):
    spec_lib.set_path(data, "groups.2.share", 0.2)


def test_a_condition_that_changes_a_population_draws_it_again():
  scenario = load_scenario("committed_minority")
  same = spec_lib.apply(scenario, spec_lib.Condition(scenario={
      "population.groups.committed.share": 0.25}))
  assert same.agents == scenario.agents
  fewer = spec_lib.apply(scenario, spec_lib.Condition(scenario={
      "population.count": 10, "population.groups.committed.share": 0.4}))
  assert len(fewer.agents) == 10
  assert sum(a.committed for a in fewer.agents) == 4
  assert {a.group for a in fewer.agents} == {"committed", "convention"}


def test_a_path_that_leads_nowhere_is_one_line(tmp_path, capsys):
  club_file(tmp_path)
  (tmp_path / "sweep.yaml").write_text(SWEEP.replace(
      "  share_0: {}", "  share_0: {scenario: {population.groups.1.share: 0}}"))
  assert cli.main(["sweep", str(tmp_path / "sweep.yaml"),
                   "--out", str(tmp_path / "out")]) == 2
  err = capsys.readouterr().err
  assert "conditions.share_0.scenario.population.groups.1.share" in err
  assert "has no key 'population'" in err and "Traceback" not in err
  assert not (tmp_path / "out").exists()


def test_the_committed_minority_sweep_draws_its_tipping_curve(
    tmp_path, embedder, monkeypatch, capsys):
  club_file(tmp_path)
  out = sweep_scripted(tmp_path, embedder, monkeypatch)
  said = capsys.readouterr().out
  assert "6/6 runs completed" in said
  assert ("small_club/share_40/default tipping: committed 40%, others "
          "holding and following its norm: 0.33 [0.00, 1.00] (n=2)") in said
  assert cli.main(["report", str(out)]) == 0

  runs = pd.read_csv(out / f"{aggregate.TIPPING_RUNS}.csv")
  assert set(runs["target"]) == {"bow_greeting"}
  share = runs.set_index(["condition", "seed"])
  assert share.loc[("share_0", 1), "minority_share"] == 0.0
  assert share.loc[("share_40", 2), "minority_share"] == pytest.approx(0.4)
  assert (runs[runs["condition"] == "share_0"][
      ["holding", "following", "adopted"]] == 0).all().all()
  # Seed 1: members told about the bow take it up and bow; the more
  # committed members, the more of the others do.
  seed1 = share.xs(1, level="seed")["adopted"]
  assert 0 < seed1["share_20"] < seed1["share_40"] <= 1
  # Seed 2: they hold the bow but go on shaking hands.
  seed2 = share.xs(2, level="seed")
  assert seed2.loc["share_40", "holding"] > 0
  assert seed2.loc["share_40", "adopted"] == 0

  curve = pd.read_csv(out / f"{aggregate.TIPPING}.csv")
  adopted = curve[curve["measure"] == "adopted"].set_index("condition")
  assert list(adopted["minority_share"]) == pytest.approx([0.0, 0.2, 0.4])
  row = adopted.loc["share_40"]
  assert row["n"] == 2 and row["mean"] == pytest.approx(seed1["share_40"] / 2)
  assert row["ci_low"] == 0.0 and row["ci_high"] > row["mean"]
  # A run of one room with groups: adoption per group, no places.
  run = json.loads((out / "runs" / "small_club__share_40__default__"
                    "normative__seed1" / "metrics" / "summary.json"
                    ).read_text())
  final = run["places"]["final"]
  assert set(final) == {"group"} and run["places"]["carried"] == []
  assert final["group"]["minority"]["bow_greeting"] == {
      "agents": 2, "belief": 1.0, "behaviour": 1.0}
  assert final["group"]["majority"]["bow_greeting"]["belief"] == (
      pytest.approx(2 / 3))
  summary = json.loads((out / "sweep_summary.json").read_text())
  assert summary["tipping"]["interval"] == tipping.INTERVAL
  assert (out / "report" / "figures" / "tipping_curve.png").stat().st_size
  page = (out / "report" / "index.html").read_text()
  assert "The tipping curve" in page and "share_40" in page
  # Published (docs/results): the curve over the sweep's conditions.
  results = tmp_path / "results"
  assert cli.main(["report", "--publish", str(results), str(out)]) == 0
  readme = (results / "README.md").read_text()
  assert "## The tipping curve: the committed agents' norm" in readme
  assert "| small_club | share_40 | default | 40% |" in readme
  assert (results / "figures" / "tipping_curve.png").stat().st_size
  published = json.loads((results / "results.json").read_text())
  assert len(published["tipping"]["curve"]) == 9  # 3 sizes x 3 measures.


def test_the_sweep_of_a_population_sets_the_committed_share_by_its_path(
    tmp_path, embedder, monkeypatch, capsys):
  """The same experiment with the club drawn by a population block: the
  committed group's share set by `population.groups.committed.share`."""
  club_file(tmp_path, DRAWN, DRAWN_SWEEP)
  out = sweep_scripted(tmp_path, embedder, monkeypatch,
                       ids=("bowed", "shook_hands"))
  assert "6/6 runs completed" in capsys.readouterr().out
  assert cli.main(["report", str(out)]) == 0
  runs = pd.read_csv(out / f"{aggregate.TIPPING_RUNS}.csv")
  assert set(runs["target"]) == {"greet_bow"}
  assert sorted(set(runs["committed"])) == [0, 1, 2]
  at = runs.set_index(["condition", "seed"])
  assert at.loc[("share_0", 1), "adopted"] == 0
  assert at.loc[("share_40", 1), "adopted"] > 0
  assert at.loc[("share_40", 2), "holding"] > at.loc[("share_40", 2),
                                                     "adopted"] == 0
  assert (out / "report" / "figures" / "tipping_curve.png").stat().st_size


def test_the_shipped_small_minority_sweep_runs_end_to_end(
    tmp_path, embedder, monkeypatch, capsys):
  """examples/sweeps/committed_minority_small.yaml as shipped (ten drawn
  neighbours in the hall and the courtyard, 0/20/40% committed, two
  seeds, four slots), on the scripted club: the tipping curve of its
  three sizes, its table and figure, and adoption per place and group."""
  sweep_file = (Path(__file__).resolve().parent.parent / "examples" /
                "sweeps" / "committed_minority_small.yaml")
  out = sweep_scripted(tmp_path, embedder, monkeypatch,
                       ids=("bowed", "shook_hands"), sweep_file=sweep_file)
  assert "6/6 runs completed" in capsys.readouterr().out
  assert cli.main(["report", str(out)]) == 0
  curve = pd.read_csv(out / f"{aggregate.TIPPING}.csv")
  adopted = curve[curve["measure"] == "adopted"]
  assert list(adopted["minority_share"]) == pytest.approx([0.0, 0.2, 0.4])
  assert set(adopted["target"]) == {"greet_bow"}
  assert list(adopted["n"]) == [2, 2, 2]
  assert adopted["mean"].iloc[0] == 0
  assert (out / "report" / "figures" / "tipping_curve.png").stat().st_size
  run = json.loads(next((out / "runs").glob("*share_40*seed1")).joinpath(
      "metrics", "summary.json").read_text())
  assert set(run["places"]["final"]) == {"place", "group"}
  assert set(run["places"]["final"]["place"]) <= {"hall", "courtyard"}
  assert run["places"]["final"]["group"]["committed"]["greet_bow"][
      "agents"] == 4

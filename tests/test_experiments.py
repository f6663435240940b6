"""The three experiments of the interventions and ties (issue's item 5)
end to end on the scripted model: `crsec sweep` on each shipped small
sweep file, then `crsec report`, and the curve or the comparison they
write (table and figure).

  - examples/sweeps/entrepreneur_share_small.yaml: the tipping curve of
    the others' adoption against the entrepreneurs' share;
  - examples/sweeps/entrepreneur_ties_small.yaml: the same on a ring and on
    a small world, one curve each;
  - examples/sweeps/posted_rule_small.yaml: the venue with and without a
    posted notice, the minutes to adoption compared.

The runs answer from the scripted club (tests/convention_script.py): an
agent greets by the greeting norm it holds (a handshake when it holds
none), an entrepreneur who sees a handshake judges it a conflict and says
its norm, and a norm heard in a talk is taken up. Few agents, few slots.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from crsec_concordia import cli
from crsec_concordia.sweeps import aggregate
from tests.test_committed_minority import sweep_scripted

SWEEPS = Path(__file__).resolve().parent.parent / "examples" / "sweeps"
IDS = ("bowed", "shook_hands")


def test_the_entrepreneur_share_sweep_draws_its_curve(
    tmp_path, embedder, monkeypatch, capsys):
  out = sweep_scripted(tmp_path, embedder, monkeypatch, ids=IDS,
                       sweep_file=SWEEPS / "entrepreneur_share_small.yaml")
  assert "6/6 runs completed" in capsys.readouterr().out
  assert cli.main(["report", str(out)]) == 0
  curve = pd.read_csv(out / f"{aggregate.TIPPING}.csv")
  adopted = curve[curve["measure"] == "adopted"].set_index("condition")
  assert list(adopted["minority_share"]) == pytest.approx([0.0, 0.2, 0.4])
  assert set(adopted["target"]) == {"greet_bow"}
  assert list(adopted["n"]) == [2, 2, 2]
  assert adopted.loc["share_0", "mean"] == 0
  # On the scripted club the others take the bow from the entrepreneurs'
  # talks: the more entrepreneurs, the more of them.
  assert 0 < adopted.loc["share_20", "mean"] <= adopted.loc["share_40", "mean"]
  runs = pd.read_csv(out / f"{aggregate.TIPPING_RUNS}.csv")
  assert sorted(set(runs["committed"])) == [0, 1, 2]
  assert (out / "report" / "figures" / "tipping_curve.png").stat().st_size
  # Published: the curve, and the three shares side by side.
  results = tmp_path / "results"
  assert cli.main(["report", "--publish", str(results), str(out)]) == 0
  readme = (results / "README.md").read_text()
  assert "## The tipping curve: the committed agents' norm" in readme
  assert "| entrepreneur_share | share_40 | default | 40% |" in readme
  assert "## The conditions compared: entrepreneur_share" in readme


def test_the_ties_sweep_draws_a_curve_per_network(
    tmp_path, embedder, monkeypatch, capsys):
  out = sweep_scripted(tmp_path, embedder, monkeypatch, ids=IDS,
                       sweep_file=SWEEPS / "entrepreneur_ties_small.yaml")
  assert "12/12 runs completed" in capsys.readouterr().out
  assert cli.main(["report", str(out)]) == 0
  curve = pd.read_csv(out / f"{aggregate.TIPPING}.csv")
  adopted = curve[curve["measure"] == "adopted"]
  assert sorted(adopted["condition"]) == sorted(
      f"{net}_{s}" for net in ("ring", "small_world") for s in (0, 20, 40))
  # The two networks: the same agents, as many ties, not the same ties.
  runs = out / "runs"
  edges = {}
  for net in ("ring", "small_world"):
    scenario = json.loads(next(runs.glob(f"*{net}_20*seed1")).joinpath(
        "scenario.json").read_text())
    edges[net] = {tuple(e) for e in scenario["network"]["edges"]}
    assert scenario["network"]["talk"] == "tied"
  assert len(edges["ring"]) == len(edges["small_world"]) == 20
  assert edges["ring"] != edges["small_world"]
  assert (out / "report" / "figures" / "tipping_curve.png").stat().st_size


def test_the_posted_rule_sweep_compares_its_two_arms(
    tmp_path, embedder, monkeypatch, capsys):
  out = sweep_scripted(tmp_path, embedder, monkeypatch, ids=IDS,
                       sweep_file=SWEEPS / "posted_rule_small.yaml")
  assert "4/4 runs completed" in capsys.readouterr().out
  assert cli.main(["report", str(out)]) == 0
  # The notice is an intervention of the posted arm's runs alone.
  for run in (out / "runs").iterdir():
    with open(run / "events.jsonl", encoding="utf-8") as f:
      kinds = [json.loads(line)["kind"] for line in f]
    assert ("intervention" in kinds) == ("__posted__" in run.name), run.name
  summary = pd.read_csv(out / "sweep_summary.csv")
  timed = summary[summary["metric"].str.startswith("minutes_to_")]
  assert set(timed["condition"]) == {"emergent", "posted"}
  assert {"minutes_to_50_belief.greet_bow",
          "minutes_to_50_behaviour.greet_bow"} <= set(summary["metric"])
  effects = pd.read_csv(out / "sweep_effects.csv")
  assert "posted - emergent" in set(effects["comparison"])
  assert list((out / "report" / "figures").glob("*.png"))
  # Each posted run's metrics set the slots before the notice beside
  # those from it on; an emergent run's have no such windows.
  for run in (out / "runs").iterdir():
    summary = json.loads((run / "metrics" / "summary.json").read_text())
    if "__posted__" not in run.name:
      assert "interventions" not in summary
      continue
    windows = {w["target"]: w for w in summary["interventions"]}
    assert set(windows) == {"greet_handshake", "greet_bow"}
    bow = windows["greet_bow"]
    assert bow["intervention"] == "announce" and bow["step"] == 3
    assert bow["slots_before"] == 2 and bow["slots_after"] == 2
    assert 0 <= bow["belief_before"] < bow["belief_after"] <= 1
  # The notice is read as a message to everyone: in the posted arm alone,
  # candidates drawn from it, and more agents hold the bow at the end.
  for run in (out / "runs").iterdir():
    with open(run / "events.jsonl", encoding="utf-8") as f:
      origins = {json.loads(line).get("origin") for line in f}
    assert ("notice" in origins) == ("__posted__" in run.name), run.name
  final = pd.read_csv(out / "sweep_summary.csv").set_index(
      ["condition", "metric"])["mean"]
  assert (final["posted", "belief_final.greet_bow"]
          > final["emergent", "belief_final.greet_bow"])
  # Published (docs/results): the two conditions side by side, the minutes
  # to adoption in each, and the notice's windows in the posted arm alone;
  # one entrepreneurs' share in both is no curve.
  results = tmp_path / "results"
  assert cli.main(["report", "--publish", str(results), str(out)]) == 0
  readme = (results / "README.md").read_text()
  assert "## The conditions compared: posted_rule (default)" in readme
  rows = [line for line in readme.splitlines()
          if line.startswith("| Greet people with a bow. |")]
  assert [r.split(" | ")[1] for r in rows] == ["emergent", "posted"]
  assert all("never (0 of 2)" in r or " of 2, median " in r for r in rows)
  assert "| posted | normative | announce (#1, step 3) |" in readme
  assert "| emergent | normative | announce" not in readme
  assert "tipping curve" not in readme
  published = json.loads((results / "results.json").read_text())
  compared = [r for r in published["conditions"] if "target" in r]
  assert {(r["condition"], r["target"]) for r in compared} == {
      (c, t) for c in ("emergent", "posted")
      for t in ("greet_handshake", "greet_bow")}
  bow = next(r for r in compared
             if (r["condition"], r["target"]) == ("posted", "greet_bow"))
  assert bow["runs"] == 2 and bow["reached_belief"]["runs"] == 2
  assert 0 <= bow["belief_final"]["mean"] <= 1

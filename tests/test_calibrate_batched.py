"""`crsec calibrate --batch-sizes`: any model measured batched, and `auto`
reading the person's measurement before the package's
(commands/calibrate_batched.py, calibration/batching.py); the rules moved
from bench/ into calibration/ give the verdicts they gave there.

No language model: a scripted model answers the referee's and
DetectConflict's labelled cases as the labels say, one at a time and
batched. The user's data directory is a fresh one per test (conftest.py).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from crsec_concordia import cli
from crsec_concordia.calibration import batch_compare, batching
from crsec_concordia.calibration import conflict_batch_compare
from crsec_concordia.calibration import probes, store
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.commands import calibrate as command
from crsec_concordia.commands.calibrate_batched import batching_path
from crsec_concordia.judgement_prompts import (batch_prompts_hash,
                                               conflict_batch_prompts_hash,
                                               prompts_hash)
from crsec_concordia.models import ScriptedModel
from crsec_concordia.scenarios import load_scenario
from tests.test_calibrate import calibrated_with
from tests.test_conflict_batch_probe import labelled_model
from tests.test_place_batch_probe import _labelled_model

VENUE = "hobbs_cafe_mini"
URL = "http://127.0.0.1:9/v1"
NAME = "labelled-7b"
MEASURED = ModelIdentity(NAME, "openai-compatible", prompts_hash())
ANOTHER = ModelIdentity("another-7b", "openai-compatible", prompts_hash())


def both_ways_model() -> ScriptedModel:
  """The venue's referee and conflict labels as one model's answers, the
  same one at a time and batched."""
  scenario = load_scenario(VENUE)
  cases = probes.load_probes(probes.probes_path(scenario), scenario)
  referee = _labelled_model({c.action: sorted(c.behaviours)
                             for c in cases.referee})
  conflicts = labelled_model({(c.action, c.norm): c.breaks
                              for c in cases.conflicts})
  return ScriptedModel(
      [(r"Each question below has an id|holds some rules about how people",
        lambda prompt, schema: conflicts._answer(prompt, schema))],  # noqa: SLF001
      fallback=lambda prompt, schema: referee._answer(  # noqa: SLF001
          prompt, schema))


@pytest.fixture(scope="module")
def measured(tmp_path_factory, embedder):
  """`crsec calibrate hobbs_cafe_mini --batch-sizes 3 7` on the scripted
  model served as an endpoint's: (the user's data directory, printed)."""
  data = tmp_path_factory.mktemp("measured")
  return data, calibrated_with(data, both_ways_model(), embedder, [
      VENUE, "--batch-sizes", "3", "7", "--base-url", URL, "--model", NAME,
      "--jobs", "2", "--no-progress"])


def test_the_command_records_both_operations_in_the_users_file(measured):
  data, said = measured
  path = data / "crsec-concordia" / "calibrations" / batching.RECORD.name
  assert f"recorded: {path}" in said
  entries = json.loads(path.read_text())["entries"]
  assert {e["op"]: e["batch_prompts"] for e in entries} == {
      batching.REFEREE: batch_prompts_hash(),
      batching.CONFLICTS: conflict_batch_prompts_hash()}
  for entry in entries:
    assert entry["model"] == MEASURED.to_dict()
    assert entry["venues"][VENUE]["keeps"] and entry["pooled"]["passes"]
    assert entry["pooled"]["sizes"] == [3, 7]
  # Only the batching comparison: no ordinary calibration was written.
  assert [p.name for p in path.parent.glob("*.json")] == [path.name]
  # Per venue, each mode's figures with intervals and differences; the
  # venues pooled; each operation's verdict; the cost.
  assert f"{VENUE} batches of 7: P 1.00 [1.00, 1.00] R 1.00" in said
  assert "minus per action: P 0.00 [0.00, 0.00]" in said
  assert f"{VENUE} DetectConflict batches of 3: hits" in said
  assert "all venues DetectConflict batches of 7" in said
  assert (f"referee, pooled over 66 cases at the largest size: passes the "
          f"rule; {VENUE} keeps batched") in said
  assert "conflicts, pooled over 23 cases" in said
  assert "cost: " in said and " calls " in said and " tokens, " in said


def test_auto_batches_the_measured_model_and_no_other(measured, monkeypatch):
  data, _ = measured
  monkeypatch.setenv("XDG_DATA_HOME", str(data))
  path = batching.user_record()
  for op, prompts in ((batching.REFEREE, batch_prompts_hash()),
                      (batching.CONFLICTS, conflict_batch_prompts_hash())):
    got = batching.batching_for(None, MEASURED, VENUE, prompts, op)
    assert got.on and got.source == (
        f"auto: {VENUE}'s labelled cases held batched (your measurement, "
        f"{path})")
    # A venue nobody labelled: the pooled verdict, from the same file.
    pooled = batching.batching_for(None, MEASURED, "workshop", prompts, op)
    assert pooled.on and "pooled held batched (your measurement" in (
        pooled.source)
    other = batching.batching_for(None, ANOTHER, VENUE, prompts, op)
    assert not other.on and other.source == (
        "auto: nobody measured another-7b batched in these batch prompts")


def _record(path, keeps: bool) -> None:
  batching.record(path, MEASURED, "h", {"cafe": {"n": 5, "keeps": keeps}},
                  {"n": 5, "passes": keeps})


def test_the_users_entry_wins_over_the_packages(tmp_path, monkeypatch):
  shipped = tmp_path / "shipped" / batching.RECORD.name
  monkeypatch.setattr(batching, "RECORD", shipped)
  _record(shipped, keeps=False)
  # The package's alone: its wording, as today.
  got = batching.batching_for(None, MEASURED, "cafe", "h")
  assert not got.on
  assert got.source == "auto: cafe's labelled cases lost accuracy batched"
  _record(batching.user_record(), keeps=True)
  got = batching.batching_for(None, MEASURED, "cafe", "h")
  assert got.on and got.source.endswith(
      f"(your measurement, {batching.user_record()})")
  # The user's file holds other batch prompts only: the package's decides.
  monkeypatch.setattr(batching, "user_record",
                      lambda: tmp_path / "other.json")
  batching.record(tmp_path / "other.json", MEASURED, "h2",
                  {"cafe": {"n": 5, "keeps": True}}, {"n": 5, "passes": True})
  assert not batching.batching_for(None, MEASURED, "cafe", "h").on


def test_out_puts_the_verdicts_in_its_directory():
  assert batching_path(None) == batching.user_record()
  assert batching_path(store.SHIPPED) == batching.RECORD
  assert batching_path(store.SHIPPED / "mine.json").name == "mine.json"


@pytest.mark.parametrize("extra, says", [
    (["--sheet", "run"], "give it without --sheet"),
    (["--labels", "sheet.csv"], "give it without --labels"),
    (["--thresholds"], "give it without --thresholds"),
])
def test_another_form_with_batch_sizes_is_one_line(extra, says, capsys,
                                                   monkeypatch, tmp_path):
  monkeypatch.chdir(tmp_path)
  monkeypatch.setattr(command, "make_model", None)  # Never reached.
  assert cli.main(["calibrate", "--batch-sizes", "3", *extra]) == 2
  err = capsys.readouterr().err
  assert says in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("size", ["0", "-2", "x"])
def test_a_batch_size_below_one_is_one_line(size, capsys):
  with pytest.raises(SystemExit) as ended:
    cli.main(["calibrate", "--batch-sizes", "3", size])
  assert ended.value.code == 2
  err = capsys.readouterr().err
  assert "--batch-sizes must" in err and len(err.strip().splitlines()) == 1


def test_an_unreadable_record_is_one_line_before_any_model(
    tmp_path, capsys, monkeypatch):
  monkeypatch.setattr(command, "make_model", None)  # Never reached.
  bad = tmp_path / "batching.json"
  bad.write_text("{not json")
  assert cli.main(["calibrate", VENUE, "--batch-sizes", "3", "--out",
                   str(tmp_path)]) == 2
  err = capsys.readouterr().err
  assert "not a record of batched measurements" in err
  assert "crsec calibrate --batch-sizes" in err
  assert len(err.strip().splitlines()) == 1
  assert bad.read_text() == "{not json"  # Nothing written over it.


def _fixed_rows():
  """A venue's 40 cases asked both ways, the same draw bench/ pinned."""
  rng = np.random.default_rng(7)
  truth = [["a"] if rng.random() < .5 else [] for _ in range(40)]
  base = [t if rng.random() < .85 else [] for t in truth]
  other = [t if rng.random() < .7 else ["b"] for t in truth]
  tags = {batch_compare.PER_ACTION: batch_compare.case_tag_counts(truth,
                                                                  base),
          "batches of 5": batch_compare.case_tag_counts(truth, other)}
  breaks = rng.random(40) < .4
  one = np.where(breaks, rng.random(40) < .8, rng.random(40) < .1)
  two = np.where(breaks, rng.random(40) < .6, rng.random(40) < .2)
  cases = [probes.ConflictCase(norm="n", actor="A", action="acts",
                                breaks=bool(b)) for b in breaks]
  verdicts = {conflict_batch_compare.ONE_AT_A_TIME:
              conflict_batch_compare.outcomes(cases, [bool(s) for s in one]),
              "batches of 5": conflict_batch_compare.outcomes(
                  cases, [bool(s) for s in two])}
  return tags, verdicts


def test_the_moved_rules_give_the_verdicts_bench_gave():
  # The figures bench/batch_probe.py and bench/conflict_batch_probe.py
  # gave on these rows before the rules moved into calibration/.
  tags, verdicts = _fixed_rows()
  referee = batch_compare.REFEREE_RULE.venue_figures(tags, [5])
  d_recall = referee["figures"]["batches of 5"]["dR"]
  assert d_recall == pytest.approx((-0.2857142857142857, -0.5769230769230769,
                                    0.043527667984189534))
  assert not referee["keeps"]
  pooled = batch_compare.REFEREE_RULE.pooled([tags, tags], [5])
  assert pooled["figures"]["batches of 5"]["dR"] == pytest.approx(
      (-0.2857142857142857, -0.5116420873511061, -0.0714285714285714))
  assert not pooled["passes"] and pooled["n"] == 80
  rule = conflict_batch_compare.CONFLICT_RULE
  conflicts = rule.venue_figures(verdicts, [5])
  assert conflicts["figures"]["batches of 5"]["dhits"] == pytest.approx(
      (-0.3571428571428571, -0.6666666666666667, 0.0))
  assert not conflicts["keeps"]
  assert rule.pooled([verdicts, verdicts], [5])["figures"][
      "batches of 5"]["dhits"] == pytest.approx(
          (-0.3571428571428571, -0.5714285714285714, -0.125))


def test_a_venue_where_nothing_was_found_alone_cannot_tell():
  """No breach found one at a time: batched has nothing to lose on these
  cases, so the venue's own rule does not decide (None: the pooled
  verdict does), however the batches did."""
  rule = conflict_batch_compare.CONFLICT_RULE
  cases = [probes.ConflictCase(norm="n", actor="A", action="acts",
                               breaks=n < 4) for n in range(10)]
  rows = {conflict_batch_compare.ONE_AT_A_TIME:
          conflict_batch_compare.outcomes(cases, [False] * 10),
          "batches of 5": conflict_batch_compare.outcomes(cases, [False] * 10)}
  assert rule.venue_figures(rows, [5])["keeps"] is None
  # One breach found alone and kept batched: the venue's rule decides.
  found = [n == 0 for n in range(10)]
  rows = {conflict_batch_compare.ONE_AT_A_TIME:
          conflict_batch_compare.outcomes(cases, found),
          "batches of 5": conflict_batch_compare.outcomes(cases, found)}
  assert rule.venue_figures(rows, [5])["keeps"] is True
  # The referee's: no tag right per action.
  truth = [["a"]] * 6
  tags = {batch_compare.PER_ACTION: batch_compare.case_tag_counts(
      truth, [[]] * 6), "batches of 5": batch_compare.case_tag_counts(
          truth, [["b"]] * 6)}
  assert batch_compare.REFEREE_RULE.venue_figures(tags, [5])["keeps"] is None


def test_the_referee_rules_error_rates_by_simulation():
  for rule in (batch_compare.passes, batch_compare.holds_on_venue):
    rates = batch_compare.simulate(cases=66, venues=40, resamples=200,
                                   losses=(0.0, 0.3), rule=rule)
    # A batched mode that loses nothing passes more often than one that
    # loses 0.3 of the recall, which passes almost never.
    assert rates[0.0] > rates[0.3] and rates[0.3] <= 0.1

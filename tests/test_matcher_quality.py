"""The norm matcher on labelled agents' norms (issue 11): the chosen rule's
test-half figures, how it was chosen, and where the report shows them."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

from crsec_concordia.metrics.classifiers import matcher_quality as mq
from crsec_concordia.metrics.classifiers import measured as matcher_error
from crsec_concordia.metrics.classifiers import norm_clauses
from crsec_concordia.metrics.classifiers.matching import (CHOSEN_RULE,
                                                          NormMatcher)
from crsec_concordia.metrics.present import report
from crsec_concordia.rundir import reading
from crsec_concordia.scenarios import ScenarioError, load_scenario
from crsec_concordia.scenarios.loader import builtin_path

sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import ABIGAIL, CARLOS, SCENARIO, RunBuilder  # noqa: E402

# The chosen rule on the test half, per target: (TP, FP, FN), without the
# judge. Exact, so that any change of the rule, the aliases, the labels or
# the embedder shows here; then rerun bench/matcher_quality.py, check the
# figures in docs/metrics.md and regenerate data/matcher_quality.json.
TEST_COUNTS = {
    "no_smoking_indoors": (24, 12, 0),
    "quiet_in_public": (15, 2, 9),
    "tip_after_meals": (23, 6, 0),
    "return_tools": (24, 6, 0),
    "own_plot_only": (20, 9, 3),
    "share_surplus": (20, 13, 2),
    # Held out (the workrooms' invented custom): measured, never fitted on.
    "cups_in_yellow_crate": (20, 9, 0),
}


@pytest.fixture(scope="module")
def measured(embedder):
  return mq.measure_matcher(embedder=embedder)


# -- the labelled set ----------------------------------------------------------


def test_labelled_set_is_large_split_and_refers_to_the_shipped_targets():
  items = mq.load_items()
  assert len(items) == 577
  assert len({i.text for i in items}) == len(items), "duplicate norms"
  assert {i.split for i in items} == set(mq.SPLITS)
  venues = {*mq.VENUES, *mq.HELD_OUT_VENUES}
  assert {i.venue for i in items} == venues
  kinds = {"policy", "hedged", "conditional", "descriptive", "place",
           "paraphrase", "wider", "compound", "near_miss", "opposite",
           "unrelated", "inverted", "opening"}
  assert {i.kind for i in items} == kinds
  for venue in venues:
    ids = {t.id for t in mq.venue_targets(venue)}
    for item in (i for i in items if i.venue == venue):
      assert set(item.targets) <= ids, item
      if item.kind in ("near_miss", "opposite", "unrelated", "inverted"):
        assert not item.targets, item
  # Both halves hold every kind of every venue.
  for split in mq.SPLITS:
    for venue in venues:
      assert {i.kind for i in items
              if i.split == split and i.venue == venue} == kinds


def test_every_shipped_scenario_gives_its_targets_aliases():
  for name in ("hobbs_cafe", "hobbs_cafe_mini", "community_garden",
               "tea_crates"):
    for target in load_scenario(name).target_norms:
      assert len(target.aliases) >= 5, (name, target.id)
  mini = load_scenario("hobbs_cafe_mini").to_dict()["target_norms"]
  full = load_scenario("hobbs_cafe").to_dict()["target_norms"]
  assert mini == full, "the labels' café figures hold for both café files"


def test_an_alias_said_twice_is_refused_in_one_line(tmp_path):
  text = builtin_path("hobbs_cafe_mini").read_text(encoding="utf-8")
  bad = text.replace('      - "Do not smoke inside."',
                     '      - "Do not smoke inside."\n'
                     '      - "do not smoke inside."', 1)
  assert bad != text
  path = tmp_path / "bad.yaml"
  path.write_text(bad, encoding="utf-8")
  with pytest.raises(ScenarioError) as info:
    load_scenario(path)
  [problem] = info.value.problems
  assert "aliases" in problem and "said twice" in problem


# -- reading a norm's wording ----------------------------------------------------


def test_clauses_split_compound_norms_and_keep_short_tails_attached():
  assert norm_clauses.clauses(
      "Keep your voice low in public places. Also, remember to tip after "
      "eating.") == ["Keep your voice low in public places",
                     "remember to tip after eating"]
  assert norm_clauses.clauses("Tip after meals, but smoking inside is fine "
                              "in winter.") == [
                                  "Tip after meals",
                                  "smoking inside is fine in winter"]
  # "and" inside a phrase does not split it.
  assert norm_clauses.clauses("Keep the place clean and quiet.") == [
      "Keep the place clean and quiet"]
  [clause] = norm_clauses.clauses("People here talk loudly and nobody minds.")
  assert norm_clauses.is_permission(clause)


@pytest.mark.parametrize("text", [
    "Doing it indoors is acceptable as long as the windows are open.",
    "There is nothing wrong with it.", "Tipping is optional.",
    "There is no need to do that here.", "Most people don't bother with it.",
    "It's fine to skip it.", "Plot boundaries don't matter.",
    "Putting things back is a waste of time."])
def test_permissions_and_dismissals(text):
  assert norm_clauses.is_permission(text)


@pytest.mark.parametrize("text", [
    "Avoid making unnecessary noise.", "It is only allowed outside.",
    "Doing it is not permitted inside.", "Never leave it lying around."])
def test_prohibitions_are_not_permissions(text):
  assert not norm_clauses.is_permission(text)


def test_contrast_drops_what_the_norm_turns_away_from():
  assert norm_clauses.without_contrast(
      "Go outside rather than staying at the table.") == "Go outside"
  assert norm_clauses.without_contrast(
      "Instead of wasting it, give it away.") == "give it away."
  assert norm_clauses.without_contrast(
      "It is better to do A than to do B.") == "It is better to do A"
  # A bare "than" compares amounts.
  assert norm_clauses.without_contrast(
      "If you grow more than you need, share it.") == (
          "If you grow more than you need, share it.")


# -- the chosen rule's figures ----------------------------------------------------


def test_chosen_rule_test_half_counts_are_pinned(measured):
  test = measured["test"]
  assert set(test) == set(TEST_COUNTS)
  for target, (tp, fp, fn) in TEST_COUNTS.items():
    got = test[target]
    assert (got["tp"], got["fp"], got["fn"]) == (tp, fp, fn), (target, got)


def test_chosen_rule_finds_more_than_the_old_rule(measured, embedder):
  """Recall rises where the old rule missed most (quiet, surplus), and the
  worst precision or recall over the targets rises."""
  old_rule = mq.TRIED[0].rule
  old = mq.table(old_rule, "test", embedder=embedder).counts(old_rule)
  chosen_on = {t: f for t, f in measured["test"].items() if t in old}
  new = {t: f["recall"] for t, f in chosen_on.items()}
  for target in ("quiet_in_public", "share_surplus"):
    assert new[target] > old[target].recall, target
  assert min(min(f["precision"], f["recall"])
             for f in chosen_on.values()) > mq.worst(old)


@pytest.mark.xfail(strict=True, reason=(
    "not reached: with the sentence embedder alone the rule chosen on the "
    "calibration half has test-half precision 0.61-0.88 and recall 0.62-1.00 "
    "(docs/metrics.md); near-misses that narrow a target and inverted norms "
    "score as high as its paraphrases"))
def test_chosen_rule_reaches_090_on_every_target_of_the_test_half(measured):
  for target, got in measured["test"].items():
    assert got["precision"] >= 0.9 and got["recall"] >= 0.9, (target, got)


def test_chosen_rule_is_the_one_the_calibration_half_selects(embedder):
  items = mq.load_items()
  targets = {v: mq.venue_targets(v) for v in mq.VENUES}
  fitted, counts = {}, {}
  for tried in mq.TRIED:
    calibration = mq.table(tried.rule, "calibration", embedder=embedder,
                           items=items, targets=targets)
    fitted[tried.label] = tried.fitted(calibration)
    counts[tried.label] = calibration.counts(fitted[tried.label])
  assert fitted[mq.select(fitted, counts)] == CHOSEN_RULE


def test_shipped_figures_are_what_the_bench_computes(measured):
  shipped = matcher_error.load_measured()
  assert shipped is not None, f"{matcher_error.QUALITY_PATH} is missing"
  assert shipped == json.loads(json.dumps(measured)), (
      "run python -m crsec_concordia.metrics.classifiers.matcher_quality "
      "--write")


def test_figures_hold_only_for_the_measured_rule_and_wording(measured):
  target = mq.venue_targets("cafe")[0]
  assert matcher_error.measured_error(target, CHOSEN_RULE.name) == (
      measured["test"][target.id])
  assert matcher_error.measured_error(target, "another_rule") is None
  reworded = target.model_copy(update={"aliases": target.aliases[:-1]})
  assert matcher_error.measured_error(reworded, CHOSEN_RULE.name) is None


def test_the_report_shows_the_measured_error_beside_the_belief_curves(
    tmp_path, embedder):
  cafe = load_scenario("hobbs_cafe_mini").to_dict()
  scenario = copy.deepcopy(SCENARIO)
  scenario["behaviours"] = cafe["behaviours"]
  scenario["target_norms"] = cafe["target_norms"]
  b = RunBuilder(tmp_path / "run", steps=3, scenario=scenario)
  b.hold(1, ABIGAIL, "Smoking is not permitted inside the cafe.",
         origin="created")
  b.hold(2, CARLOS, "Customers should not play loud music or talk loudly.",
         source_agent=ABIGAIL)
  run_dir = b.write()
  matcher = NormMatcher(reading.read_run(run_dir).targets, embedder=embedder)
  assert matcher.describe()["measured_error"]["no_smoking_indoors"]
  page = report.run_report(run_dir).index.read_text()
  smoke = matcher_error.load_measured()["test"]["no_smoking_indoors"]
  assert (f"precision {smoke['precision']:.2f} ({smoke['tp']}/"
          f"{smoke['tp'] + smoke['fp']})") in page
  assert "matcher error not measured" not in page


def test_a_target_of_other_wording_is_said_to_be_unmeasured(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=2)  # the fixture's own targets
  b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  page = report.run_report(b.write()).index.read_text()
  assert "matcher error not measured for this target" in page

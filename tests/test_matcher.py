"""The semantic matcher against its labelled set, and the near-miss rule."""

from __future__ import annotations

import pytest

from crsec_concordia.embedding import shared_embedder
from crsec_concordia.metrics.classifiers import threshold_search
from crsec_concordia.metrics.classifiers.judge import (JUDGE_SCHEMA,
                                                       JUDGE_TAG, LLMJudge)
from crsec_concordia.metrics.classifiers.matching import (JUDGE_FLOOR,
                                                          MATCH_THRESHOLD,
                                                          SINGLE_COSINE,
                                                          NormMatcher)
from crsec_concordia.models import ScriptedModel
from crsec_concordia.scenarios import TargetNorm

# Measured on matcher_labels.json at MATCH_THRESHOLD (0.52), over (item,
# target) pairs: precision 0.813 (74 / 91), recall 0.914 (74 / 81). The
# assertions keep a margin of 0.02 for numeric drift across torch builds.
MEASURED_PRECISION = 0.813
MEASURED_RECALL = 0.914
MARGIN = 0.02

TARGETS = [TargetNorm(id="no_smoking_indoors", text="No smoking indoors.",
                      type="injunctive", complies=["smoking_outside"],
                      violates=["smoking_indoors"]),
           TargetNorm(id="be_quiet", text="Be quiet in public places.",
                      type="injunctive"),
           TargetNorm(id="tip_after_meals", text="Tip after meals.",
                      type="descriptive")]
BEHAVIOURS = {"smoking_indoors": "smokes or lights a cigarette inside the café",
              "smoking_outside": "goes outside to smoke"}


@pytest.fixture(scope="module")
def table():
  labels = threshold_search.load_labels()
  return labels, *threshold_search.similarity_table(labels, shared_embedder())


def test_labelled_set_is_large_and_well_formed(table):
  labels, _, positive, ids = table
  items = labels["items"]
  assert len(items) >= 100
  assert set(ids) == {"no_smoking_indoors", "be_quiet", "tip_after_meals"}
  texts = [i["text"] for i in items]
  assert len(set(texts)) == len(texts), "duplicate items"
  for item in items:
    assert set(item["targets"]) <= set(ids), item
    assert item["kind"] in {"paraphrase", "near_miss", "opposite",
                            "compound", "unrelated"}
  kinds = {i["kind"] for i in items}
  assert {"paraphrase", "near_miss", "opposite", "compound"} <= kinds
  for near_miss in ("Smoke only in designated areas.",
                    "Don't smoke near children.",
                    "Speak clearly when ordering.",
                    "Pay for your meal before leaving.",
                    "Tipping is optional."):
    item = next(i for i in items if i["text"] == near_miss)
    assert item["targets"] == [], near_miss
  # Every target has at least 25 paraphrases.
  for target in ids:
    assert sum(i["targets"] == [target] for i in items) >= 25
  assert positive.sum() >= 75


def test_precision_and_recall_at_the_documented_threshold(table):
  _, sims, positive, _ = table
  score = threshold_search.score(sims, positive, MATCH_THRESHOLD)
  assert score.precision >= MEASURED_PRECISION - MARGIN, score
  assert score.recall >= MEASURED_RECALL - MARGIN, score
  assert score.f1 >= 0.84


def test_threshold_is_the_calibrated_one(table):
  _, sims, positive, _ = table
  best = threshold_search.best_threshold(sims, positive)
  assert best.threshold == pytest.approx(MATCH_THRESHOLD, abs=0.011)
  # The judge floor keeps nearly every true match within the judge's reach.
  assert threshold_search.score(sims, positive, JUDGE_FLOOR).recall >= 0.95


def test_matcher_uses_the_threshold_and_allows_several_targets():
  matcher = NormMatcher(TARGETS)
  assert matcher.means("Smoking is not permitted inside the cafe.") == {
      "no_smoking_indoors"}
  assert matcher.means("People usually tip after their meal.",
                       "tip_after_meals")
  assert not matcher.means("Wait your turn in line.")
  assert matcher.means("Speak clearly when ordering.") == frozenset()


def test_designated_areas_the_old_rule_counted_it():
  """The rule: "Smoke only in designated areas" does NOT mean the target.

  The embedder cannot see it (cosine 0.69 > 0.52): the single-cosine rule
  counted it, as docs/metrics.md says."""
  old = NormMatcher(TARGETS, rule=SINGLE_COSINE)
  sim = old.similarity(["Smoke only in designated areas."])[0, 0]
  assert sim > MATCH_THRESHOLD
  assert old.means("Smoke only in designated areas.", "no_smoking_indoors")


@pytest.mark.xfail(strict=True, reason=(
    "not reached: the chosen rule (one threshold, 0.525) counts it too; the "
    "per-target threshold chosen before 2026-11-26 (0.625) left it out. "
    "Its error is measured (docs/metrics.md) and corrected for; the LLM "
    "judge leaves it out (next test)"))
def test_designated_areas_the_chosen_rule_leaves_it_out():
  assert not NormMatcher(TARGETS).means("Smoke only in designated areas.",
                                        "no_smoking_indoors")


def test_judge_applies_the_near_miss_rule():
  model = ScriptedModel([
      (r"Person's norm: Smoke only in designated areas", {"answer": "no"}),
      (r"Person's norm: Don't smoke near children", {"answer": "no"}),
      (r"Target norm: No smoking indoors", {"answer": "yes"}),
      (r".", {"answer": "no"}),
  ])
  matcher = NormMatcher(TARGETS, judge=LLMJudge(model))
  texts = ["Smoke only in designated areas.", "Don't smoke near children.",
           "Smoking is not permitted inside the cafe.",
           "Please refrain from lighting up inside."]
  meant = matcher.means_many(texts)
  assert meant[0] == frozenset() and meant[1] == frozenset()
  assert meant[2] == {"no_smoking_indoors"}
  # Below the embedding threshold (0.41) but above the judge floor: the
  # judge recovers it.
  assert meant[3] == {"no_smoking_indoors"}
  assert {c.tag for c in model.calls} == {JUDGE_TAG}
  assert all(c.schema == JUDGE_SCHEMA for c in model.calls)
  # Pairs under the floor never reach the judge (no tipping question here).
  assert not any("Target norm: Tip after meals" in c.prompt
                 for c in model.calls)
  calls = len(model.calls)
  matcher.means_many(texts)
  assert len(model.calls) == calls, "decisions are cached"


def test_judge_failure_falls_back_to_the_embedding_and_is_counted():
  model = ScriptedModel([(r".", {"answer": "maybe"})])
  judge = LLMJudge(model)
  matcher = NormMatcher(TARGETS, judge=judge)
  assert matcher.means("Smoking is not permitted inside the cafe.") == {
      "no_smoking_indoors"}
  assert judge.failures >= 1
  assert matcher.describe()["judge_failures"] == judge.failures


def test_about_is_looser_than_means():
  matcher = NormMatcher(TARGETS, behaviours=BEHAVIOURS)
  about = matcher.about_many(["smoking indoors",
                              "Carlos lights a cigarette at his table.",
                              "The coffee here is really good today."])
  assert "no_smoking_indoors" in about[0]
  assert "no_smoking_indoors" in about[1]
  assert about[2] == frozenset()

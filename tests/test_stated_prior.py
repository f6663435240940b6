"""A prior the model brought is not emergence: scripted runs of both arms
whose agents all state a target before the first slot (and still at the
end) give a start share of 100% and a difference in differences whose
interval covers 0, read through the same stated_belief.csv, matcher and
report a real compare is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsec_concordia import runner
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.metrics.measure import aggregate
from crsec_concordia.metrics.present import publish
from crsec_concordia.rundir.format import ARMS
from crsec_concordia.testing import SchemaModel, stating

TARGET = "no_smoking_indoors"
SEEDS = (3, 4)


def play(root: Path) -> Path:
  """A compare directory of scripted runs (two seeds per arm, one slot)."""
  arms: dict[str, list[str]] = {}
  for arm in ARMS:
    for seed in SEEDS:
      model = SchemaModel([stating(["No smoking indoors."])],
                          keep_prompts=False)
      out = root / arm / f"seed_{seed}"
      runner.run_episode("hobbs_cafe_mini", arm=arm, seed=seed, out_dir=out,
                         steps=1, model=model, embedder=shared_embedder(),
                         progress=False, cache=False)
      arms.setdefault(arm, []).append(str(out.relative_to(root)))
  (root / "compare.json").write_text(json.dumps(
      {"scenario": "hobbs_cafe_mini", "seeds": list(SEEDS), "arms": arms,
       "failed": [], "status": "completed"}), encoding="utf-8")
  return root


@pytest.fixture(scope="module")
def compare_dir(tmp_path_factory):
  return play(tmp_path_factory.mktemp("prior") / "cmp")


@pytest.fixture(scope="module")
def stated(compare_dir):
  return aggregate.aggregate(compare_dir).summary["stated_belief"]


def test_a_target_every_agent_states_at_the_start_has_a_full_start_share(
    stated):
  shares = stated["targets"][TARGET]["shares"]["start"]
  for arm in ARMS:
    assert shares[arm]["raw"] == 1.0
    assert shares[arm]["agents"] == 3 * len(SEEDS)  # the entrepreneur apart


def test_its_difference_in_differences_covers_zero(stated):
  did = stated["targets"][TARGET]["did"]
  assert did["low"] <= 0.0 <= did["high"]
  assert did["value"] == pytest.approx(0.0, abs=1e-9)


def test_the_published_page_shows_start_end_and_say_hold_do(compare_dir,
                                                            tmp_path):
  readme = publish.publish([compare_dir], tmp_path / "pub").read_text(
      encoding="utf-8")
  assert "### Stated belief, start and end" in readme
  assert "### Say, hold, do" in readme
  row = next(line for line in readme.splitlines()
             if line.startswith("| No smoking indoors."))
  assert "(raw 100%, n=6)" in row  # both arms' start, entrepreneurs apart
  group = json.loads((tmp_path / "pub" / "results.json").read_text(
      encoding="utf-8"))["groups"][0]
  shares = group["stated_belief"]["targets"][TARGET]["shares"]["start"]
  assert {arm: shares[arm]["raw"] for arm in ARMS} == {
      "normative": 1.0, "baseline": 1.0}
  assert set(group["say_hold_do"]) == set(ARMS)

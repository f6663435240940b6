"""Long-form and per-seed tables (metrics/present/tables.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from crsec_concordia.embedding import shared_embedder
from crsec_concordia.metrics.measure import aggregate, run_metrics
from crsec_concordia.metrics.present import tables
from crsec_concordia.rundir import reading

sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import synthetic_run  # pylint: disable=wrong-import-position


@pytest.fixture(scope="module", autouse=True)
def embedder():
  return shared_embedder()


def test_run_long_form_holds_the_per_step_numbers(tmp_path):
  path = synthetic_run(tmp_path / "run", seed=3, steps=6)
  m = run_metrics.compute(reading.read_run(path))
  out = tables.write_run(m)
  long = pd.read_parquet(out / "long.parquet")
  assert list(long.columns) == tables.LONG
  assert set(long["seed"]) == {3} and set(long["arm"]) == {"normative"}
  row = long[(long.step == 6) & (long.metric == "belief")
             & (long.target == "no_smoking_indoors")]
  assert row["value"].item() == pytest.approx(
      m.per_step["belief.no_smoking_indoors"].iloc[-1])
  conflicts = long[(long.metric == "conflicts") & (long.target == "")]
  assert conflicts["value"].sum() == m.per_step["conflicts"].sum()
  csv = pd.read_csv(out / "long.csv")
  assert len(csv) == len(long)


def test_compare_per_seed_and_long(tmp_path):
  root = tmp_path / "cmp"
  runs = {arm: [synthetic_run(root / arm / f"seed_{s}", arm=arm, seed=s,
                              steps=6) for s in (1, 2)]
          for arm in ("normative", "baseline")}
  cm = aggregate.aggregate_runs(root, runs, {"scenario": "x",
                                             "seeds": [1, 2]})
  tables.write_compare(cm)
  seeds = pd.read_parquet(root / "compare_per_seed.parquet")
  assert list(seeds.columns) == tables.PER_SEED
  conflicts = seeds[seeds.metric == "conflicts_total"]
  assert sorted(zip(conflicts.arm, conflicts.seed)) == [
      ("baseline", 1), ("baseline", 2), ("normative", 1), ("normative", 2)]
  mean = cm.summary["arms"]["normative"]["metrics"]["conflicts_total"]["mean"]
  assert conflicts[conflicts.arm == "normative"]["value"].mean() == (
      pytest.approx(mean))
  long = pd.read_parquet(root / "compare_long.parquet")
  assert set(long["arm"]) == {"normative", "baseline"}
  assert (root / "compare_long.csv").exists()

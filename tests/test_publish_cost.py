"""The published cost beside the runs it replaced
(metrics/present/publish_cost.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from crsec_concordia import cli
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.metrics.present import publish_cost

sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import synthetic_run  # pylint: disable=wrong-import-position


@pytest.fixture(scope="module", autouse=True)
def embedder():
  return shared_embedder()


def _run(path: Path, started: str, commit: str, **usage_extra) -> Path:
  run_dir = synthetic_run(path, seed=1, steps=6)
  info = json.loads((run_dir / "run.json").read_text())
  info.update(started=started, commit=commit)
  (run_dir / "run.json").write_text(json.dumps(info))
  if usage_extra:
    usage = json.loads((run_dir / "usage.json").read_text())
    usage["by_tag"].update(usage_extra)
    (run_dir / "usage.json").write_text(json.dumps(usage))
  return run_dir


def _publish(out: Path, run_dir: Path) -> dict:
  assert cli.main(["report", "--publish", str(out), str(run_dir)]) == 0
  return json.loads((out / "results.json").read_text())


def test_a_rerun_is_shown_beside_the_run_it_replaced(tmp_path):
  out = tmp_path / "results"
  first = _run(tmp_path / "a", "2026-11-27T10:00:00+00:00", "a" * 40)
  second = _run(tmp_path / "b", "2026-12-07T11:00:00+00:00", "b" * 40)
  assert "earlier_runs" not in _publish(out, first)
  results = _publish(out, second)
  assert [r["commit"] for r in results["runs"]] == ["b" * 40]
  assert [r["commit"] for r in results["earlier_runs"]] == ["a" * 40]
  page = (out / "README.md").read_text()
  assert "| normative (earlier run) | 1 | aaaaaaa 2026-11-27 | 6/6 |" in page
  assert "| normative | 1 | bbbbbbb 2026-12-07 | 6/6 |" in page
  # Published again from the same run: the earlier run stays, once.
  again = _publish(out, second)
  assert again["earlier_runs"] == results["earlier_runs"]
  assert (out / "README.md").read_text().count("(earlier run)") == 1


def test_only_the_newest_earlier_run_is_kept(tmp_path):
  out = tmp_path / "results"
  for i, name in enumerate("abc"):
    results = _publish(out, _run(tmp_path / name,
                                 f"2026-12-0{i + 1}T10:00:00+00:00",
                                 name * 40))
  assert [r["commit"] for r in results["earlier_runs"]] == ["b" * 40]


def test_a_row_published_before_commits_were_kept_is_told_by_its_figures(
    tmp_path):
  """The rows of results.json written before a row kept its commit and
  start time: another run if its steps, wall time, calls or tokens differ."""
  out = tmp_path / "results"
  run_dir = _run(tmp_path / "a", "2026-12-07T11:00:00+00:00", "b" * 40)
  current = _publish(out, run_dir)["runs"][0]
  old = {k: v for k, v in current.items()
         if k not in ("commit", "started", "calls_per_agent_hour_by_operation")}
  assert publish_cost.same_run(old, current)
  old.update(calls=2356, wall_seconds=13819.1)
  assert not publish_cost.same_run(old, current)
  (out / "results.json").write_text(json.dumps({"runs": [old]}))
  results = _publish(out, run_dir)
  assert results["earlier_runs"] == [old]
  assert "| normative (earlier run) | 1 | – | 6/6 | 13,819 | 2,356 |" in (
      out / "README.md").read_text()


def test_another_arm_or_seed_is_not_an_earlier_run():
  row = {"scenario": "cafe", "arm": "normative", "seed": 1, "condition": "",
         "endpoint": "", "started": "2026-12-07", "commit": "b"}
  previous = {"runs": [dict(row, arm="baseline", started="2026-11-27"),
                       dict(row, seed=2, started="2026-11-27")]}
  assert publish_cost.earlier_runs(previous, [row]) == []
  assert publish_cost.earlier_runs(None, [row]) == []


def test_calls_by_operation_are_the_simulations_alone(tmp_path):
  out = tmp_path / "results"
  asked = {"calls": 40, "cached_calls": 0, "failed_calls": 0,
           "prompt_tokens": 4000, "completion_tokens": 400}
  run_dir = _run(tmp_path / "a", "2026-12-07T11:00:00+00:00", "b" * 40,
                 StatedBelief=asked)
  row = _publish(out, run_dir)["runs"][0]
  by_op = row["calls_per_agent_hour_by_operation"]
  assert "StatedBelief" not in by_op
  assert sum(by_op.values()) == pytest.approx(row["calls_per_agent_hour"],
                                              abs=0.05)

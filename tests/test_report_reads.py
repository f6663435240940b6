"""The run report reads well: tables fit the page, no empty chart.

The per-hour table has short headers in a scroll container, the calls
chart is replaced by a sentence when every call was cached, and the
time-to cells take at most two lines.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.metrics.present import figures, report
from crsec_concordia.testing import bag_of_words

GOLDEN_RUN = Path(__file__).with_name("golden") / "mini_cafe" / "expected"


def hit(time: str, minutes: int) -> dict:
  return {"time": time, "step": 1, "elapsed_minutes": minutes}


def test_time_to_cells_take_at_most_two_lines():
  levels = ("50%", "90%", "100%")
  assert report.time_to_cell(dict.fromkeys(levels)).items == ["never"]
  one = report.time_to_cell({"50%": hit("Day 1 09:45", 45), "90%": None,
                             "100%": None})
  assert one.items == ["50% D1 09:45 (+45 min)", "90%, 100%: never"]
  every = report.time_to_cell({k: hit("Day 2 10:00", 60) for k in levels})
  assert len(every.items) == 1


def test_no_chart_of_empty_calls():
  cached = {"by_module": {"creation": {"calls": 0, "prompt_tokens": 0,
                                       "completion_tokens": 0}}}
  assert figures.usage(cached) is None


def test_a_replayed_run_reads_well(tmp_path):
  run_dir = tmp_path / "run"
  shutil.copytree(GOLDEN_RUN, run_dir)
  result = report.run_report(
      run_dir, matcher_factory=lambda run: NormMatcher(
          run.targets, behaviours=run.behaviours, embedder=bag_of_words))
  page = result.index.read_text()
  assert "usage.png" not in {p.name for p in result.figures}
  assert "Every call was cached (no model call in this run)" in page
  hours = page.split("<h2>Per simulated hour</h2>", 1)[1].split("<h2>", 1)[0]
  assert "<div class='scroll hours'>" in hours
  assert "belief.no_smoking_indoors" not in hours
  assert "holds<br>no smoking indoors" in hours
  assert "D1 09:00" in hours

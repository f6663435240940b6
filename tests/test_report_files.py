"""What `crsec report` writes beside the page: figures for print (PNG at
200 dpi, SVG, PDF; one run labelled so, the night between days marked)
and tables as Parquet where the `parquet` extra is installed."""

from __future__ import annotations

import copy
import json
import logging
import struct
import sys
from pathlib import Path

import pandas as pd
import pytest

from crsec_concordia import cli
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.metrics.measure import run_metrics
from crsec_concordia.metrics.present import report, tables
from crsec_concordia.rundir import reading

sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import (ABIGAIL, CARLOS, SCENARIO, RunBuilder,  # pylint: disable=wrong-import-position
                              synthetic_run)
from tests.test_sweep_file import known_sweep  # noqa: F401  pylint: disable=unused-import,wrong-import-position

# Two simulated days of an hour each, six slots a day.
TWO_DAYS = {"start": "09:00", "end": "10:00", "minutes_per_step": 10,
            "days": 2}


@pytest.fixture(scope="module", autouse=True)
def embedder():
  return shared_embedder()


def stamp(record: dict, step: int) -> None:
  """The record's time as the two-day clock gives it (the builder's own
  clock has one long day)."""
  day, index = divmod(step - 1, 6)
  minutes = 9 * 60 + index * 10
  record.update(day=day + 1, clock=f"{minutes // 60:02d}:{minutes % 60:02d}",
                time=f"Day {day + 1} {minutes // 60:02d}:{minutes % 60:02d}")


def two_day_run(path: Path, arm: str = "normative", seed: int = 1) -> Path:
  scenario = copy.deepcopy(SCENARIO)
  scenario["clock"] = TWO_DAYS
  b = RunBuilder(path, arm=arm, seed=seed, steps=9, scenario=scenario)
  if arm == "normative":
    b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
    b.hold(8, CARLOS, "Smoking is not permitted inside the cafe.",
           source_agent=ABIGAIL)
  for step in range(1, 10):
    b.action(step, CARLOS, ["smoking_indoors" if step < 8
                            else "smoking_outside"], f"Carlos, slot {step}.")
  for record in b.records:
    stamp(record, record["step"])
  return b.write()


def png_dpi(data: bytes) -> float:
  """The resolution a PNG's pHYs chunk gives (pixels per metre -> inch)."""
  at = data.index(b"pHYs")
  per_metre, = struct.unpack(">I", data[at + 4:at + 8])
  return per_metre * 0.0254


def test_run_figures_for_print_say_one_run_and_mark_day_two(tmp_path):
  run_dir = two_day_run(tmp_path / "run")
  result = report.run_report(run_dir, figure_formats=("svg", "pdf"))
  figures = run_dir / "report" / "figures"
  for name in ("adoption", "conflicts", "activity", "diffusion"):
    assert png_dpi((figures / f"{name}.png").read_bytes()) >= 199
    assert (figures / f"{name}.pdf").read_bytes().startswith(b"%PDF")
    assert (figures / f"{name}.svg") in result.figures
  svg = (figures / "adoption.svg").read_text()
  assert "normative seed 1: one run" in svg
  assert "Day 2" in svg  # the rule between the two days
  assert "mean of" not in svg
  # The page embeds the PNG, never more than once per figure.
  page = result.index.read_text()
  assert page.count("data:image/png;base64,") == len(
      list(figures.glob("*.png")))


def test_a_one_day_run_marks_no_night(tmp_path):
  b = RunBuilder(tmp_path / "run", steps=3)
  b.action(1, CARLOS, ["smoking_indoors"], "Carlos lights up.")
  report.run_report(b.write(), figure_formats=("svg",))
  svg = (tmp_path / "run" / "report" / "figures" / "adoption.svg").read_text()
  assert "one run" in svg and "Day 2" not in svg


def compare_dir(root: Path, seeds: tuple[int, ...]) -> Path:
  arms: dict[str, list[str]] = {"normative": [], "baseline": []}
  for arm in arms:
    for seed in seeds:
      two_day_run(root / arm / f"seed_{seed}", arm=arm, seed=seed)
      arms[arm].append(f"{arm}/seed_{seed}")
  (root / "compare.json").write_text(json.dumps(
      {"scenario": "hobbs_cafe_test", "seeds": list(seeds), "arms": arms}))
  return root


def test_compare_figures_say_over_how_many_runs(tmp_path):
  one = compare_dir(tmp_path / "one", (1,))
  report.compare_report(one, figure_formats=("svg",))
  svg = (one / "report" / "figures" / "compare_adoption.svg").read_text()
  assert "normative: holds it (belief) (one run)" in svg
  assert "95% CI" not in svg and "Day 2" in svg
  two = compare_dir(tmp_path / "two", (1, 2))
  report.compare_report(two, figure_formats=("svg",))
  svg = (two / "report" / "figures" / "compare_conflicts.svg").read_text()
  assert "normative (mean of 2 runs, 95% CI)" in svg


def test_the_figure_format_flag(tmp_path, capsys, known_sweep):  # noqa: F811  pylint: disable=redefined-outer-name
  run_dir = two_day_run(tmp_path / "run")
  assert cli.main(["report", str(run_dir), "--figure-format", "pdf"]) == 0
  figures = run_dir / "report" / "figures"
  assert (figures / "adoption.pdf").is_file()
  assert not (figures / "adoption.svg").exists()
  capsys.readouterr()
  assert cli.main(["report", str(known_sweep), "--figure-format", "svg"]) == 2
  err = capsys.readouterr().err.strip()
  assert "\n" not in err and "PNG only" in err


def test_a_runs_long_metrics_and_events_as_parquet(tmp_path):
  path = synthetic_run(tmp_path / "run", steps=6)
  run = reading.read_run(path)
  out = tables.write_run(run_metrics.compute(run))
  events = pd.read_parquet(out / "events.parquet")
  assert len(events) == len(run.records)
  assert events["kind"].tolist() == [r["kind"] for r in run.records]
  # Lists are JSON text, so that a column holds one type.
  actions = events[events["kind"] == "action"]
  assert json.loads(actions["behaviours"].iloc[0]) == (
      run.of_kind("action")[0]["behaviours"])
  assert len(pd.read_parquet(out / "long.parquet")) == len(
      pd.read_csv(out / "long.csv"))
  assert not (out / "events.csv").exists()  # events.jsonl is the text form


def test_without_the_parquet_extra_csv_and_one_line(tmp_path, monkeypatch,
                                                    caplog):
  path = synthetic_run(tmp_path / "run", steps=4)
  m = run_metrics.compute(reading.read_run(path))
  out = tables.write_run(m)
  assert (out / "long.parquet").is_file()  # written with the extra
  monkeypatch.setitem(sys.modules, "pyarrow", None)  # the extra missing
  monkeypatch.setattr(tables, "_said", False)
  with caplog.at_level(logging.WARNING):
    tables.write_run(m)
    tables.write_table(tables.per_seed([m]), out, "per_seed")
  assert (out / "long.csv").is_file() and (out / "per_seed.csv").is_file()
  # No Parquet file, and none of an earlier write left beside the CSV.
  assert sorted(p.name for p in out.glob("*.parquet")) == []
  said = [r.getMessage() for r in caplog.records
          if r.levelno == logging.WARNING]
  assert said == ["Parquet output needs the 'parquet' extra: pip install "
                  "'crsec-concordia[parquet]'; writing CSV only"]

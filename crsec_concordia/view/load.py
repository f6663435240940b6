"""Reading what a page shows: a run directory, or the runs of a compare or
sweep directory, through the run-directory readers (crsec_concordia/rundir).

A run without target norms, a baseline run without norm snapshots, or one
never reported on is still shown: the page says what is missing. What
`crsec report` wrote (metrics/summary.json, metrics/per_step.csv) is read
when present.
"""

from __future__ import annotations

import csv
import dataclasses
import math
from pathlib import Path
from typing import Any

from crsec_concordia.errors import UserError
from crsec_concordia.rundir import format as fmt
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.format import PER_STEP_CSV, SUMMARY_JSON


@dataclasses.dataclass
class Reported:
  """What `crsec report` left in RUN_DIR/metrics (None: not reported)."""
  summary: dict[str, Any] | None
  per_step: list[dict[str, Any]] | None


@dataclasses.dataclass
class Loaded:
  """One run, with its config and report when there are any."""
  run: reading.Run
  config: dict[str, Any]
  reported: Reported
  label: str


def _number(text: str) -> float | None:
  try:
    value = float(text)
  except (TypeError, ValueError):
    return None
  return value if math.isfinite(value) else None


def read_reported(path: Path) -> Reported:
  """metrics/summary.json and per_step.csv, where `crsec report` wrote them."""
  metrics = path / fmt.METRICS
  summary = per_step = None
  if (metrics / SUMMARY_JSON).is_file():
    summary = reading.read_json_file(
        metrics / SUMMARY_JSON,
        f"run `crsec report {path}` again to rewrite it")
  if (metrics / PER_STEP_CSV).is_file():
    with (metrics / PER_STEP_CSV).open(encoding="utf-8", newline="") as f:
      per_step = [{k: (v if k in ("time", "clock") else _number(v))
                   for k, v in row.items()} for row in csv.DictReader(f)]
  return Reported(summary=summary, per_step=per_step)


def loaded_run(path: Path, label: str | None = None) -> Loaded:
  """RUN_DIR loaded, with or without target norms; a UserError naming the
  fix when it is not a run."""
  path = Path(path)
  if not path.is_dir():
    raise UserError(f"{path} is not a directory; pass a run, compare or "
                    "sweep directory written by crsec")
  if not reading.is_run_dir(path):
    raise UserError(f"{path} is not a run, compare or sweep directory (no "
                    f"{fmt.RUN_JSON}, {fmt.COMPARE_JSON} or "
                    f"{fmt.SWEEP_JSON}); pass a directory written by "
                    "`crsec run`, `crsec compare` or `crsec sweep`")
  run = reading.read_run(path, need_targets=False)
  fix = "the run directory is incomplete: run the episode again"
  config = (reading.read_json_file(path / fmt.CONFIG_JSON, fix)
            if (path / fmt.CONFIG_JSON).is_file() else {})
  return Loaded(run=run, config=config, reported=read_reported(path),
                label=label or run.name)


def read_dir(path: Path) -> tuple[str, list[Loaded]]:
  """("run" | "compare" | "sweep", its runs) for any directory crsec wrote."""
  path = Path(path)
  if reading.is_compare_dir(path):
    compare = reading.read_compare(path)
    return "compare", [loaded_run(d, f"{arm}: {d.name}")
                       for arm, dirs in compare.runs.items() for d in dirs]
  if reading.is_sweep_dir(path):
    runs = reading.read_sweep(path)
    if not runs:
      raise UserError(f"{path / fmt.SWEEP_JSON} lists no run directory that "
                      "exists yet; run `crsec sweep` (or resume it) first")
    return "sweep", [loaded_run(r.path, f"{r.id} ({r.status or 'unknown'})")
                     for r in runs]
  return "run", [loaded_run(path)]

"""The answers of a run's interviews as a table (light: pandas only, so
that `load_run` reads them without loading a simulation)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd

from crsec_concordia.rundir.format import INTERVIEW_ANSWERS

INTERVIEW_COLUMNS = ["slot", "agent", "role", "question_id", "question",
                     "answer", "error", "held_norms"]
# Held norms in one CSV cell: one per line.
NORM_SEPARATOR = "\n"


def read_interviews(run_dir: Path) -> pd.DataFrame:
  """The answers of every interview of a run (RUN_DIR/interviews/*.csv),
  each row with its questionnaire's name; empty when it has none."""
  frames = []
  for path in sorted((Path(run_dir) / INTERVIEW_ANSWERS).glob("*.csv")):
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame["slot"] = pd.to_numeric(frame["slot"])
    frame.insert(0, "questionnaire", path.stem)
    frames.append(frame)
  if not frames:
    return pd.DataFrame(columns=["questionnaire", *INTERVIEW_COLUMNS])
  return pd.concat(frames, ignore_index=True)


def write_csv(frame: pd.DataFrame, path: Path) -> None:
  """Atomically: a reader never sees half a table."""
  path.parent.mkdir(parents=True, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
  try:
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
      frame.to_csv(f, index=False)
    os.replace(tmp, path)
  except BaseException:
    Path(tmp).unlink(missing_ok=True)
    raise

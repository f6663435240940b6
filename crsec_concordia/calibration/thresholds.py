"""An embedder's measured thresholds, kept by the embedder's identity.

A cosine says what it says only for the embedder that gave it: where a
norm MEANS a target, where a text is ABOUT one and where the LLM judge is
asked are each measured on labelled norms for one embedder, as a model's
judgement error is measured for one model. They are calibration data, so
they live here, below the matcher that reads them
(metrics/classifiers/matching.py) and the searches that measure them
(threshold_search.py, matcher_quality.py): another embedder gets its own
file, `<embedder>.json`, in the person's calibrations or the package's.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crsec_concordia.calibration import store
from crsec_concordia.errors import UserError

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"  # crsec_concordia/embedding.py's.
FOLDER = "embedders"
SHIPPED_THRESHOLDS = store.SHIPPED / FOLDER


@dataclasses.dataclass(frozen=True)
class Thresholds:
  """One embedder's cosines where a relation starts.

  `match`: two norms say the same (emergent norms' clusters; the single
  cosine's threshold, threshold_search.py). `rule`: a norm MEANS a target
  under the matcher's chosen rule (matcher_quality.py). `related`: a text
  is ABOUT a target. `judge_floor`: a (norm, target) pair is put to the
  LLM judge."""
  embedder: str
  match: float
  rule: float
  related: float
  judge_floor: float

  @classmethod
  def from_dict(cls, data: dict[str, Any]) -> "Thresholds":
    return cls(str(data["embedder"]), float(data["match"]),
               float(data["rule"]), float(data["related"]),
               float(data["judge_floor"]))

  def to_dict(self) -> dict[str, Any]:
    return {"format": store.FORMAT, **dataclasses.asdict(self)}


def threshold_dirs() -> list[Path]:
  """Where thresholds are looked for, the person's own first."""
  return [store.user_dir() / FOLDER, SHIPPED_THRESHOLDS]


def path_for(embedder: str, folder: Path) -> Path:
  return Path(folder) / f"{embedder}.json"


def load_thresholds(embedder: str = DEFAULT_EMBEDDER,
                    dirs: Sequence[Path] | None = None) -> Thresholds:
  """The embedder's measured thresholds (the first found); a UserError
  naming the fix when none were measured for it."""
  for folder in threshold_dirs() if dirs is None else dirs:
    path = path_for(embedder, folder)
    if path.is_file():
      try:
        return Thresholds.from_dict(json.loads(path.read_text(
            encoding="utf-8")))
      except (OSError, ValueError, KeyError, TypeError) as e:
        raise UserError(f"{path}: not an embedder's thresholds ({e}); "
                        "delete it or measure them again") from None
  raise UserError(f"no thresholds measured for the embedder {embedder}; "
                  f"measure them and save them as {embedder}.json in "
                  f"{store.user_dir() / FOLDER}")


def save_thresholds(thresholds: Thresholds,
                    folder: Path | None = None) -> Path:
  """Writes the thresholds under the embedder's name (the person's own
  calibrations by default) and returns the file."""
  folder = store.user_dir() / FOLDER if folder is None else Path(folder)
  folder.mkdir(parents=True, exist_ok=True)
  path = path_for(thresholds.embedder, folder)
  path.write_text(json.dumps(thresholds.to_dict(), indent=1) + "\n",
                  encoding="utf-8")
  return path

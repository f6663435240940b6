"""An embedder's measured thresholds, kept by the embedder's identity.

A cosine says what it says only for the embedder that gave it: where a
norm MEANS a target, where a text is ABOUT one and where the LLM judge is
asked are each measured on labelled norms for one embedder, as a model's
judgement error is measured for one model. They belong to the embedder,
so they live in its package, below the matcher that reads them
(metrics/classifiers/matching.py) and the searches that measure them
(threshold_search.py, matcher_quality.py): another embedder gets its own
file, `<embedder>.json`, in the person's calibrations or the package's.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crsec_concordia.calibration import store
from crsec_concordia.errors import UserError

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


# Every cosine that decides a judgement, by the field that holds it in an
# embedder's record (SimilarityThresholds), and the consumer reading it.
JUDGEMENT_FIELDS = (
    "relevance",      # ConflictDetector's floor; what an observer sees first
    "tag",            # the referee's tag gate (tag_gate.py)
    "spare_far",      # the gate that spares actions far from every behaviour
    "occasion",       # the occasion check's gate (occasion_check.py)
    "look",           # the second look's floor (second_look.py)
    "near_tie",       # the nearest rule's tie: a gap below it is no gap
    "duplicate",      # ImmediateEvaluation: a duplicate without asking
    "related_norms",  # ImmediateEvaluation: a held norm worth comparing
    "polarity",       # the matcher's penalty across negation
)


@dataclasses.dataclass(frozen=True)
class SimilarityThresholds:
  """One embedder's record of every cosine that decides a judgement, with
  the identity it was measured for (`fingerprint`, embedder_identity.py).
  `measured` False is the record of an embedder nobody measured: every
  gate open (a floor of minus infinity lets every cosine through, a
  duplicate cut of infinity never rejects without asking), the nearest
  rule never refusing, and the matcher putting every pair to its judge."""
  embedder: str
  fingerprint: str
  measured: bool
  matcher: Thresholds
  relevance: float
  tag: float
  spare_far: float
  occasion: float
  look: float
  near_tie: float
  duplicate: float
  related_norms: float
  polarity: float

  @classmethod
  def from_dict(cls, data: dict[str, Any]) -> "SimilarityThresholds":
    return cls(str(data["embedder"]), str(data.get("fingerprint") or ""),
               True, Thresholds.from_dict(data),
               **{k: float(data[k]) for k in JUDGEMENT_FIELDS})

  def to_dict(self) -> dict[str, Any]:
    return {**self.matcher.to_dict(), "embedder": self.embedder,
            "fingerprint": self.fingerprint,
            **{k: getattr(self, k) for k in JUDGEMENT_FIELDS}}

  @classmethod
  def unmeasured(cls, embedder: str, fingerprint: str = ""
                 ) -> "SimilarityThresholds":
    """Every gate open: more calls, nothing missed."""
    low, high = -math.inf, math.inf
    return cls(embedder, fingerprint, False,
               Thresholds(embedder, match=high, rule=high, related=low,
                          judge_floor=low),
               relevance=low, tag=low, spare_far=low, occasion=low, look=low,
               near_tie=high, duplicate=high, related_norms=low,
               polarity=0)

  @classmethod
  def with_floors(cls, embedder: str, tag: float, look: float
                  ) -> "SimilarityThresholds":
    """Every gate open but the tag and look floors measured on the
    embedder: where its near tie is derived from (the labelled gaps the
    second look sees on those floors)."""
    return dataclasses.replace(cls.unmeasured(embedder), tag=tag, look=look)

  def describe(self) -> dict[str, Any]:
    """What run.json records of an embedder other than the default."""
    return {"embedder": self.embedder, "measured": self.measured}


def load_similarity(embedder: str, fingerprint: str | None = None,
                    dirs: Sequence[Path] | None = None
                    ) -> SimilarityThresholds | None:
  """The embedder's record (the first found by its name whose fingerprint
  is `fingerprint`, when given), or None when nobody measured it."""
  for folder in threshold_dirs() if dirs is None else dirs:
    path = path_for(embedder, folder)
    if not path.is_file():
      continue
    try:
      found = SimilarityThresholds.from_dict(json.loads(path.read_text(
          encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as e:
      raise UserError(f"{path}: not an embedder's thresholds ({e}); "
                      "delete it or run crsec calibrate --embedder again"
                      ) from None
    if fingerprint is None or found.fingerprint == fingerprint:
      return found
  return None


def save_similarity(record: SimilarityThresholds,
                    folder: Path | None = None) -> Path:
  """Writes a measured record under the embedder's name (the person's own
  calibrations by default) and returns the file."""
  folder = store.user_dir() / FOLDER if folder is None else Path(folder)
  folder.mkdir(parents=True, exist_ok=True)
  path = path_for(record.embedder, folder)
  path.write_text(json.dumps(record.to_dict(), indent=1) + "\n",
                  encoding="utf-8")
  return path

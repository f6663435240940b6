"""Calibrations on disk: one file per model identity, one entry per venue.

`crsec calibrate` measures a model's judgements on a venue's labelled
cases; the corrected estimates of every later report read them. A file
holds what one model identity (identity.py) answered:

  {"format": 1, "model": {"name", "endpoint", "prompts"},
   "venues": {venue: {"scenario", "labels": "probes" | "sheet", "prompts",
                      "behaviours": {id: description}, "cases": [...],
                      "summary": {...}, "floors", "sides"}},
   "matcher": {...} | null, "cost": {...}}

A venue's `cases` are the referee's answers on its labelled actions, as
referee_quality.py reads them (`decisions`); those read back from a
labelling sheet carry the run's final `tags` instead (sheet.py). Files are
looked for in the user's data directory (platformdirs; written there by
default), then in the package (data/: the embedded model's, shipped); a
file of another identity is never read as this one's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import platformdirs

from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.errors import UserError

FORMAT = 1
APP = "crsec-concordia"
# The calibrations that ship with the package (the embedded model's).
SHIPPED = Path(__file__).resolve().parent / "data"
# What the corrected estimates read of a referee case
# (metrics/classifiers/probe_run.py): the answers, and every structure's
# inputs (`spared`, `failed`, the second look's record), so a run's own
# referee policy can be replayed on them.
DECISION_KEYS = ("action", "truth", "given", "scores", "deed_scores",
                 "doers", "by_actor", "looked", "spared", "failed", "look")


def user_dir() -> Path:
  """Where `crsec calibrate` writes by default (XDG_DATA_HOME on Linux)."""
  return Path(platformdirs.user_data_dir(APP)) / "calibrations"


def search_dirs() -> list[Path]:
  """Where calibrations are looked for, the person's own first."""
  return [user_dir(), SHIPPED]


def decisions(measured: Mapping[str, Any]) -> list[dict[str, Any]]:
  """The referee's answers on a venue's labelled cases (a probe run's
  `referee` records) as the corrected estimates read them."""
  return [{k: case[k] for k in DECISION_KEYS if k in case}
          for case in measured["referee"]]


def probe_entry(measured: Mapping[str, Any], prompts: str | None
                ) -> dict[str, Any]:
  """A venue's calibration entry from its probe run
  (metrics/classifiers/probe_run.py, measure_venue)."""
  return {"scenario": measured["venue"], "labels": "probes",
          "prompts": prompts, "behaviours": dict(measured["behaviours"]),
          "cases": decisions(measured), "summary": measured["summary"],
          "policy": measured.get("policy"),
          **{k: measured[k] for k in ("floors", "sides") if k in measured}}


def target_path(identity: ModelIdentity, out: Path | None = None) -> Path:
  """The file to write: --out itself if it names a .json file, else the
  identity's file name in --out or in the user's data directory."""
  if out is not None and out.suffix == ".json":
    return out
  return (user_dir() if out is None else out) / identity.file_name


def read(path: Path) -> dict[str, Any]:
  """A calibration file, checked (UserError naming the fix)."""
  try:
    data = json.loads(path.read_text(encoding="utf-8"))
  except OSError as e:
    raise UserError(f"{path}: cannot be read ({e.strerror}); pass a "
                    "calibration written by `crsec calibrate`") from None
  except ValueError as e:
    raise UserError(f"{path}: not a calibration ({e}); remove it or pass "
                    "another --out") from None
  if not (isinstance(data, dict) and data.get("format") == FORMAT
          and isinstance(data.get("venues"), dict)
          and isinstance(data.get("model"), dict)):
    raise UserError(f"{path}: not a calibration of format {FORMAT}; remove "
                    "it or pass another --out")
  return data


def write(path: Path, identity: ModelIdentity,
          venues: Mapping[str, dict[str, Any]], *,
          matcher: dict[str, Any] | None = None,
          cost: dict[str, Any] | None = None) -> Path:
  """Adds `venues` (and the matcher's figures) to the identity's file at
  `path`, keeping the venues it already holds; written whole or not at
  all. A file there of another identity is an error, not overwritten."""
  data: dict[str, Any] = {"format": FORMAT, "model": identity.to_dict(),
                          "venues": {}, "matcher": None, "cost": {}}
  if path.is_file():
    data = read(path)
    if ModelIdentity.from_dict(data["model"]) != identity:
      raise UserError(f"{path} holds the calibration of "
                      f"{ModelIdentity.from_dict(data['model'])}, not of "
                      f"{identity}; pass another --out")
  data["venues"].update(venues)
  if matcher is not None:
    data["matcher"] = matcher
  if cost:
    data["cost"] = cost
  temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
  try:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary.write_text(json.dumps(data, indent=1, ensure_ascii=False)
                         + "\n", encoding="utf-8")
    os.replace(temporary, path)
  except OSError as e:
    temporary.unlink(missing_ok=True)
    raise UserError(f"--out {path}: cannot write there ({e.strerror}); pass "
                    "a directory you can write to") from None
  return path


def files(dirs: Sequence[Path] | None = None
          ) -> Iterator[tuple[Path, dict[str, Any]]]:
  """Every readable calibration in `dirs` (default search_dirs()), in
  their order; an unreadable file is passed over."""
  for folder in search_dirs() if dirs is None else dirs:
    if not Path(folder).is_dir():
      continue
    for path in sorted(Path(folder).glob("*.json")):
      try:
        yield path, read(path)
      except UserError:
        continue


def entries(dirs: Sequence[Path] | None = None) -> list[dict[str, Any]]:
  """Every venue of every calibration found, each with its file's `model`
  (an identity's dict) and `path`."""
  return [{**venue, "model": data["model"], "path": str(path)}
          for path, data in files(dirs) for venue in data["venues"].values()]


def matchers(dirs: Sequence[Path] | None = None) -> list[dict[str, Any]]:
  """Every calibration's matcher figures, each with its `model` and `path`."""
  return [{**data["matcher"], "model": data["model"], "path": str(path)}
          for path, data in files(dirs) if data.get("matcher")]

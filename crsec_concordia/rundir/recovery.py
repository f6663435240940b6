"""A run directory brought back to its last committed slot, every file alike.

A run can be killed at any moment, in the middle of an append: the files it
appends to (format.py's `APPENDED`: events.jsonl, checkpoints/log.jsonl,
run.log) may then hold part of a slot that was never committed, down to
half a line. run.json is the commit point: with `completed_steps` it
records `appended`, the length each of those files had when that slot was
committed (`appended_lengths`, taken by the session's writer after the
slot's appends). `recover` is the one way back, for every writer that
continues a run: it checks every file first and changes nothing when one
cannot be brought back (missing, shorter than what was committed, its
committed part damaged), raising `Unrecoverable`, one line naming the file
and why; else it cuts each file back to its committed length and drops the
norm snapshots of later slots. A run.json written before `appended` was
recorded is cut by the files' own slot marks (events.jsonl's `step`
records, log.jsonl's `Step`); its run.log is kept whole.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crsec_concordia.errors import UserError
from crsec_concordia.rundir.format import (APPENDED, CHECKPOINT_LOG,
                                           CHECKPOINTS, EVENTS, NORM_SNAPSHOTS,
                                           NORMS, STEP, snapshot_step)

__all__ = ["Unrecoverable", "appended_lengths", "recover"]

_LOG = f"{CHECKPOINTS}/{CHECKPOINT_LOG}"


class Unrecoverable(UserError):
  """A run directory whose files cannot be brought back to its last slot."""


def appended_lengths(run_dir: Path) -> dict[str, int]:
  """The length of each append-only file now (0 for one not written yet)."""
  lengths = {}
  for name in APPENDED:
    path = run_dir / name
    lengths[name] = path.stat().st_size if path.is_file() else 0
  return lengths


def _lines(path: Path, upto: int | None = None):
  """(end offset, line) of each line of `path`, up to byte `upto`."""
  end = 0
  with open(path, "rb") as f:
    for line in f:
      if upto is not None and end + len(line) > upto:
        return
      end += len(line)
      yield end, line


def _json(line: bytes) -> Any:
  try:
    return json.loads(line)
  except (json.JSONDecodeError, UnicodeDecodeError):
    return None


def _slot_of(name: str, line: bytes) -> int | None:
  """The slot a line closes: events.jsonl's step record, log.jsonl's entry."""
  record = _json(line)
  if not isinstance(record, dict):
    return None
  if name == EVENTS:
    return record.get("step") if record.get("kind") == STEP else None
  return record.get("Step") if name == _LOG else None


def _marked_length(run_dir: Path, name: str, steps: int) -> int:
  """For a run.json without `appended`: where the file's `steps`-th slot
  ends by its own marks (the whole file for run.log, which has none)."""
  path = run_dir / name
  if name not in (EVENTS, _LOG):
    return path.stat().st_size
  length = 0
  for end, line in _lines(path):
    if not line.endswith(b"\n"):
      break  # A line cut short by the kill.
    slot = _slot_of(name, line)
    if slot is not None:
      if slot > steps:
        break
      length = end
  return length


class _Problem(Exception):
  """Why one file cannot be brought back."""


def _check(run_dir: Path, name: str, length: int, steps: int) -> None:
  """That the committed part of one file is there and whole."""
  path = run_dir / name
  if not path.is_file():
    if length:
      raise _Problem("it is missing")
    return
  size = path.stat().st_size
  if size < length:
    raise _Problem(f"it is shorter ({size} bytes) than when slot {steps} "
                   f"was committed ({length} bytes)")
  if name not in (EVENTS, _LOG) or not length:
    return
  slots = []
  last = b""
  for _, line in _lines(path, length):
    last = line
    if name == EVENTS:
      if _json(line) is None:
        raise _Problem(f"a record of its committed slots is damaged: "
                       f"{line[:60]!r}")
      if (slot := _slot_of(name, line)) is not None:
        slots.append(slot)
  if not last.endswith(b"\n"):
    raise _Problem(f"its committed part does not end a line at byte {length}")
  if name == _LOG:
    slots = [_slot_of(name, last)]
    if slots != [steps]:
      raise _Problem(f"its last committed entry is not slot {steps}'s")
  elif len(slots) != steps:
    raise _Problem(f"it holds {len(slots)} slots where {steps} were "
                   "committed")


def recover(run_dir: Path, info: Mapping[str, Any]) -> dict[str, int]:
  """Cuts every append-only file back to the last committed slot.

  Returns the length each file was cut to.

  Raises:
    Unrecoverable: a file cannot be brought back; nothing was changed.
  """
  steps = int(info.get("completed_steps") or 0)
  recorded = info.get("appended")
  lengths: dict[str, int] = {}
  for name in APPENDED:
    path = run_dir / name
    try:
      if isinstance(recorded, Mapping):
        length = int(recorded.get(name, 0))
      else:
        length = _marked_length(run_dir, name, steps) if path.is_file() else 0
      _check(run_dir, name, length, steps)
    except (_Problem, OSError) as e:
      why = e.strerror if isinstance(e, OSError) else str(e)
      raise Unrecoverable(
          f"{path} cannot be brought back to slot {steps}, the last slot "
          f"run.json committed: {why}; this run cannot be resumed, start it "
          "again with `crsec run`") from None
    lengths[name] = length
  for name, length in lengths.items():
    path = run_dir / name
    if path.is_file() and path.stat().st_size != length:
      with open(path, "r+b") as f:
        f.truncate(length)
        f.flush()
        os.fsync(f.fileno())
  for snapshot in (run_dir / NORMS).glob(NORM_SNAPSHOTS):
    number = snapshot_step(snapshot.name)
    if number is not None and number > steps:
      snapshot.unlink()
  return lengths

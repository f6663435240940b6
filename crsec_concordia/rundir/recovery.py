"""A run directory brought back to its last committed slot, every file alike.

A run can be killed at any moment, in the middle of an append: the files it
appends to (format.py's `APPENDED`: events.jsonl, checkpoints/log.jsonl,
run.log) may then hold part of a slot that was never committed, down to
half a line. run.json is the commit point (its `completed_steps`), and
each of those files marks where a slot ends: events.jsonl's `step`
record, log.jsonl's entry of the slot (`Step`), run.log's lines led by
their slot (`slot 3: ...`; `after slot 3: ...` for what was logged after
the last commit; runs/run_log.py). `recover` is the one way back, for every
writer that continues a run: it finds in each file where the committed
slots end and checks that they are all there, changing nothing when one
file cannot be brought back (missing, holding fewer slots than were
committed, damaged within them), raising `Unrecoverable`, one line naming
the file and why; else it cuts each file there and drops the norm
snapshots of later slots.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from crsec_concordia.errors import UserError
from crsec_concordia.rundir.format import (APPENDED, CHECKPOINT_LOG,
                                           CHECKPOINTS, EVENTS, NORM_SNAPSHOTS,
                                           NORMS, RUN_LOG, STEP, snapshot_step)

__all__ = ["Unrecoverable", "recover"]

_LOG = f"{CHECKPOINTS}/{CHECKPOINT_LOG}"
# The slot a run.log line is led by (runs/run_log.py).
_LOG_LINE = re.compile(rb"^(after )?slot (\d+): ")


class Unrecoverable(UserError):
  """A run directory whose files cannot be brought back to its last slot."""


class _Problem(Exception):
  """Why one file cannot be brought back."""


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
  """(end offset, line) of each line of `path`."""
  end = 0
  with open(path, "rb") as f:
    for line in f:
      end += len(line)
      yield end, line


def _record(line: bytes) -> dict[str, Any]:
  try:
    record = json.loads(line)
  except (json.JSONDecodeError, UnicodeDecodeError):
    record = None
  if not isinstance(record, dict):
    raise _Problem(f"a line of its committed slots is damaged: "
                   f"{line[:60]!r}")
  return record


def _slot_end(name: str, path: Path, steps: int) -> int:
  """Where the committed slots end in one file (its length to keep)."""
  kept, slots = 0, 0
  for end, line in _lines(path):
    if not line.endswith(b"\n"):
      break  # A line cut short by the kill: its slot was not committed.
    if name == RUN_LOG:
      marked = _LOG_LINE.match(line)
      if marked and (marked.group(1) or int(marked.group(2)) > steps):
        break
      kept = end  # A continuation, or a line of an older run, is kept.
      continue
    if name == EVENTS and slots < steps:
      record = _record(line)
      kept = end
      slots += record.get("kind") == STEP
    elif name == _LOG:
      step = _record(line).get("Step")
      if isinstance(step, int) and step > steps:
        break
      kept, slots = end, step if isinstance(step, int) else slots
  if name == EVENTS and slots != steps:
    raise _Problem(f"it holds {slots} slots where {steps} were committed")
  if name == _LOG and kept and slots != steps:
    raise _Problem(f"its entries end at slot {slots} where {steps} were "
                   "committed")
  return kept


def recover(run_dir: Path, info: Mapping[str, Any],
            log_in_checkpoint: bool = False) -> dict[str, int]:
  """Cuts every append-only file back to the last committed slot.

  `log_in_checkpoint`: the run's checkpoint holds Concordia's raw log (an
  older run's), so it may have no log.jsonl. Returns the length each file
  was cut to.

  Raises:
    Unrecoverable: a file cannot be brought back; nothing was changed.
  """
  steps = int(info.get("completed_steps") or 0)
  lengths: dict[str, int] = {}
  for name in APPENDED:
    path = run_dir / name
    try:
      if not path.is_file():
        if name == EVENTS or (name == _LOG and steps and
                              not log_in_checkpoint):
          raise _Problem("it is missing")
        continue  # Nothing logged yet, or an older run's raw log.
      lengths[name] = _slot_end(name, path, steps)
    except (_Problem, OSError) as e:
      why = e.strerror if isinstance(e, OSError) else str(e)
      raise Unrecoverable(
          f"{path} cannot be brought back to slot {steps}, the last slot "
          f"run.json committed: {why}; this run cannot be resumed, start it "
          "again with `crsec run`") from None
  for name, length in lengths.items():
    path = run_dir / name
    if path.stat().st_size != length:
      with open(path, "r+b") as f:
        f.truncate(length)
        f.flush()
        os.fsync(f.fileno())
  for snapshot in (run_dir / NORMS).glob(NORM_SNAPSHOTS):
    number = snapshot_step(snapshot.name)
    if number is not None and number > steps:
      snapshot.unlink()
  return lengths

"""How many new actions a place holds in one slot: the size of a batch.

With the referee's `batched` setting (game_masters/referee/batch.py) the
game master asks about the new actions of one place in one slot in one
call, so the sizes of a run's place-slots are the batch sizes to probe the
model's accuracy at (bench/judgement_probe.py --batch-sizes). Read from a
finished run's action records (events.jsonl): an action counts in its
slot's place-slot if the referee was put to it (a new action, not carried
forward, not the gate's spared far action, not "no action"), at the place
its actor was at when the slot was judged (`moved_from` if it moved, else
its place). Prints, per run, the number of place-slots and their sizes'
median, 90th percentile and largest.

  .venv/bin/python bench/place_slot_sizes.py RUN_DIR [RUN_DIR ...]
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crsec_concordia.rundir import format as format_lib  # noqa: E402
from crsec_concordia.rundir import reading  # noqa: E402

QUANTILES = (0.5, 0.9, 1.0)


def put_to_referee(record: dict) -> bool:
  """Whether the referee was asked about this action record."""
  evidence = str(record.get("evidence", ""))
  return (record.get("kind") == format_lib.ACTION
          and not record.get("continued")
          and record.get("referee_asked", True)
          and (record.get("adjudicated")
               or evidence.startswith("adjudication failed")))


def sizes(run_dir: str | Path) -> list[int]:
  """The size of every place-slot of the run that held an asked action,
  in (slot, place) order."""
  counts: collections.Counter = collections.Counter()
  for record in reading.read_records(Path(run_dir) / format_lib.EVENTS):
    if put_to_referee(record):
      place = record.get("moved_from") or record.get("place")
      counts[(record["step"], str(place))] += 1
  return [counts[k] for k in sorted(counts)]


def quantiles(values: list[int]) -> dict[float, float]:
  """The sizes' QUANTILES (the largest at 1.0), or {} for none."""
  if not values:
    return {}
  return {q: float(np.quantile(values, q, method="lower")) for q in QUANTILES}


def describe(values: list[int]) -> str:
  found = quantiles(values)
  if not found:
    return "none (no action was put to the referee)"
  return (f"median {found[0.5]:.0f}, 90th percentile {found[0.9]:.0f}, "
          f"largest {found[1.0]:.0f} over {len(values)} place-slots")


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("run_dirs", type=Path, nargs="+")
  args = parser.parse_args(argv)
  for run_dir in args.run_dirs:
    print(f"{run_dir}: place-slot sizes {describe(sizes(run_dir))}")
  return 0


if __name__ == "__main__":
  sys.exit(main())

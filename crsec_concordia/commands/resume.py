"""`crsec resume`: continue an interrupted run from its last completed step."""

from __future__ import annotations

import argparse
from pathlib import Path

from crsec_concordia import outputs, runner
from crsec_concordia.commands.flags import (add_embedder_flag,
                                            add_endpoint_flags, embedder_from,
                                            endpoint_from)
from crsec_concordia.commands.run import print_summary
from crsec_concordia.runs.resume import resumable


def add_parser(sub) -> None:
  p = sub.add_parser(
      "resume", help="continue an interrupted run",
      description="Continue an interrupted run from its last completed step, "
      "in the same directory, with the same scenario, agents and seed. What "
      "the run wrote after that step is cut off first; a run is written by "
      "one process at a time.")
  p.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                 help="the directory `crsec run` printed")
  p.add_argument("--no-progress", action="store_true",
                 help="no progress bar")
  add_embedder_flag(p)
  add_endpoint_flags(p)
  p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
  # What is wrong with the directory, then whether it can be written, is
  # said before the model starts.
  resumable(args.run_dir)
  embedder = embedder_from(args)
  outputs.writable_dir(args.run_dir, "RUN_DIR",
                       fix="make it writable, or copy it somewhere you can "
                       "write to and resume the copy")
  with outputs.writing(args.run_dir, then="make room there, then resume "
                       "again"):
    run_dir = runner.resume_episode(args.run_dir, endpoint=endpoint_from(args),
                                    progress=not args.no_progress,
                                    embedder=embedder)
  print_summary(run_dir)
  return 0

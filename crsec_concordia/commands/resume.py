"""`crsec resume`: continue an interrupted run from its last completed step."""

from __future__ import annotations

import argparse
from pathlib import Path

from crsec_concordia import outputs, runner
from crsec_concordia.commands.flags import (add_budget_flags,
                                            add_embedder_flag,
                                            add_endpoint_flags,
                                            add_progress_flag, budget_from,
                                            embedder_for_run, endpoint_for_run)
from crsec_concordia.commands.run import print_summary
from crsec_concordia.endings import RunEnded
from crsec_concordia.runs.resume import resumable


def add_parser(sub) -> None:
  p = sub.add_parser(
      "resume", help="continue an interrupted or stopped run",
      description="Continue an interrupted or stopped run from its last "
      "completed step, in the same directory, with the same scenario, "
      "agents and seed, and, unless flags say otherwise, the model factory "
      "and embedder its run.json names. A run keeps the caps it was started "
      "with unless --max-calls or --max-tokens gives new ones. What the run "
      "wrote after that step is cut off first; a run is written by one "
      "process at a time.")
  p.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                 help="the directory `crsec run` printed")
  add_progress_flag(p)
  add_embedder_flag(p)
  add_endpoint_flags(p)
  add_budget_flags(p)
  p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
  # What is wrong with the directory, then whether it can be written, is
  # said before the model starts.
  info, _, _ = resumable(args.run_dir)
  endpoint = endpoint_for_run(args, info)
  embedder = embedder_for_run(args, info)
  outputs.writable_dir(args.run_dir, "RUN_DIR",
                       fix="make it writable, or copy it somewhere you can "
                       "write to and resume the copy")
  with outputs.writing(args.run_dir, then="make room there, then resume "
                       "again"):
    try:
      run_dir = runner.resume_episode(
          args.run_dir, endpoint=endpoint,
          progress=not args.no_progress, embedder=embedder,
          budget=budget_from(args), outage_wait=args.outage_wait)
    except RunEnded:
      print_summary(args.run_dir)
      raise
  print_summary(run_dir)
  return 0

"""`crsec resume`: continue an interrupted run from its last completed step."""

from __future__ import annotations

import argparse
from pathlib import Path

from crsec_concordia import runner
from crsec_concordia.commands.run import endpoint_from, print_summary


def add_parser(sub) -> None:
  from crsec_concordia.cli import add_endpoint_flags  # pylint: disable=import-outside-toplevel
  p = sub.add_parser(
      "resume", help="continue an interrupted run",
      description="Continue an interrupted run from its last completed step, "
      "in the same directory, with the same scenario, agents and seed.")
  p.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                 help="the directory `crsec run` printed")
  p.add_argument("--no-progress", action="store_true",
                 help="no progress bar")
  add_endpoint_flags(p)
  p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
  run_dir = runner.resume_episode(args.run_dir, endpoint=endpoint_from(args),
                                  progress=not args.no_progress)
  print_summary(run_dir)
  return 0

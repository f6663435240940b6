"""`crsec`: run, resume, compare and report CRSEC episodes; interview their
agents; calibrate a model's judgements; check the setup.

Each subcommand lives in `crsec_concordia/commands/<name>.py` with
`add_parser(subparsers)` and `run(args) -> int`; the flags several share are
in commands/flags.py. Bad input of any kind ends in one line on stderr
naming the problem and the fix, and exit code 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

from crsec_concordia.commands import (calibrate, compare, doctor, interview,
                                      report, resume, run, sweep, view)
from crsec_concordia.endings import RunEnded
from crsec_concordia.errors import UserError
from crsec_concordia.models import stopping
from crsec_concordia.models.base import EndpointError
from crsec_concordia.models.embedded import ModelFileError

COMMANDS = (run, resume, compare, sweep, report, view, interview, calibrate,
            doctor)


class _Parser(argparse.ArgumentParser):
  """argparse, but a wrong flag is one line and exit code 2."""

  def error(self, message: str):
    self.exit(2, f"crsec: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
  parser = _Parser(prog="crsec", description=__doc__.splitlines()[0])
  parser.add_argument("-v", "--verbose", action="store_true",
                      help="log debug messages to stderr")
  sub = parser.add_subparsers(dest="command", required=True,
                              parser_class=_Parser)
  for command in COMMANDS:
    command.add_parser(sub)
  return parser


def _interrupted(signum, frame) -> None:
  """A Ctrl-C or a SIGTERM (a scheduler's, `kill`'s) ends a run the same
  way: no model sends another request (models/stopping.py: the slot's
  queued work would otherwise hold the process), and the main thread's
  KeyboardInterrupt marks the run `interrupted: killed`, to resume."""
  del signum, frame
  if stopping.stopping():
    return  # Already ending: a second signal must not cut that short.
  stopping.stop_requests()
  raise KeyboardInterrupt


def _take_signals() -> dict[int, object]:
  """Installs `_interrupted` for SIGTERM, and for SIGINT unless it is
  ignored (a job started in the background with `&`); the handlers before."""
  before = {signal.SIGTERM: signal.signal(signal.SIGTERM, _interrupted)}
  if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    before[signal.SIGINT] = signal.signal(signal.SIGINT, _interrupted)
  return before


def main(argv: list[str] | None = None) -> int:
  parser = build_parser()
  args = parser.parse_args(argv)
  logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                      format="%(levelname)s %(name)s: %(message)s")
  stopping.allow_requests()
  main_thread = threading.current_thread() is threading.main_thread()
  before = _take_signals() if main_thread else {}
  try:
    return int(args.func(args) or 0)
  except (UserError, EndpointError, ModelFileError) as e:
    print(f"crsec: {e}", file=sys.stderr)
    return 2
  except RunEnded as e:
    # How the run ended, why, and how to go on (endings.py), on one line.
    where = getattr(e, "run_dir", None)
    then = e.ending.how_to_go_on(where) if where else ""
    print(f"crsec: {e.ending.status}: {e}" + (f"; {then}" if then else ""),
          file=sys.stderr)
    return e.ending.exit_code
  except KeyboardInterrupt:
    stopping.stop_requests()  # However it came (a model's own SIGINT too).
    print("crsec: interrupted; a run can be continued with `crsec resume "
          "RUN_DIR`", file=sys.stderr)
    return 130
  finally:
    for signum, handler in before.items():
      signal.signal(signum, handler)


def entry() -> None:
  """The `crsec` command: `main`, then the process ends with its code.

  After an interrupt the run is already recorded (`interrupted: killed`),
  but the threads of the slot it left still hold requests on the wire, and
  Python would wait for each answer before exiting (tens of seconds on a
  small machine, the model's cores held all the while). Their work belongs
  to a slot that is not committed, which a resume plays again, so the
  process ends at once. `main` itself never exits the process: a program
  or a test that calls it goes on.
  """
  code = main()
  if stopping.stopping():
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # pylint: disable=protected-access
  sys.exit(code)


if __name__ == "__main__":
  entry()

"""How a run ends: one vocabulary for run.json, the exit code and what next.

A run that a person leaves alone ends in one of a few ways, and each must
say the same thing everywhere: the `status` run.json records, the exit
code a script reads, and one line on how to go on. `completed` is the only
ending that does not resume; `interrupted: <why>` (killed, endpoint
unreachable, lost dependency, error) and `stopped: budget` are picked up by
`crsec resume`. Code that meets a failure of its own maps it here rather
than inventing a status: raise `LostDependency` for a part the run cannot
go on without (an embedder that fails a batch), `EndpointUnreachable` for
an endpoint that stays down, `BudgetReached` at a cap; a file the person
must repair is bad input (errors.UserError, exit 2), not an ending.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

COMPLETED = "completed"
RUNNING = "running"


@dataclasses.dataclass(frozen=True)
class Ending:
  """One way a run ends: its run.json status, exit code and next step."""
  status: str
  exit_code: int
  # One line on how to go on; `{run_dir}` is the run's directory.
  next_step: str

  @property
  def resumes(self) -> bool:
    return self.status != COMPLETED

  def how_to_go_on(self, run_dir: object) -> str:
    return self.next_step.format(run_dir=run_dir)


DONE = Ending(COMPLETED, 0, "nothing to resume; `crsec report {run_dir}` "
              "reads it")
KILLED = Ending("interrupted: killed", 130, "`crsec resume {run_dir}` "
                "continues from its last completed slot")
ENDPOINT_UNREACHABLE = Ending(
    "interrupted: endpoint unreachable", 4, "once the endpoint answers "
    "again, `crsec resume {run_dir}` plays the unfinished slot again")
LOST_DEPENDENCY = Ending(
    "interrupted: lost dependency", 5, "restore what the run lost (run.log "
    "says what), then `crsec resume {run_dir}` plays the unfinished slot "
    "again")
ERROR = Ending("interrupted: error", 1, "a bug: report it with run.log; "
               "after a fix `crsec resume {run_dir}` continues")
BUDGET = Ending("stopped: budget", 3, "`crsec resume {run_dir} --max-calls "
                "N` (or --max-tokens N) with a higher cap continues it")

ENDINGS = (DONE, KILLED, ENDPOINT_UNREACHABLE, LOST_DEPENDENCY, ERROR, BUDGET)
_BY_STATUS = {e.status: e for e in ENDINGS}


class RunEnded(Exception):
  """Ends a run with `ending`; the message says why, in one line."""

  ending: ClassVar[Ending] = ERROR
  # The run's directory, when one was written (for the line on going on).
  run_dir: object = None


class EndpointUnreachable(RunEnded):
  """The endpoint stayed down longer than the run waits (--outage-wait)."""

  ending = ENDPOINT_UNREACHABLE


class LostDependency(RunEnded):
  """A part the run needs (an embedder, a server it started) failed."""

  ending = LOST_DEPENDENCY


class BudgetReached(RunEnded):
  """The run reached its --max-calls or --max-tokens."""

  ending = BUDGET


def ending_of(error: BaseException) -> Ending:
  """How a run that raised `error` ended."""
  if isinstance(error, RunEnded):
    return error.ending
  if isinstance(error, (KeyboardInterrupt, SystemExit)):
    return KILLED
  return ERROR


def of_status(status: str | None) -> Ending | None:
  """The ending a run.json status names, or None for a run still going.

  Runs written before this vocabulary said `interrupted` alone: they were
  killed or crashed, and resume the same way as `interrupted: killed`.
  """
  if status in (None, RUNNING):
    return None
  if status == "interrupted":
    return KILLED
  return _BY_STATUS.get(status, ERROR)


def is_completed(status: str | None) -> bool:
  return status == COMPLETED

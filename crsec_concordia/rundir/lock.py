"""One writer per run directory: an exclusive lock held while a run is played.

Two processes writing one run (two `crsec resume`s of it, or a run and a
resume) both play its remaining slots and append them twice: the records,
actions and announcements of those slots doubled. `crsec run` and `crsec
resume` (`run_episode`, `resume_episode`) hold an exclusive `flock` on the
run's lock file (format.py's `RUN_LOCK`) for as long as they write; a
second one is refused at once with one line. The kernel drops the lock
when its process ends, killed or not, so a crash leaves nothing to clean;
the file itself stays (deleting it would let a third process lock a new
file while the second still holds the old one). On a system without
`fcntl` (Windows) nothing is locked.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from crsec_concordia.errors import UserError
from crsec_concordia.rundir.format import RUN_LOCK

try:
  import fcntl
except ImportError:  # Windows.
  fcntl = None  # type: ignore[assignment]

__all__ = ["Busy", "held"]


class Busy(UserError):
  """The run directory is being written by another process."""


@contextlib.contextmanager
def held(run_dir: Path) -> Iterator[None]:
  """Holds the run's lock for the block.

  Raises:
    Busy: another process holds it.
  """
  path = Path(run_dir) / RUN_LOCK
  fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
  try:
    if fcntl is not None:
      try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
      except BlockingIOError:
        raise Busy(f"{run_dir} is being written by another crsec process "
                   "(a run or a resume of it): let that one finish, then "
                   "resume the run if it did not complete") from None
    yield
  finally:
    os.close(fd)  # Releases the lock.

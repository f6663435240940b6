"""RUN_DIR/run.log: the session's warnings, written a slot at a time.

run.log is one of the files a run appends to, and like the others it must
end where the last committed slot ended, so that a killed run resumes to
the files of an uninterrupted one (rundir/recovery.py). A handler writing
each warning as it comes would put warnings of a slot still in flight
before the previous slot's commit, and the resumed run would write them
again. `RunLog` only collects the formatted lines; the session takes them
as each slot ends and appends them with the slot's other files, before
run.json, in a fixed order (the agents' threads log in any order), and
appends what is left when play ends (a crash's own lines: after the
commit, so a resume drops them with the rest of the lost slot).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

# A line's slot leads it (`take`); no wall-clock time: two runs of a seed
# write the same run.log.
LINE_FORMAT = "%(levelname)s %(name)s: %(message)s"


class RunLog(logging.Handler):
  """Collects the warnings logged anywhere in the process until `take`."""

  def __init__(self):
    super().__init__(logging.WARNING)
    self.setFormatter(logging.Formatter(LINE_FORMAT))
    self._guard = threading.Lock()
    self._entries: list[str] = []

  def emit(self, record: logging.LogRecord) -> None:
    try:
      text = self.format(record)
    except Exception:  # pylint: disable=broad-except
      self.handleError(record)
      return
    with self._guard:
      self._entries.append(text)

  def take(self, when: str) -> list[str]:
    """The entries collected since the last `take`, each led by `when`
    (its slot: `slot 3:`), in a fixed order (the agents' threads log in
    any order); an entry's further lines (a traceback) are indented, so
    that only its first line starts with a slot."""
    with self._guard:
      entries, self._entries = self._entries, []
    return [f"{when} {text}".replace("\n", "\n  ") + "\n"
            for text in sorted(entries)]


@contextlib.contextmanager
def collected() -> Iterator[RunLog]:
  """A RunLog on the root logger for the block."""
  handler = RunLog()
  root = logging.getLogger()
  root.addHandler(handler)
  try:
    yield handler
  finally:
    root.removeHandler(handler)
    handler.close()

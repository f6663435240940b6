"""The set-up's objects kept out of the garbage collector's full passes.

A run builds its society before the first slot: every agent's components,
memories and norms, most of the objects the process will hold. Python's
cyclic garbage collector walks every tracked object in each full pass, and
those passes come more often as slots add objects, so in a town of a
thousand agents it kept walking the same set-up, CPU under the GIL that
the agents' threads need. `gc.freeze` moves the objects alive now to a
generation no pass walks; `gc.unfreeze` gives them back when the slots
are over, so garbage among them (an agent's old state dropped later) is
collected then. The garbage of before (an earlier run's in the same
process, its pools' threads with it) is collected first, one full pass
per run, not frozen for the whole run. Sessions that play at once in one
process share one freeze, given back when the last of them ends.
Reference counting frees objects as before: only the cycle collector's
timing differs, never what a run does or records.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_playing = 0


@contextlib.contextmanager
def set_up_frozen() -> Iterator[None]:
  """Within: the objects alive on entry are left out of full collections."""
  global _playing  # pylint: disable=global-statement
  with _lock:
    _playing += 1
    if _playing == 1:
      # Garbage now (a finished run's pools and their threads) is
      # collected first, not frozen with the set-up for the whole run.
      gc.collect()
    gc.freeze()
  try:
    yield
  finally:
    with _lock:
      _playing -= 1
      if _playing == 0:
        gc.unfreeze()

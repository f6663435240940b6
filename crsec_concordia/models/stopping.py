"""No new model request once the command that runs them is ending.

Why: a Ctrl-C or a SIGTERM ends a run in its main thread (run.json says
`interrupted: killed`), but the slot's other work was already handed to
thread pools: the agents' acts still queued, a ConflictDetector's
detection in the background. Python waits for those threads before the
process exits, so an interrupted run went on sending requests (minutes of
them, on a small machine), holding the model and the cores that a resume
or another job needs. The command line calls `stop_requests` when it is
interrupted; from then every model refuses to send (`refuse_if_stopping`
raises RequestsStopped, a KeyboardInterrupt, so no `except Exception`
records it as a failed answer) and the pools' threads end at their next
request. A request already on the wire is answered. The flag is the
process's: `allow_requests` clears it when a command starts.
"""

from __future__ import annotations

import threading

_stopping = threading.Event()


class RequestsStopped(KeyboardInterrupt):
  """A request not sent: the command that asked for it is ending."""


def stop_requests() -> None:
  """From now on, no model of this process sends a request."""
  _stopping.set()


def allow_requests() -> None:
  """Requests may be sent again (a new command starts)."""
  _stopping.clear()


def stopping() -> bool:
  """Whether `stop_requests` was called (and not allowed again since)."""
  return _stopping.is_set()


def refuse_if_stopping() -> None:
  """Raises RequestsStopped once `stop_requests` was called."""
  if _stopping.is_set():
    raise RequestsStopped("not sent: the command is ending")

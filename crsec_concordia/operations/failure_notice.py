"""A failed operation told once per run in the log; every failure recorded.

An operation whose answer fails for good returns nothing and reports a
`failure` record (operations/base.py); the component that receives it
keeps it in the run and publishes it on its logging channel, which
Concordia's log collects. Under a model that cannot do an operation that
can happen hundreds of times in a run, so the Python log gets one WARNING
per operation per run, the first time; the channel entry of that failure
carries the same words, so a reader of Concordia's log sees them too.
A run is told apart by its model (the structured model behind a tagged
view): one per run, shared by all its agents, or, in a run with models by
role (runs/model_roles.py), one per model, whose notice names it.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

_log = logging.getLogger("crsec_concordia.operations")
_told: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_ERROR_CHARS = 200


def notice(failure: Mapping[str, Any], model_id: str | None = None) -> str:
  """The words that tell a failure of its operation (with `model_id`, of
  its operation on that model)."""
  op = failure.get("op", "an operation")
  if model_id:
    op = f"{op} (model {model_id})"
  error = " ".join(str(failure.get("error", "")).split())[:_ERROR_CHARS]
  return (f"{op}: the model's answer failed ({error}); further failures of "
          "this operation are recorded in the run but not logged again")


def tell_once(model: Any, failure: Mapping[str, Any]) -> str | None:
  """Logs `failure` as a WARNING if it is the first of its operation with
  this run's `model`, and returns the notice then; None afterwards."""
  run = getattr(model, "base", model)
  op = str(failure.get("op", ""))
  with _lock:
    try:
      told = _told.setdefault(run, set())
    except TypeError:  # A model that cannot be weakly referenced.
      told = set()
    if op in told:
      return None
    told.add(op)
  text = notice(failure, getattr(run, "role_model_id", None))
  _log.warning("%s", text)
  return text


def told_before(model: Any, ops: Iterable[str]) -> None:
  """Marks `ops` as told for the run of `model`: a resumed run told them in
  its committed slots (their failure records are in events.jsonl), and an
  uninterrupted run would not tell them again."""
  run = getattr(model, "base", model)
  with _lock:
    try:
      _told.setdefault(run, set()).update(ops)
    except TypeError:  # A model that cannot be weakly referenced.
      pass

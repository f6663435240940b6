"""A log of every request sent to the server, one JSON line each.

Why: the run's usage counts say how many prompt tokens the server reused
from its cache per operation, not which prompts lost their prefix. To put
each operation's stable parts first (and see what that buys), one needs the
prompts in the order the server saw them with what it reused of each;
`bench/prompt_reuse.py` reads this log and sets each operation's measured
reuse beside the best any prefix cache could have done.

It is a diagnostic, asked for with `CRSEC_CALL_LOG=FILE`: the order of the
lines is the order in which threads reached the server, which no seed fixes,
so the log never goes into a run directory (those are identical across
reruns). Cache hits are not requests and are not logged.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


class CallLog:
  """Appends one line per request; safe to share between threads."""

  def __init__(self, path: str | os.PathLike[str]):
    self.path = Path(path)
    self.path.parent.mkdir(parents=True, exist_ok=True)
    self._lock = threading.Lock()
    self._start = time.monotonic()
    self._n = 0

  def write(self, *, tag: str, messages: Sequence[Mapping[str, str]],
            prompt_tokens: int, reused_prompt_tokens: int,
            completion_tokens: int, seconds: float, answer: str,
            sends: int = 1, asked: Mapping[str, Any] | None = None) -> None:
    """`sends`: how many times the request went out (more than one after
    a timeout or a server error, the work on the earlier ones lost).
    `asked`: how it was asked (seed, temperature, max_tokens, and the
    answer's schema as the caller gave it), so that a bench can ask again."""
    entry: dict[str, Any] = {
        "tag": tag, "prompt_tokens": prompt_tokens,
        "reused_prompt_tokens": reused_prompt_tokens,
        "completion_tokens": completion_tokens,
        "seconds": round(seconds, 3), "sends": sends,
        "messages": [dict(m) for m in messages], "answer": answer,
        **({"asked": dict(asked)} if asked else {})}
    with self._lock:
      self._n += 1
      entry = {"n": self._n,
               "at": round(time.monotonic() - self._start, 3), **entry}
      with self.path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def read(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
  """The logged requests, in the order they were written."""
  with Path(path).open(encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]

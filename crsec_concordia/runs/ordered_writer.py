"""OrderedWriter: a run directory's writes, in order, on one thread.

A slot's files are written while the next slot's agents observe and act
(runs/session.py says why); what the session hands over is written in the
order handed over, and nothing after a write that failed: a run.json
written after records that failed to append would commit them.
"""

from __future__ import annotations

import concurrent.futures


class OrderedWriter:
  """Writes on one background thread between `start` and `stop`; here and
  now outside them. A failed write is raised by the next `submit` or
  `flush`."""

  def __init__(self):
    self._pool: concurrent.futures.ThreadPoolExecutor | None = None
    self._writes: list[concurrent.futures.Future] = []
    self.failed = False

  def start(self) -> None:
    self._pool = concurrent.futures.ThreadPoolExecutor(
        max_workers=1, thread_name_prefix="RunDirWriter")

  def stop(self) -> None:
    """Waits for the writes in flight; writes run here again."""
    if self._pool is not None:
      self._pool.shutdown(wait=True)
      self._pool = None

  def submit(self, fn, *args) -> None:
    """Runs `fn(*args)` on the writer thread, after the writes before it."""
    if self._pool is None:
      fn(*args)
      return
    self._raise_failed(done_only=True)
    self._writes.append(self._pool.submit(self._in_order, fn, *args))

  def _in_order(self, fn, *args) -> None:
    if self.failed:
      raise RuntimeError("not written: an earlier write of this run failed")
    try:
      fn(*args)
    except BaseException:
      self.failed = True
      raise

  def _raise_failed(self, done_only: bool) -> None:
    """Forgets the finished writes; raises the first that failed."""
    writes, self._writes = self._writes, []
    for i, future in enumerate(writes):
      if done_only and not future.done():
        self._writes = writes[i:]
        return
      future.result()  # Raises the write's error, if any.

  def flush(self) -> None:
    """Waits until everything submitted so far is on disk."""
    if self._writes:
      self._raise_failed(done_only=False)

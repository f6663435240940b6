"""Running a grid's jobs on a backend: threads here, Ray in ray_backend.py.

The scheduler keeps at most as many runs in flight as the backend has
room for (so "running" means running, not queued somewhere) and at most an
endpoint's `max_concurrent_runs` against one endpoint (a shared server is
not flooded); it hands every finished run to a callback at once, so the
sweep's status file is current when the sweep is stopped.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from crsec_concordia.sweeps.runjob import Outcome, RunJob, play


class Backend(Protocol):
  """Where jobs run."""

  def capacity(self) -> int:
    """Runs that can run at once now."""

  def submit(self, job: RunJob) -> Any:
    """Starts a job; returns a handle."""

  def wait(self, handles: list[Any], timeout: float
           ) -> list[tuple[Any, Outcome]]:
    """The handles finished within `timeout` seconds, with their outcomes."""

  def close(self) -> None:
    """Releases the backend (on success, failure or Ctrl-C)."""


class ThreadBackend:
  """Runs in threads of this process (`crsec compare --jobs N`)."""

  def __init__(self, jobs: int):
    self.jobs = jobs
    self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)

  def capacity(self) -> int:
    return self.jobs

  def submit(self, job: RunJob) -> concurrent.futures.Future:
    return self._pool.submit(play, job)

  def wait(self, handles, timeout):
    done, _ = concurrent.futures.wait(
        handles, timeout=timeout,
        return_when=concurrent.futures.FIRST_COMPLETED)
    return [(h, h.result()) for h in done]

  def close(self) -> None:
    self._pool.shutdown(wait=True, cancel_futures=True)


def schedule_jobs(
    jobs: list[RunJob], backend: Backend, *,
    limits: Mapping[str, int | None] | None = None,
    on_start: Callable[[RunJob], None] = lambda job: None,
    on_done: Callable[[RunJob, Outcome], None] = lambda j, o: None,
    on_tick: Callable[[list[RunJob]], None] = lambda running: None,
    poll: float = 1.0) -> dict[str, Outcome]:
  """Runs every job; returns the outcomes by run id.

  `limits` caps the runs in flight per endpoint name; `on_tick` sees the
  running jobs about every `poll` seconds (live progress).
  """
  limits = limits or {}
  pending = collections.deque(jobs)
  running: dict[Any, RunJob] = {}
  per_endpoint: collections.Counter[str] = collections.Counter()
  outcomes: dict[str, Outcome] = {}
  def fill() -> None:
    room = backend.capacity() - len(running)
    for job in list(pending):
      if room <= 0:
        break
      limit = limits.get(job.endpoint_name)
      if limit is not None and per_endpoint[job.endpoint_name] >= limit:
        continue
      pending.remove(job)
      running[backend.submit(job)] = job
      per_endpoint[job.endpoint_name] += 1
      room -= 1
      on_start(job)

  while pending or running:
    fill()
    if not running:  # Nothing may start (cannot happen with limits >= 1).
      time.sleep(poll)
      continue
    started = time.monotonic()
    for handle, outcome in backend.wait(list(running), timeout=poll):
      job = running.pop(handle)
      per_endpoint[job.endpoint_name] -= 1
      outcome = dataclasses.replace(outcome, id=job.id)
      outcomes[job.id] = outcome
      on_done(job, outcome)
    fill()  # Before the progress line, so that it counts them running.
    on_tick(list(running.values()))
    # Backends may return early; never spin.
    time.sleep(max(0.0, min(0.05, poll - (time.monotonic() - started))))
  return outcomes

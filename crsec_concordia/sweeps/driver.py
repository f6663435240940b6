"""The driver's side of a sweep: jobs from the grid, status as runs finish.

`prepare` turns the grid into jobs, leaving out runs already completed in
the sweep directory (their status says `completed`, `action: reused`);
`run` schedules the rest on a backend, recording in sweep.json each run's
start, end and error as it happens, and on Ctrl-C marks the runs in
flight `interrupted` (a rerun resumes them) before it lets go.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from crsec_concordia.calibration.run_policy import Chosen
from crsec_concordia.errors import UserError
from crsec_concordia.models import EndpointConfig
from crsec_concordia.rundir import writing
from crsec_concordia.rundir.format import SCENARIO_JSON
from crsec_concordia.sweeps import execute, grid
from crsec_concordia.sweeps.progress import Progress
from crsec_concordia.sweeps.runjob import Outcome, RunJob, state

LOCK = ".sweep.lock"


class Lock:
  """One driver per sweep directory: a second one would run the same runs
  into the same directories. An flock ends with its process, even killed."""

  def __init__(self, directory: Path):
    self.path = directory / LOCK
    self._file = None

  def __enter__(self) -> "Lock":
    self._file = open(self.path, "a+", encoding="utf-8")  # pylint: disable=consider-using-with
    try:
      fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
      self._file.seek(0)
      holder = self._file.read().strip() or "?"
      self._file.close()
      raise UserError(f"another crsec sweep (pid {holder}) is running in "
                      f"{self.path.parent}; wait for it or stop it first"
                      ) from None
    self._file.seek(0)
    self._file.truncate()
    self._file.write(str(os.getpid()))
    self._file.flush()
    return self

  def __exit__(self, *exc: Any) -> None:
    if self._file is not None:
      fcntl.flock(self._file, fcntl.LOCK_UN)
      self._file.close()


class StatusBook:
  """sweep.json, rewritten (atomically) whenever a run changes state."""

  def __init__(self, sweep_dir: Path, data: dict[str, Any]):
    self.sweep_dir = sweep_dir
    self.data = data
    self._by_id = {r["id"]: r for r in data["runs"]}

  def mark(self, run_id: str, **fields: Any) -> None:
    self._by_id[run_id].update(fields)

  def entry(self, run_id: str) -> dict[str, Any]:
    return self._by_id[run_id]

  def save(self) -> None:
    self.data["updated"] = writing.now()
    writing.write_json(self.sweep_dir / grid.SWEEP_JSON, self.data)


def _expected(scenario: Any, steps: int | None) -> Any:
  """scenario.json as the runner writes it for this run (None for a
  stand-in scenario, which cannot say)."""
  if not hasattr(scenario, "with_max_steps"):
    return None
  resolved = scenario.with_max_steps(steps) if steps else scenario
  return json.loads(json.dumps(resolved.to_dict()))


def _other_setup(run_dir: Path, expected: Any) -> bool:
  """Whether the run there was made from another scenario or condition
  (the file changed since): reusing it would mix set-ups in one cell."""
  if expected is None:
    return False
  try:
    found = json.loads((run_dir / SCENARIO_JSON).read_text(
        encoding="utf-8"))
  except (OSError, ValueError):
    return False
  return found != expected


def prepare(sweep_dir: Path, runs: list[grid.RunSpec],
            scenario_for: Callable[[grid.RunSpec], Any],
            endpoints: Mapping[str, EndpointConfig], *, cache: bool = True,
            progress: bool = False,
            policies: Mapping[tuple[str, str], Chosen | None] | None = None,
            models: Mapping[str, Any] | None = None,
            stated_belief: bool = True
            ) -> tuple[list[RunJob], list[str], dict[str, str]]:
  """(jobs to run, ids of runs already completed here, runs whose
  directory holds a run of another set-up: id -> why). `policies`: the
  referee's policy per (endpoint, scenario), if any; `models`: the models
  spec per condition, if any; `stated_belief`: whether new runs ask their
  agents' stated rules (run_episode's switch)."""
  jobs, done, other = [], [], {}
  for run in runs:
    run_dir = (sweep_dir / run.run_dir).resolve()
    found = state(run_dir, run.arm, run.seed, run.steps)
    if found in ("completed", "interrupted") and _other_setup(
        run_dir, _expected(scenario_for(run), run.steps)):
      other[run.id] = (f"{run_dir} holds a run of another set-up (the "
                       "scenario or the condition changed since it ran): "
                       "move it away to run it again, or use another --out")
      continue
    if found == "completed":
      done.append(run.id)
      continue
    jobs.append(RunJob(
        id=run.id, run_dir=run_dir, scenario=scenario_for(run), arm=run.arm,
        seed=run.seed, steps=run.steps, endpoint=endpoints[run.endpoint],
        endpoint_name=run.endpoint, cache=cache, progress=progress,
        referee_policy=(policies or {}).get((run.endpoint, run.scenario)),
        models=(models or {}).get(run.condition),
        stated_belief=stated_belief))
  return jobs, done, other


def run(jobs: list[RunJob], backend: execute.Backend, book: StatusBook,
        progress: Progress, *, limits: Mapping[str, int | None] | None = None,
        poll: float = 1.0) -> dict[str, Outcome]:
  """Schedules `jobs`, keeping sweep.json and the progress line current."""
  dirs = {job.id: job.run_dir for job in jobs}
  in_flight: set[str] = set()
  changed: list[str] = []  # Runs ended since the last progress line.

  def on_start(job: RunJob) -> None:
    in_flight.add(job.id)
    entry = book.entry(job.id)
    book.mark(job.id, status="running", error=None,
              attempts=int(entry.get("attempts") or 0) + 1)
    book.save()
    progress.running += 1

  def on_done(job: RunJob, outcome: Outcome) -> None:
    in_flight.discard(job.id)
    book.mark(job.id, status=outcome.status, error=outcome.error,
              action=outcome.action, node=outcome.node,
              wall_seconds=round(outcome.wall_seconds, 1),
              finished=writing.now())
    book.save()
    progress.running -= 1
    progress.read([job.run_dir])
    if outcome.status == "completed":
      progress.done += 1
      progress.say(f"sweep: {job.id}: {outcome.action}, "
                   f"{outcome.wall_seconds:.0f}s")
    elif outcome.status in ("stopped", "interrupted"):
      progress.say(f"sweep: {job.id}: {outcome.error}")
    else:
      progress.failed += 1
      progress.say(f"sweep: {job.id}: FAILED: {outcome.error}")
    changed.append(job.id)

  def on_tick(running: list[RunJob]) -> None:
    progress.read(dirs[j.id] for j in running)
    progress.show(force=bool(changed))
    changed.clear()

  try:
    return execute.schedule_jobs(jobs, backend, limits=limits,
                                 on_start=on_start, on_done=on_done,
                                 on_tick=on_tick, poll=poll)
  except BaseException:
    for run_id in in_flight:
      book.mark(run_id, status="interrupted")
    book.data["status"] = "interrupted"
    book.save()
    raise


def finish(book: StatusBook) -> tuple[int, int]:
  """Sets the sweep's status from its runs; returns (completed, failed)."""
  runs = book.data["runs"]
  completed = sum(r["status"] == "completed" for r in runs)
  failed = sum(r["status"] == "failed" for r in runs)
  book.data["status"] = ("completed" if completed == len(runs)
                         else "partial")
  book.data["finished"] = writing.now()
  book.save()
  return completed, failed


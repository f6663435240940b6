"""One run of a sweep, as a worker plays it: skip, resume or start.

The same function runs in a thread (`crsec compare`) or in a Ray task
(`crsec sweep`), and it is idempotent: it looks at the run directory
first, so a task retried after a crash, or a sweep rerun after Ctrl-C,
finds a completed run and leaves it, finds an interrupted one and resumes
it (`runner.resume_episode`), and starts afresh a run that stopped before
its first slot was saved. It never raises: a failure is an Outcome with
its error in one line, so one bad run does not stop the others.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

from crsec_concordia import runner
from crsec_concordia.embedding import user as user_embedder
from crsec_concordia.calibration.run_policy import Chosen
from crsec_concordia.endings import BudgetReached, RunEnded
from crsec_concordia.models import EndpointConfig
from crsec_concordia.rundir.format import (CONFIG_JSON, EVENTS, RUN_JSON,
                                           SCENARIO_JSON, temporary)

_LOG = logging.getLogger(__name__)
# What run_episode writes before run.json: a directory holding only these
# was stopped while being set up and can be started again.
_SETUP_FILES = {SCENARIO_JSON, CONFIG_JSON, EVENTS,
                *(temporary(name) for name in (RUN_JSON, SCENARIO_JSON,
                                               CONFIG_JSON))}
PERSON_ERRORS = ("UserError", "ScenarioError", "EndpointError",
                 "ModelFileError")


@dataclasses.dataclass
class RunJob:
  """Everything a worker needs for one run (picklable)."""
  id: str
  run_dir: Path
  scenario: Any  # A Scenario (tests pass stand-ins)
  arm: str
  seed: int
  steps: int | None
  endpoint: EndpointConfig
  endpoint_name: str = "default"
  cache: bool = True
  progress: bool = False
  # Resolved by the driver, so a worker on another node needs no
  # calibration file of its own.
  referee_policy: Chosen | None = None
  # --embedder's module:function (user_embedder.py), loaded by the worker
  # from the driver's directory.
  embedder: str | None = None
  embedder_dir: str | None = None
  # The condition's models by role (runs/model_roles.py), if any.
  models: dict[str, Any] | None = None
  # Caps per run and in total (runs/budget.py), and --outage-wait.
  budget: Any = None
  outage_wait: float | None = None
  # Whether a new run asks its agents' stated rules (a resumed one goes on
  # as it began).
  stated_belief: bool = True
  # --referee-batched's and --conflicts-batched's choices (None: auto),
  # resolved per run.
  referee_batched: bool | None = None
  conflicts_batched: bool | None = None


@dataclasses.dataclass
class Outcome:
  """What became of a run. `action` says what the worker did: reused (a
  completed run was there), resumed, restarted (a run that never saved a
  slot was cleared and started again), ran, or none (it failed first)."""
  id: str
  status: str  # completed | failed | stopped (a budget) | interrupted
  action: str
  error: str | None = None
  error_kind: str | None = None
  wall_seconds: float = 0.0
  node: str | None = None


def read_run_json(run_dir: Path) -> dict[str, Any] | None:
  """The run's run.json as it stands, or None when there is none yet (or
  half of one): a sweep asks what is at a run's place, it loads no run."""
  try:
    return json.loads((run_dir / RUN_JSON).read_text(encoding="utf-8"))
  except (OSError, ValueError):
    return None


def state(run_dir: Path, arm: str, seed: int, steps: int | None) -> str:
  """What is at `run_dir` for this run: "" (nothing), "completed",
  "interrupted" (this run, not finished), "setup" (stopped before run.json
  was written), "other" (a different run, or something else)."""
  if not run_dir.exists():
    return ""
  info = read_run_json(run_dir)
  if info is None:
    names = {p.name for p in run_dir.iterdir()}
    return "setup" if names <= _SETUP_FILES else "other"
  if (info.get("arm") != arm or info.get("seed") != seed
      or (steps is not None and info.get("max_steps") != steps)):
    return "other"
  return "completed" if info.get("status") == "completed" else "interrupted"


def error_line(error: BaseException) -> str:
  """An error's first line (or its class's name) for sweep.json."""
  text = str(error).strip()
  return text.splitlines()[0] if text else type(error).__name__


def _resumable(run_dir: Path) -> bool:
  """Whether a slot was saved to resume from (else start again)."""
  info = read_run_json(run_dir) or {}
  done = int(info.get("completed_steps") or 0)
  return done > 0 and runner.checkpoint_path(run_dir, done).is_file()


def _limits(job: RunJob) -> dict[str, Any]:
  """The job's budget and outage wait, as run and resume take them."""
  given: dict[str, Any] = {}
  if job.budget is not None:
    given["budget"] = job.budget
  if job.outage_wait is not None:
    given["outage_wait"] = job.outage_wait
  return given


def _run_fresh(job: RunJob) -> None:
  kwargs: dict[str, Any] = dict(arm=job.arm, seed=job.seed,
                                out_dir=job.run_dir, endpoint=job.endpoint,
                                steps=job.steps, progress=job.progress)
  if not job.cache:
    kwargs["cache"] = False
  if job.referee_policy is not None:
    kwargs["referee_policy"] = job.referee_policy
  if job.models:
    kwargs["models"] = job.models
  if job.embedder is not None:
    kwargs["embedder"] = user_embedder.load_embedder(
        job.embedder, where=job.embedder_dir)
  kwargs.update(_limits(job))
  if not job.stated_belief:
    kwargs["stated_belief"] = False
  if job.referee_batched is not None:
    kwargs["referee_batched"] = job.referee_batched
  if job.conflicts_batched is not None:
    kwargs["conflicts_batched"] = job.conflicts_batched
  job.run_dir.parent.mkdir(parents=True, exist_ok=True)
  runner.run_episode(job.scenario, **kwargs)


def play(job: RunJob, node: str | None = None) -> Outcome:
  """Skips, resumes or runs `job`; never raises (but on Ctrl-C)."""
  start = time.monotonic()
  action = "none"
  try:
    found = state(job.run_dir, job.arm, job.seed, job.steps)
    spent = job.budget.exhausted() if job.budget is not None else None
    if found == "completed":
      action = "reused"
    elif spent:
      raise BudgetReached(f"not started: {spent}")
    elif found == "interrupted" and _resumable(job.run_dir):
      action = "resumed"
      given = _limits(job)
      if job.embedder is not None:
        given["embedder"] = user_embedder.load_embedder(
            job.embedder, where=job.embedder_dir)
      runner.resume_episode(job.run_dir, endpoint=job.endpoint,
                            progress=job.progress, **given)
    else:
      if found in ("interrupted", "setup"):
        # Nothing was saved to resume from: this run's own directory.
        shutil.rmtree(job.run_dir)
        action = "restarted"
      else:
        action = "ran"
      _run_fresh(job)
    if action != "reused":
      info = read_run_json(job.run_dir) or {}
      if info and info.get("status") not in (None, "completed"):
        raise RuntimeError(f"the run ended with status {info.get('status')}")
    return Outcome(job.id, "completed", action,
                   wall_seconds=time.monotonic() - start, node=node)
  except RunEnded as e:
    # A budget reached or an endpoint that stayed down: the run resumes
    # when the same compare or sweep is run again (endings.py).
    return Outcome(job.id, "stopped" if isinstance(e, BudgetReached)
                   else "interrupted", action,
                   error=f"{e.ending.status}: {error_line(e)}",
                   error_kind=type(e).__name__,
                   wall_seconds=time.monotonic() - start, node=node)
  except Exception as e:  # pylint: disable=broad-except
    _LOG.debug("run %s failed", job.id, exc_info=True)
    return Outcome(job.id, "failed", action, error=error_line(e),
                   error_kind=type(e).__name__,
                   wall_seconds=time.monotonic() - start, node=node)

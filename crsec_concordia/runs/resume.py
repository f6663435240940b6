"""`resume_episode`: continue an interrupted run from its last completed slot.

The simulation is rebuilt from run.json and scenario.json, every entity's
and the game master's state is restored from the latest checkpoint, the
records of unfinished slots are dropped, and the remaining slots are played
into the same directory. With the response cache, the replayed calls give
the answers the interrupted run got, so the run ends as an uninterrupted one
would have.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from crsec_concordia import embedding, endings
from crsec_concordia.calibration import run_policy
from crsec_concordia.embedding import identity as embedder_identity
from crsec_concordia.embedding import user as user_embedder
from crsec_concordia.endings import BudgetReached
from crsec_concordia.errors import UserError
from crsec_concordia.interviews.stated_table import END
from crsec_concordia.models import EndpointConfig
from crsec_concordia.operations import failure_notice
from crsec_concordia.operations.names import split_usage
from crsec_concordia.rundir import lock, recovery
from crsec_concordia.rundir.format import FAILURE
from crsec_concordia.rundir.reading import read_records
from crsec_concordia.rundir import writing as rundir
from crsec_concordia.runs import config as config_lib
from crsec_concordia.runs import episode, outage, stated_run
from crsec_concordia.runs.budget import Budget, Caps
from crsec_concordia.runs.session import Session
from crsec_concordia.scenarios import Scenario


def resumable(run_dir: Path) -> tuple[dict[str, Any], Scenario, Path]:
  """run.json, the scenario and the checkpoint to resume from, or why not."""
  if not run_dir.is_dir():
    raise UserError(f"{run_dir} is not a directory; give the run directory "
                    "`crsec run` printed")
  if not (run_dir / rundir.RUN_JSON).is_file():
    raise UserError(f"{run_dir} is not a run directory (no {rundir.RUN_JSON});"
                    " give the directory `crsec run` printed")
  try:
    info = rundir.read_json(run_dir / rundir.RUN_JSON)
    scenario_data = rundir.read_json(run_dir / rundir.SCENARIO_JSON)
  except FileNotFoundError as e:
    raise UserError(f"{run_dir} is incomplete ({Path(e.filename).name} is "
                    "missing); start a new run with `crsec run`") from None
  except json.JSONDecodeError as e:
    raise UserError(f"{run_dir}: a JSON file is damaged ({e}); start a new "
                    "run with `crsec run`") from None
  if endings.is_completed(info.get("status")):
    raise UserError(f"{run_dir} is already completed "
                    f"({info.get('completed_steps')} steps); nothing to "
                    "resume")
  scenario = Scenario.from_dict(scenario_data,
                                source=str(run_dir / rundir.SCENARIO_JSON))
  done = int(info.get("completed_steps") or 0)
  checkpoint = rundir.checkpoint_path(run_dir, done)
  if done == 0 and not (run_dir / rundir.CONFIG_JSON).is_file():
    raise UserError(f"{run_dir} stopped before its first slot was complete: "
                    "there is nothing to resume; start again with `crsec run`")
  if done and not checkpoint.is_file():
    raise UserError(f"{run_dir} has no checkpoint for its last completed slot "
                    f"({done}): it cannot be resumed; start again with "
                    "`crsec run`")
  return info, scenario, checkpoint


def code_change(info: dict[str, Any], code: dict[str, Any]) -> str | None:
  """What a resume would mix, or None: a run begun (or last resumed) at
  one commit and continued at another plays its later slots with other
  code. Said, not refused (a fix to a crash is a reason to resume); the
  run's `resumed` list records each commit."""
  last = ([r.get("commit") for r in info.get("resumed") or ()
           if r.get("commit")] or [info.get("commit")])[-1]
  now = code.get("commit")
  if not last or not now or last == now:
    return None
  return (f"this run's slots so far were played at commit {last[:7]}, the "
          f"rest will be at {now[:7]} (run.json 'resumed' records both); "
          "for one code throughout, resume from a checkout of "
          f"{last[:7]}")


def committed_usage(run_dir: Path, info: dict[str, Any],
                    done: int) -> dict[str, Any]:
  """The usage committed with the last completed slot (run.json is written
  after usage.json, so usage.json may already count the next slot)."""
  committed = info.get("usage_by_tag")
  if committed is None and (run_dir / rundir.USAGE_JSON).is_file():
    usage = rundir.read_json(run_dir / rundir.USAGE_JSON)
    if int(usage.get("completed_steps", done)) == done:
      committed = usage.get("by_tag", {})
  return dict(committed or {})


def _same_embedder(info: dict, embedder) -> None:
  """A run goes on with the embedder it began with (run.json's
  `embedder`; none recorded: the default), or stops saying which."""
  began = embedder_identity.identity_of_run(info)
  now = embedding.identity_for(embedder)
  if began.fingerprint != now.fingerprint:
    raise UserError(f"this run began with the sentence embedder {began} "
                    f"and would go on with {now}: resume it with the same "
                    f"embedder (--embedder {began.name}"
                    + (")" if ":" in began.name else ", your function)"))


def _tell_no_failure_again(run_dir: Path, model, roles) -> None:
  """The operations whose failure the committed slots told the log
  (operations/failure_notice.py) are not told again by the resumed run:
  its run.log and Concordia's log stay those of an uninterrupted run."""
  failed: dict[str | None, set[str]] = {}
  for record in read_records(run_dir / rundir.EVENTS):
    if record.get("kind") == FAILURE:
      failed.setdefault(record.get("model"), set()).add(str(record.get("op")))
  for model_id, ops in failed.items():
    if roles is not None and roles.mixed and model_id in roles.models:
      failure_notice.told_before(roles.models[model_id], ops)
    else:
      failure_notice.told_before(model, ops)


def _roles(info: dict[str, Any], scenario: Scenario, seed: int, model,
           described, progress: bool, given: dict[str, Any] | None):
  """The run's models by role again (runs/model_roles.py), or None."""
  spec = info.get("model_spec")
  if not spec:
    return None
  given = dict(given or {})
  endpoints = dict(spec.get("endpoints") or {})
  for i, e in endpoints.items():
    if isinstance(e, dict) and e.get("endpoint") == "given" and i not in given:
      raise UserError(f"this run's model {i!r} was handed over by a "
                      "program: resume it from Python with resume_episode("
                      f"..., given_models={{{i!r}: the model}})")
  roles = episode.roles_for(spec, scenario, seed, bool(info.get("cache", True)),
                            progress, model, described, given)
  if roles is not None:
    roles.base_usage = dict(info.get("usage_by_model") or {})
  return roles


def _budget(info: dict[str, Any], given: Budget | None, run_dir: Path,
            done: int) -> Budget:
  """The caps the run goes on with (given ones are recorded in run.json
  for later resumes); a run already at them stops here."""
  budget = given or Budget(run=Caps.of_json(info.get("budget")))
  if given is not None:
    if given.run:
      info["budget"] = given.run.to_json()
    else:
      info.pop("budget", None)
  if budget and done:
    reached = budget.reached(rundir.totals(split_usage(committed_usage(
        run_dir, info, done))[0]), run_dir)
    if reached:
      stop = BudgetReached(f"{reached}, and the run would go on with it")
      stop.run_dir = run_dir
      raise stop
  return budget


def resume_episode(
    run_dir: Path | str,
    *,
    endpoint: EndpointConfig | None = None,
    progress: bool = True,
    model=None,
    embedder=None,
    given_models: dict[str, Any] | None = None,
    budget: Budget | None = None,
    outage_wait: float | None = None,
) -> Path:
  """Continues an interrupted run from its last completed slot (a run
  stopped before its first: from the start, in its directory).

  With no `endpoint` (nor `model`), a run whose model came from a model
  factory goes on with that factory, and with no `embedder`, a run goes
  on with the embedder its run.json names, both imported again by their
  module:function. A run with models by role goes on with the models its
  run.json's `model_spec` names (`given_models`: ready ones by id, as the
  run was given them). `budget`: new caps (runs/budget.py); without them
  the run keeps the caps it was started with. `outage_wait`: seconds an
  endpoint outage is waited out (runs/outage.py).

  It holds the run's lock throughout (rundir/lock.py), and first brings
  every file the run appends to back to its last committed slot
  (rundir/recovery.py).

  Raises:
    UserError: the directory is not a run, is completed, has no
      checkpoint to resume from, is being written by another process
      (`lock.Busy`), or has a file that cannot be brought back
      (`recovery.Unrecoverable`); or the run's factory or embedder cannot
      be imported here.
    BudgetReached: the run has already reached the caps it would go on
      with.
  """
  run_dir = Path(run_dir)
  resumable(run_dir)  # A run directory, before its lock file is made.
  with lock.held(run_dir):
    return _resume(run_dir, endpoint, progress, model, embedder,
                   given_models, budget, outage_wait)


def _resume(run_dir: Path, endpoint, progress, model, embedder,
            given_models, budget, outage_wait) -> Path:
  """`resume_episode` under the run's lock."""
  info, scenario, checkpoint = resumable(run_dir)
  state = (rundir.read_json(checkpoint) if int(info["completed_steps"])
           else {})
  recovery.recover(run_dir, info, log_in_checkpoint=bool(
      state.get("raw_log")))
  seed, arm = int(info["seed"]), str(info["arm"])
  done = int(info["completed_steps"])
  budget = _budget(info, budget, run_dir, done)
  # The referee's policy as the run began with it (config.json).
  config = config_lib.build_config(scenario, arm, seed, run_policy.of_config(
      rundir.read_json(run_dir / rundir.CONFIG_JSON)))
  if model is None:
    endpoint = (endpoint or EndpointConfig.of_run(info.get("model"))
                or EndpointConfig.resolve())
  embedder = user_embedder.used_by_run(info, embedder)
  model, described = episode.model_for(
      endpoint, seed, bool(info.get("cache", True)), model, progress)
  roles = _roles(info, scenario, seed, model, described, progress,
                 given_models)
  _same_embedder(info, embedder)
  embedder = episode.embedder_for(embedder)
  _tell_no_failure_again(run_dir, model, roles)

  def rebuild():
    return episode.simulation(config, model, embedder, roles)
  simulation = rebuild()
  if done:
    simulation.load_from_checkpoint(state)
  session = Session(run_dir, scenario, simulation, model, info, {}, progress,
                    roles, embedder, rebuild=rebuild, budget=budget or None,
                    outage_policy=outage.policy_for(outage_wait))
  # Records still pending in the restored state were flushed with their slot.
  session.drain()
  session.base_usage = committed_usage(run_dir, info, done)
  code = rundir.provenance()
  mixed = code_change(info, code)
  if mixed and progress:
    print(f"crsec: note: {mixed}", file=sys.stderr)
  info.setdefault("resumed", []).append(
      {"at": rundir.now(), "from_step": done, "model": described,
       "version": code["version"], "commit": code["commit"],
       "commit_dirty": code["commit_dirty"]})
  if done >= scenario.total_steps:
    # Every slot was flushed; only the end of the run was lost (its
    # stated-belief question, if not asked yet, and its logs), which is
    # done before run.json says it is completed.
    stated_run.hold_phase(session, END)
    session.write_logs()
    info.update(status="completed", finished=rundir.now())
    rundir.write_json(run_dir / rundir.RUN_JSON, info)
    return run_dir
  session.play(premise=scenario.premise if done == 0 else "")
  return run_dir

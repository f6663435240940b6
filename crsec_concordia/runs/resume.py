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

from concordia.utils import structured_logging

from crsec_concordia import embedding
from crsec_concordia.calibration import run_policy
from crsec_concordia.embedding import identity as embedder_identity
from crsec_concordia.errors import UserError
from crsec_concordia.models import EndpointConfig
from crsec_concordia.rundir import writing as rundir
from crsec_concordia.runs import config as config_lib
from crsec_concordia.runs import episode
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
  if info.get("status") == "completed":
    raise UserError(f"{run_dir} is already completed "
                    f"({info.get('completed_steps')} steps); nothing to "
                    "resume")
  scenario = Scenario.from_dict(scenario_data,
                                source=str(run_dir / rundir.SCENARIO_JSON))
  done = int(info.get("completed_steps") or 0)
  checkpoint = rundir.checkpoint_path(run_dir, done)
  if done == 0:
    raise UserError(f"{run_dir} stopped before its first slot was complete: "
                    "there is nothing to resume; start again with `crsec run`")
  if not checkpoint.is_file():
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


def resume_episode(
    run_dir: Path | str,
    *,
    endpoint: EndpointConfig | None = None,
    progress: bool = True,
    model=None,
    embedder=None,
    given_models: dict[str, Any] | None = None,
) -> Path:
  """Continues an interrupted run from its last completed slot.

  A run with models by role goes on with the models its run.json's
  `model_spec` names (`given_models`: ready ones by id, as the run was
  given them).

  Raises:
    UserError: the directory is not a run, is completed, or has no
      checkpoint to resume from.
  """
  run_dir = Path(run_dir)
  info, scenario, checkpoint = resumable(run_dir)
  seed, arm = int(info["seed"]), str(info["arm"])
  done = int(info["completed_steps"])
  # The referee's policy as the run began with it (config.json).
  config = config_lib.build_config(scenario, arm, seed, run_policy.of_config(
      rundir.read_json(run_dir / rundir.CONFIG_JSON)))
  endpoint = endpoint or EndpointConfig.resolve()
  model, described = episode.model_for(
      endpoint, seed, bool(info.get("cache", True)), model, progress)
  roles = _roles(info, scenario, seed, model, described, progress,
                 given_models)
  _same_embedder(info, embedder)
  embedder = episode.embedder_for(embedder)

  simulation = episode.simulation(config, model, embedder, roles)
  simulation.load_from_checkpoint(rundir.read_json(checkpoint))
  session = Session(run_dir, scenario, simulation, model, info, {}, progress,
                    roles, embedder)
  # Records still pending in the restored state were flushed with their slot.
  session.drain()
  rundir.truncate_events(run_dir / rundir.EVENTS, done)
  rundir.drop_norm_snapshots_after(run_dir, done)
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
    # Every slot was flushed; only the end of the run was lost.
    info.update(status="completed", finished=rundir.now())
    rundir.write_json(run_dir / rundir.RUN_JSON, info)
    # A checkpoint of an older run holds the raw log; a newer run's is in
    # checkpoints/log.jsonl (runs/session.py).
    log = structured_logging.SimulationLog.from_raw_log(
        list(simulation.get_raw_log()) + rundir.read_log(run_dir, done))
    (run_dir / rundir.LOG_HTML).write_text(log.to_html(), encoding="utf-8")
    rundir.write_log_json(run_dir, log)
    return run_dir
  session.play(premise="")
  return run_dir

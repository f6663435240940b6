"""`run_episode`: one episode of a scenario into a new run directory."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from concordia.prefabs.simulation import generic as simulation_lib

from crsec_concordia import embedding, observations, threads
from crsec_concordia.calibration import batching as batching_lib
from crsec_concordia.calibration import run_policy
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.interviews import stated_phase
from crsec_concordia.interviews.stated_table import STATED_BELIEF_KEY
from crsec_concordia.judgement_prompts import (batch_prompts_hash,
                                               conflict_batch_prompts_hash,
                                               identity_of, prompts_hash)
from crsec_concordia.errors import UserError
from crsec_concordia.models import EndpointConfig, embedded, make_model
from crsec_concordia.models.concordia_adapter import as_structured
from crsec_concordia.operations.names import split_usage
from crsec_concordia.rundir import lock
from crsec_concordia.rundir import writing as rundir
from crsec_concordia.rundir.format import ACTION
from crsec_concordia.rundir.reading import per_agent_hour
from crsec_concordia.runs import config as config_lib
from crsec_concordia.runs import model_roles, outage
from crsec_concordia.runs.budget import Budget
from crsec_concordia.runs.session import Session
from crsec_concordia.runs.simulation import SlotSimulation
from crsec_concordia.runs.slot_engine import SlotEngine
from crsec_concordia.scenarios import Scenario


def default_run_dir(scenario: Scenario, arm: str, seed: int) -> Path:
  stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
  return Path("runs") / f"{scenario.name}-{arm}-seed{seed}-{stamp}"


def _cache_path(enabled: bool) -> Path | None:
  if not enabled:
    return None
  path = embedded.cache_dir() / "responses.sqlite"
  path.parent.mkdir(parents=True, exist_ok=True)
  return path


def model_for(endpoint: EndpointConfig, seed: int, cache: bool, model,
              progress: bool):
  """The run's model (given, or built from the endpoint) and its
  description, with the hash of the judgement prompts it is asked in (the
  calibration that corrects its shares must be of the same:
  crsec_concordia/judgement_prompts.py)."""
  prompts = {"judgement_prompts": prompts_hash()}
  if model is not None:
    return as_structured(model), {**_given(model), **prompts}
  say = (lambda m: print(f"crsec: {m}", file=sys.stderr)) if progress else None
  built = make_model(endpoint, seed=seed, cache_path=_cache_path(cache),
                     progress=say)
  return built, {**endpoint.describe(), **prompts}


def _given(model) -> dict[str, str]:
  """What a run records of a model a program handed over: its class."""
  return {"endpoint": "given", "model": type(as_structured(model)).__name__}


def _identity(endpoint: EndpointConfig, model) -> ModelIdentity:
  """The identity whose calibration a `calibrated` policy is read from:
  the endpoint's model, or a given model's class (what model_for records)."""
  if model is None:
    return identity_of(endpoint)
  return ModelIdentity.of_described(_given(model), prompts_hash())


def embedder_for(embedder: embedding.SentenceEmbedder | None
                 ) -> embedding.Embedder:
  """The run's Embedder value (embedding/value.py): of the function
  given, else of the default MiniLM (the `embeddings` extra), loaded now,
  before the progress bar (its loading messages would break the bar's
  line). Its first vectors are checked here: bad ones stop the command
  before anything is written."""
  return embedding.of(embedder)


def simulation(config, model, embedder, roles=None
               ) -> simulation_lib.Simulation:
  engine = SlotEngine()
  engine.workers = threads.workers_for(as_structured(model))
  if roles is None:
    return SlotSimulation(config, model, embedder, engine=engine)
  return SlotSimulation(config, model, embedder, engine=engine,
                        entity_models=roles.entity_models(),
                        game_master_model=roles.models[roles.game_master])


def roles_for(spec, scenario: Scenario, seed: int, cache: bool, progress: bool,
              model, described, given=None):
  """The run's ModelRoles (runs/model_roles.py), or None for one model."""
  def make(endpoint: EndpointConfig):
    return model_for(endpoint, seed, cache, None, progress)
  return model_roles.build_roles(spec, scenario, seed, model, described, make,
                                 given)


def _empty_or_refused(run_dir: Path) -> None:
  """A new run's directory holds nothing (but its lock), or it is refused."""
  if not run_dir.is_dir() or any(p.name != rundir.RUN_LOCK
                                 for p in run_dir.iterdir()):
    raise UserError(f"{run_dir} already exists and is not empty: choose "
                    "another --out, or resume it with `crsec resume`")


def run_episode(
    scenario: Scenario | str | Path,
    *,
    arm: str,
    seed: int,
    out_dir: Path | str | None = None,
    endpoint: EndpointConfig | None = None,
    steps: int | None = None,
    cache: bool = True,
    progress: bool = True,
    model=None,
    embedder=None,
    referee_policy: str | run_policy.Chosen | None = None,
    referee_batched: bool | None = None,
    conflicts_batched: bool | None = None,
    models: dict[str, Any] | None = None,
    given_models: dict[str, Any] | None = None,
    budget: Budget | None = None,
    outage_wait: float | None = None,
    stated_belief: bool = True,
) -> Path:
  """Plays one episode into a new run directory and returns its path.

  Args:
    scenario: a Scenario, a scenario file or a built-in name.
    arm: "normative" (CRSEC agents) or "baseline" (the same agents without).
    seed: the run seed (model sampling derives from it).
    out_dir: the run directory (must not exist or be empty); by default
      runs/<scenario>-<arm>-seed<N>-<UTC time>.
    endpoint: the model endpoint (default: the embedded model).
    steps: play this many slots instead of the scenario's length.
    cache: replay identical model calls from the shared response cache.
    progress: show a progress bar on stderr.
    model: a ready model (tests pass a ScriptedModel); overrides `endpoint`.
    embedder: a sentence embedder (any function from text to vector, or
      an Embedder value); default the shared MiniLM.
    referee_policy: which of the referee's structures apply: "auto"
      (None, the default), "all-on", "trusting", "calibrated" (the model's
      own calibration's choice) or a JSON file of switches, or one already
      resolved (calibration/run_policy.py).
    referee_batched: judge a place's slot's new actions in one call (True)
      or each in its own (False); None: as the model's measured accuracy
      batched says of the venue (calibration/batching.py).
    conflicts_batched: ask the normative agents' distinct DetectConflict
      questions of a place's slot in one call (True) or as each observer
      holds them (False); None: as the agents' model's measured accuracy
      batched says of the venue.
    models: a models spec: the game master, groups, named agents or a
      share of agents on other models (runs/model_roles.py); it replaces
      the scenario's `models:` block, played when none is given.
    given_models: ready models by id for the spec's endpoints (tests).
    budget: caps on the run's calls and tokens (runs/budget.py): the run
      stops `stopped: budget` after the slot that reaches one.
    outage_wait: seconds an endpoint outage is waited out before the run
      stops `interrupted: endpoint unreachable` (runs/outage.py; default
      ten minutes).
    stated_belief: ask every agent, before the first slot and after the
      last, what rules people here follow (RUN_DIR/stated_belief.csv;
      interviews/stated_phase.py); run.json records the switch.

  Raises:
    UserError: bad arguments (a ScenarioError for a malformed scenario);
      nothing is created then.
    RunEnded: the run stopped before its end (endings.py); run.json says
      how.
  """
  scenario = config_lib.load(scenario)
  config_lib.check_arm(arm)
  if steps is not None:
    if steps < 1:
      raise UserError(f"--steps must be at least 1, not {steps}")
    scenario = scenario.with_max_steps(steps)
  run_dir = Path(out_dir) if out_dir else default_run_dir(scenario, arm, seed)
  if run_dir.exists():
    _empty_or_refused(run_dir)
  endpoint = endpoint or EndpointConfig.resolve()
  models = model_roles.spec_of(models, scenario)
  model_roles.check_spec(models, scenario, given_models)
  # A given embedder's first vectors are checked before any model starts;
  # the default MiniLM loads after the run's model (whose errors come first).
  given = None if embedder is None else embedder_for(embedder)
  # The referee's policy is read for the game master's model, and for the
  # pair of it and the embedder.
  gm_endpoint, gm_model = model_roles.game_master_endpoint(models,
                                                          given_models)
  gm_identity = _identity(gm_endpoint or endpoint,
                          model if gm_endpoint is None and gm_model is None
                          else gm_model)
  chosen = run_policy.resolve(
      referee_policy, gm_identity, scenario,
      None if given is None or given.measured else given.name)
  batching = batching_lib.batching_for(referee_batched, gm_identity,
                                       scenario, batch_prompts_hash())
  conflicts = batching_lib.batching_for(
      conflicts_batched, _identity(endpoint, model), scenario,
      conflict_batch_prompts_hash(), batching_lib.CONFLICTS)
  config = config_lib.build_config(
      scenario, arm, seed, chosen.policy if chosen else None, batching.on,
      conflicts.on)
  model, described = model_for(endpoint, seed, cache, model, progress)
  roles = roles_for(models, scenario, seed, cache, progress, model, described,
                    given_models)
  embedder = given or embedder_for(None)

  run_dir.mkdir(parents=True, exist_ok=True)
  with lock.held(run_dir):
    # Checked again under the lock: a second `run` into it began first.
    _empty_or_refused(run_dir)
    rundir.write_json(run_dir / rundir.SCENARIO_JSON, scenario.to_dict())
    rundir.write_json(run_dir / rundir.CONFIG_JSON,
                      config_lib.config_to_json(config))
    (run_dir / rundir.EVENTS).touch()
    source = scenario.source_path
    info = {
        "scenario": scenario.name,
        "scenario_path": str(source) if source else None,
        "arm": arm, "seed": seed, "max_steps": scenario.total_steps,
        "completed_steps": 0, "status": "running", "model": described,
        "cache": cache, "versions": rundir.versions(), "started": rundir.now(),
        "finished": None, "wall_seconds": 0.0, "resumed": [],
        STATED_BELIEF_KEY: stated_phase.switch(stated_belief),
    }
    if chosen is not None:
      info["referee_policy"] = chosen.describe()
    info["referee_batched"] = batching.describe()
    if arm == "normative":
      info["conflicts_batched"] = conflicts.describe()
    info.update(embedder.recorded())
    info.update(embedder.thresholds_recorded())
    if roles is not None:
      info.update(models=roles.describe(), model_spec=roles.spec)
    if budget is not None and budget.run:
      info["budget"] = budget.run.to_json()
    rundir.write_json(run_dir / rundir.RUN_JSON, info)

    def rebuild():
      return simulation(config, model, embedder, roles)
    Session(run_dir, scenario, rebuild(), model, info, {}, progress, roles,
            embedder, rebuild=rebuild, budget=budget or None,
            outage_policy=outage.policy_for(outage_wait)).play(
                premise=scenario.premise)
  return run_dir


def summarize(run_dir: Path | str) -> dict[str, Any]:
  """What `crsec run` prints at the end: slots, time, cost, what happened."""
  run_dir = Path(run_dir)
  info = rundir.read_json(run_dir / rundir.RUN_JSON)
  usage_file = run_dir / rundir.USAGE_JSON
  usage = (rundir.read_json(usage_file) if usage_file.is_file()
           else {"by_tag": {}, "totals": rundir.totals({})})
  behaviours: dict[str, int] = {}
  kinds: dict[str, int] = {}
  acted = no_action = repeated = continued = 0
  # The referee's own checks (game_masters/tag_gate.py, doer_check.py,
  # second_look.py).
  referee = {"spared": 0, "far_tags": 0, "not_by_actor": 0, "looks": 0,
             "looked_tags": 0}
  reasons: dict[str, int] = {}  # Why act calls were made (plan-driven acts).
  last: dict[str, str] = {}  # Each actor's previous action.
  with open(run_dir / rundir.EVENTS, encoding="utf-8") as f:
    for line in f:
      record = json.loads(line)
      kinds[record["kind"]] = kinds.get(record["kind"], 0) + 1
      if record["kind"] == ACTION:
        acted += 1
        action = record.get("action", "")
        for reason in record.get("act_reasons", ()):
          reasons[reason] = reasons.get(reason, 0) + 1
        if record.get("continued"):
          continued += 1  # Going on with an action: no new one written.
        else:
          missing = observations.is_no_action(action)
          no_action += missing
          # A small model often writes its last action again, word for word
          # (ordering the same breakfast five slots running): shown, since
          # it bends every per-slot count.
          repeated += not missing and last.get(record.get("actor")) == action
          last[record.get("actor")] = action
        for b in record.get("behaviours", []):
          behaviours[b] = behaviours.get(b, 0) + 1
        referee["spared"] += record.get("referee_asked") is False
        referee["far_tags"] += len(record.get("far_from_action", ()))
        referee["not_by_actor"] += len(record.get("not_by_actor", ()))
        look = None if record.get("continued") else record.get("second_look")
        if look is not None:  # second_look.py
          referee["looks"] += 1
          referee["looked_tags"] += bool(look.get("accepted"))
  scenario = Scenario.from_dict(rundir.read_json(run_dir /
                                                rundir.SCENARIO_JSON))
  hours = (int(info["completed_steps"]) * scenario.clock.minutes_per_step
           / 60.0)
  # Calls made apart from the simulation (the stated-belief questions) are
  # no part of its cost: summed apart.
  inside, apart = split_usage(usage.get("by_tag", {}))
  costs = per_agent_hour(inside, len(scenario.agents), hours)
  return {"run_dir": str(run_dir), "status": info["status"],
          "steps": info["completed_steps"], "max_steps": info["max_steps"],
          "wall_seconds": info.get("wall_seconds"), "usage": usage,
          "behaviours": dict(sorted(behaviours.items())), "records": kinds,
          "actions": acted, "no_action": no_action, "repeated": repeated,
          "continued": continued, "act_reasons": dict(sorted(reasons.items())),
          "referee": referee, "referee_policy": info.get("referee_policy"),
          "referee_batched": info.get("referee_batched"),
          "conflicts_batched": info.get("conflicts_batched"),
          # A model factory's model reports no tokens: they are estimated.
          "tokens": (info.get("model") or {}).get("tokens"),
          "agents": len(scenario.agents), "simulated_hours": hours,
          "per_agent_hour": costs if hours > 0 else {},
          "apart": rundir.totals(apart)}

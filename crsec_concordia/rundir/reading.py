"""Reading a run directory (docs/design.md, "Run directory") into memory.

Everything the metrics need is in the files a run writes; nothing here calls
a model. A directory that is not a run fails with one `UserError` line that
names the missing piece and the fix, because the CLI shows it to a person.
A run's scenario is read back as the scenario's own types
(crsec_concordia.scenarios: `TargetNorm`, `Clock`), as the run wrote it:
scenario.json was validated when the run started, and a run made by an
earlier version is still read rather than refused.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crsec_concordia.errors import UserError
from crsec_concordia.rundir.format import (ACTION, CANDIDATE, COMPARE_JSON,
                                           CREATED, EVENTS, GATES_JSON, NORMS,
                                           RUN_JSON,
                                           SCENARIO_JSON, SWEEP_JSON,
                                           SYNTHESIS, USAGE_JSON, VERDICT,
                                           snapshot_step)
from crsec_concordia.scenarios.loader import Clock, TargetNorm

_LOG = logging.getLogger(__name__)

Record = dict[str, Any]
# A scenario.json without a clock (hand-written, or older) is read as the
# café's morning.
_CLOCK = {"start": "09:00", "end": "13:00", "minutes_per_step": 10, "days": 1}


def target_norms(scenario: Mapping[str, Any]) -> list[TargetNorm]:
  """The target norms of a scenario's data (scenario.json, `to_dict`)."""
  return [TargetNorm.model_construct(
      id=str(t["id"]), text=str(t["text"]),
      type=str(t.get("type", "injunctive")),
      complies=[str(b) for b in t.get("complies") or ()],
      violates=[str(b) for b in t.get("violates") or ()],
      aliases=[str(a) for a in t.get("aliases") or ()])
          for t in scenario.get("target_norms", [])]


def behaviour_texts(scenario: Mapping[str, Any]) -> dict[str, str]:
  """Behaviour id -> its description in a scenario's data."""
  return {b["id"]: b.get("description", b["id"])
          for b in scenario.get("behaviours", []) if "id" in b}


def scenario_clock(scenario: Mapping[str, Any]) -> Clock:
  """The clock of a scenario's data, the café's morning where unset."""
  given = {k: v for k, v in (scenario.get("clock") or {}).items()
           if k in _CLOCK}
  c = {**_CLOCK, **given}
  return Clock.model_construct(
      start=str(c["start"]), end=str(c["end"]),
      minutes_per_step=int(c["minutes_per_step"]), days=int(c["days"]))


def referee_model(info: Mapping[str, Any]) -> dict[str, Any]:
  """What run.json says of the model that played the game master: its
  `model`, or, in a run with models by role, the game master's entry of
  `models` (runs/model_roles.py); a calibration corrects that model's."""
  models = info.get("models") or {}
  if models:
    return dict((models.get("endpoints") or {}).get(
        models.get("game_master"), {}))
  return dict(info.get("model") or {})


@dataclasses.dataclass
class Run:
  """One run directory, loaded."""
  path: Path
  run: dict[str, Any]
  scenario: dict[str, Any]
  records: list[Record]
  # Step -> {agent name: NormDatabase.to_json()}; empty for a baseline run.
  snapshots: dict[int, dict[str, Any]]
  usage: dict[str, Any] | None
  # gates.json: what each similarity gate skipped (None: a run made before
  # gates were counted).
  gates: dict[str, Any] | None = None

  @property
  def arm(self) -> str:
    return str(self.run.get("arm", "unknown"))

  @property
  def seed(self) -> int | None:
    seed = self.run.get("seed")
    return None if seed is None else int(seed)

  @property
  def name(self) -> str:
    seed = self.seed
    return f"{self.arm} seed {seed}" if seed is not None else self.path.name

  @property
  def agents(self) -> list[str]:
    listed = [a["name"] for a in self.scenario.get("agents", []) if "name" in a]
    if listed:
      return listed
    # A scenario without agents would be refused by the loader; be lenient
    # anyway and take every actor and snapshot owner seen.
    seen = {r.get("actor") for r in self.records
            if r.get("kind") == ACTION}
    for snapshot in self.snapshots.values():
      seen.update(snapshot)
    return sorted(n for n in seen if n)

  @property
  def roles(self) -> dict[str, str]:
    return {a["name"]: a.get("role", "ordinary")
            for a in self.scenario.get("agents", []) if "name" in a}

  @property
  def behaviours(self) -> dict[str, str]:
    return behaviour_texts(self.scenario)

  @property
  def targets(self) -> list[TargetNorm]:
    return target_norms(self.scenario)

  @property
  def clock(self) -> Clock:
    return scenario_clock(self.scenario)

  def of_kind(self, *kinds: str) -> list[Record]:
    return [r for r in self.records if r.get("kind") in kinds]

  @property
  def has_norms(self) -> bool:
    return bool(self.snapshots)


def read_json_file(path: Path, fix: str) -> Any:
  """The JSON in `path`; a UserError saying `fix` when it is missing or
  damaged."""
  try:
    return json.loads(path.read_text(encoding="utf-8"))
  except FileNotFoundError:
    raise UserError(f"{path} is missing; {fix}") from None
  except (json.JSONDecodeError, UnicodeDecodeError) as e:
    raise UserError(f"{path} is not valid JSON ({e}); {fix}") from None


def read_records(path: Path) -> list[Record]:
  """events.jsonl; a torn last line (a run killed mid-write) is skipped."""
  records: list[Record] = []
  try:
    lines = path.read_text(encoding="utf-8").splitlines()
  except FileNotFoundError:
    raise UserError(f"{path} is missing: the run wrote no events; run it "
                    "again or resume it with `crsec resume`") from None
  for number, line in enumerate(lines, 1):
    if not line.strip():
      continue
    try:
      record = json.loads(line)
    except json.JSONDecodeError as e:
      if number == len(lines):
        _LOG.warning("%s: skipping the torn last line %d", path, number)
        continue
      raise UserError(f"{path} line {number} is not JSON ({e.msg}); the file "
                      "is damaged: run the episode again") from None
    if not isinstance(record, dict) or "kind" not in record:
      raise UserError(f"{path} line {number} is not a record (no 'kind'); "
                      "events.jsonl must follow docs/design.md")
    # Records written before the first step (CreateNorm at set-up carries
    # step 0 and no time) count in step 1, the first step there is.
    try:
      step = int(record.get("step") or 0)
    except (TypeError, ValueError):
      step = 0
    if step < 1:
      record["setup_step"] = record.get("step")
      step = 1
    record["step"] = step
    records.append(record)
  return records


def is_run_dir(path: Path) -> bool:
  return (Path(path) / RUN_JSON).is_file()


def is_compare_dir(path: Path) -> bool:
  return (Path(path) / COMPARE_JSON).is_file()


def is_sweep_dir(path: Path) -> bool:
  return (Path(path) / SWEEP_JSON).is_file()


def read_run(path: str | Path, *, need_targets: bool = True) -> Run:
  """Loads RUN_DIR; raises UserError when it is not a run directory, or
  (`need_targets`: for the metrics, which measure them) when its scenario
  names no target norms."""
  path = Path(path)
  if not path.is_dir():
    raise UserError(f"{path} is not a directory; pass a run directory "
                    "written by `crsec run` or `crsec compare`")
  if not is_run_dir(path):
    hint = (" (it is a compare directory: use `crsec report` on it)"
            if is_compare_dir(path) else "")
    raise UserError(f"{path} is not a run directory (no {RUN_JSON}){hint}; "
                    "pass a directory written by `crsec run`")
  fix = "the run directory is incomplete: run the episode again"
  run = read_json_file(path / RUN_JSON, fix)
  scenario = read_json_file(path / SCENARIO_JSON, fix)
  if not isinstance(scenario, dict) or (
      need_targets and not scenario.get("target_norms")):
    raise UserError(f"{path / SCENARIO_JSON} names no target_norms; the "
                    "metrics measure those: add them to the scenario and run "
                    "again")
  records = read_records(path / EVENTS)
  snapshots: dict[int, dict[str, Any]] = {}
  norms_dir = path / NORMS
  if norms_dir.is_dir():
    for file in sorted(norms_dir.iterdir()):
      step = snapshot_step(file.name)
      if step is not None:
        snapshots[step] = read_json_file(file, fix)
  usage = None
  if (path / USAGE_JSON).is_file():
    usage = read_json_file(path / USAGE_JSON, fix)
  gates = (read_json_file(path / GATES_JSON, fix)
           if (path / GATES_JSON).is_file() else None)
  return Run(path=path, run=run, scenario=scenario, records=records,
             snapshots=snapshots, usage=usage, gates=gates)


@dataclasses.dataclass
class Compare:
  """A compare directory: its manifest and the run directories per arm."""
  path: Path
  manifest: dict[str, Any]
  runs: dict[str, list[Path]]


def read_compare(path: str | Path) -> Compare:
  path = Path(path)
  if not is_compare_dir(path):
    raise UserError(f"{path} is not a compare directory (no "
                    f"{COMPARE_JSON}); pass a directory written by "
                    "`crsec compare`")
  manifest = read_json_file(path / COMPARE_JSON,
                        "run `crsec compare` again to rewrite it")
  runs: dict[str, list[Path]] = {}
  for arm, dirs in (manifest.get("arms") or {}).items():
    runs[arm] = [d if d.is_absolute() else path / d
                 for d in (Path(x) for x in dirs)]
    runs[arm] = [d for d in runs[arm] if is_run_dir(d)]
  if not any(runs.values()):
    raise UserError(f"{path / COMPARE_JSON} lists no finished run "
                    "directory; run `crsec compare` again")
  return Compare(path=path, manifest=manifest, runs=runs)


@dataclasses.dataclass(frozen=True)
class SweepRun:
  """A run of a sweep as its sweep.json lists it (crsec_concordia/sweeps/
  grid.py writes it; only the fields a reader needs)."""
  id: str
  path: Path
  scenario: str
  condition: str
  endpoint: str
  arm: str
  seed: int | None
  status: str | None


def read_sweep(path: str | Path) -> list[SweepRun]:
  """The runs a sweep directory lists whose run directory exists."""
  path = Path(path)
  manifest = read_json_file(path / SWEEP_JSON,
                        "run `crsec sweep` again to rewrite it")
  out = []
  for r in (manifest.get("runs") or []) if isinstance(manifest, dict) else []:
    run_dir = path / str(r.get("run_dir") or "")
    if not r.get("run_dir") or not is_run_dir(run_dir):
      continue
    seed = r.get("seed")
    out.append(SweepRun(
        id=str(r.get("id") or run_dir.name), path=run_dir,
        scenario=str(r.get("scenario") or ""),
        condition=str(r.get("condition") or ""),
        endpoint=str(r.get("endpoint") or ""), arm=str(r.get("arm") or ""),
        seed=None if seed is None else int(seed), status=r.get("status")))
  return out


def norm_index(run: Run) -> dict[tuple[str, str], dict[str, Any]]:
  """(agent, norm id) -> the latest known entry (content, origin, ...).

  Plans name norms by id only; snapshots and records give their content.
  """
  index: dict[tuple[str, str], dict[str, Any]] = {}
  for record in run.records:
    kind = record.get("kind")
    agent = record.get("agent")
    if kind in (CREATED, CANDIDATE,
                VERDICT) and record.get("norm_id"):
      index.setdefault((agent, record["norm_id"]), {}).update(
          {k: v for k, v in record.items() if k in ("content", "type",
                                                    "utility", "origin",
                                                    "source_agent")})
    elif kind == SYNTHESIS and record.get("abstract_id"):
      index.setdefault((agent, record["abstract_id"]), {}).update(
          {"content": record.get("content"), "type": record.get("type"),
           "origin": "synthesis"})
  for step in sorted(run.snapshots):
    for agent, db in run.snapshots[step].items():
      for norm in (db or {}).get("norms", []):
        index[(agent, norm["id"])] = norm
  return index


def qualified(db: Mapping[str, Any] | None) -> list[dict[str, Any]]:
  """The qualified entries of a NormDatabase.to_json() dict."""
  out = []
  for norm in (db or {}).get("norms", []):
    status = norm.get("status")
    if status == "qualified" or (status is None and norm.get("activated")
                                 and norm.get("valid")):
      out.append(norm)
  return out


def snapshot_at(snapshots: Mapping[int, Any], step: int) -> Any:
  """The latest snapshot taken at or before `step`, or None."""
  best = None
  for s in sorted(snapshots):
    if s <= step:
      best = s
    else:
      break
  return None if best is None else snapshots[best]


def per_agent_hour(by_tag: dict[str, dict[str, Any]], agents: int,
                   hours: float) -> dict[str, dict[str, float]]:
  """Calls and tokens per agent per simulated hour, by tag and in total.

  The figure the field compares across simulators: what one agent costs
  for an hour of its simulated life (cached replays count as calls made).
  """
  scale = 1.0 / (max(agents, 1) * hours) if hours > 0 else 0.0
  rows: dict[str, dict[str, float]] = {}
  for tag, counts in sorted(by_tag.items()):
    calls = int(counts.get("calls", 0)) + int(counts.get("cached_calls", 0))
    tokens = (int(counts.get("prompt_tokens", 0))
              + int(counts.get("completion_tokens", 0)))
    rows[tag] = {"calls": calls * scale, "tokens": tokens * scale}
  rows["total"] = {k: sum(r[k] for r in rows.values()) for k in
                   ("calls", "tokens")}
  return rows

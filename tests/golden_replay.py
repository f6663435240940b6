"""The golden replay: a recorded run of the embedded model, replayed exactly.

`tests/golden/mini_cafe/` holds the response cache of one real run of the
mini café (seed 1, its five slots, the embedded Qwen2.5-Coder-1.5B) and the
run directory and metrics that replaying that cache gives. Replaying it
calls no model: every prompt must be one the recording sent, so any change
to a prompt, a seed, the order of a record or a metric shows up as a
difference here. `scripts/record_golden.py` records it anew when a change
is meant to alter what the model is asked. A second recording,
`tests/golden/mini_cafe_batched/`, plays the same café with a place's slot
judged together (the referee's and DetectConflict's batched questions,
`--referee-batched --conflicts-batched`), which the default policy does not
choose for the embedded model, so that those prompts are guarded too.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from crsec_concordia.models.base import EndpointError
from crsec_concordia.models.cache import ResponseCache
from crsec_concordia.models.openai_compatible import OpenAICompatibleModel
from crsec_concordia.runner import run_episode

GOLDEN = Path(__file__).with_name("golden") / "mini_cafe"
CACHE = "responses.sqlite"
EXPECTED = "expected"
SCENARIO = "hobbs_cafe_mini"
SEED = 1
# What identifies the embedded model in cache keys, and how it is asked
# (crsec_concordia/models/config.py, `make_model` for the embedded model).
MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_SHA256 = ("cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046")
# The run directory's files compared, and run.json's fields that differ
# from one replay to the next (times, the machine, the checkout).
RUN_FILES = ("events.jsonl", "usage.json", "scenario.json", "config.json",
             "stated_belief.csv",
             "run.json")
VOLATILE_RUN_FIELDS = ("started", "finished", "wall_seconds", "versions",
                       "commit", "commit_dirty", "version", "scenario_path",
                       "resumed")
RECORD_HINT = ("if the change is meant to alter what the model is asked, "
               "record the golden run anew: .venv/bin/python "
               "scripts/record_golden.py (add --batched for "
               "mini_cafe_batched)")


@dataclasses.dataclass(frozen=True)
class Recording:
  """One golden recording: where it is kept and how its run is asked."""
  directory: Path
  # None: the run's own choice (`auto`); True/False: the run's flag.
  referee_batched: bool | None = None
  conflicts_batched: bool | None = None

  @property
  def name(self) -> str:
    return self.directory.name


PER_ACTION = Recording(GOLDEN)
BATCHED = Recording(GOLDEN.with_name("mini_cafe_batched"),
                    referee_batched=True, conflicts_batched=True)
RECORDINGS = (PER_ACTION, BATCHED)


class UncachedCall(Exception):
  """The replay asked the model something the recording never asked."""


class ReplayModel(OpenAICompatibleModel):
  """The embedded model's cache keys, answered from the cache alone.

  A call the cache cannot answer would start the model; here it is refused
  (a failed call of its operation), so the replay's usage names the
  operation whose prompt changed.
  """

  def __init__(self, cache: ResponseCache, *, seed: int,
               model_name: str = MODEL_NAME, scope: str | None = None):
    super().__init__(
        "golden replay (no server)", "none", model_name, seed=seed,
        cache=cache, schema_mode="grammar", one_line_json=True,
        confine_scripts=True, cache_scope=scope or f"embedded:{MODEL_SHA256}",
        connect=self._refuse, max_retries=0)

  def _refuse(self) -> str:
    raise EndpointError("golden replay: a call the recording never made")


def replay(out_dir: Path, model: Any, recording: Recording = PER_ACTION,
           *, progress: bool = False) -> Path:
  """Plays the golden scenario as `recording` asks, with `model`, into
  `out_dir`."""
  return run_episode(SCENARIO, arm="normative", seed=SEED, out_dir=out_dir,
                     model=model, progress=progress,
                     referee_batched=recording.referee_batched,
                     conflicts_batched=recording.conflicts_batched)


def report(run_dir: Path, report_dir: Path) -> None:
  """The run's metrics, as `crsec report` writes them (RUN_DIR/metrics/)."""
  done = subprocess.run(
      [sys.executable, "-m", "crsec_concordia.cli", "report", str(run_dir),
       "--out", str(report_dir)],
      capture_output=True, text=True, check=False)
  if done.returncode != 0:
    raise AssertionError(f"crsec report failed:\n{done.stderr[-3000:]}")


def normalised(run_dir: Path) -> dict[str, str]:
  """The compared files of a run directory, as text, volatile fields out."""
  files: dict[str, str] = {}
  for name in RUN_FILES:
    text = (run_dir / name).read_text(encoding="utf-8")
    if name == "run.json":
      info = json.loads(text)
      for field in VOLATILE_RUN_FIELDS:
        info.pop(field, None)
      text = json.dumps(info, indent=2, sort_keys=True)
    files[name] = text
  for path in sorted((run_dir / "norms").glob("*.json")):
    files[f"norms/{path.name}"] = path.read_text(encoding="utf-8")
  metrics = run_dir / "metrics"
  for path in sorted(metrics.glob("*")) if metrics.is_dir() else ():
    if path.suffix in (".csv", ".json"):
      files[f"metrics/{path.name}"] = path.read_text(encoding="utf-8")
  # Where the replay was played is no part of what it gave.
  return {name: text.replace(str(run_dir), "RUN_DIR")
          for name, text in files.items()}


def write_expected(files: dict[str, str], into: Path) -> None:
  shutil.rmtree(into, ignore_errors=True)
  for name, text in files.items():
    path = into / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# A float in the metrics: its last digits follow the numeric libraries'
# builds (BLAS kernels, the embedder's matrix products), not the run.
_NUMBER = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")
METRIC_REL_TOL = 1e-9


def same_metrics(expected: str, replayed: str) -> bool:
  """Whether two metrics files agree: the same text around their floats,
  and each float equal to a relative 1e-9.

  The run's records are compared byte for byte; the metrics are computed
  from them by numpy, scipy and the embedder, whose last binary digits
  differ between library builds and machines, so a byte comparison of
  them would fail on a fresh install that changed nothing of the run.
  """
  if _NUMBER.split(expected) != _NUMBER.split(replayed):
    return False
  return all(math.isclose(float(a), float(b), rel_tol=METRIC_REL_TOL,
                          abs_tol=1e-12)
             for a, b in zip(_NUMBER.findall(expected),
                             _NUMBER.findall(replayed)))


def read_expected(into: Path) -> dict[str, str]:
  return {str(p.relative_to(into)): p.read_text(encoding="utf-8")
          for p in sorted(into.rglob("*")) if p.is_file()}

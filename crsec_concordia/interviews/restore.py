"""The agents of a run as they were after a slot, restored to be asked.

A run directory holds checkpoints of its latest slots (rundir/); each is
loaded into a fresh simulation built from the run's own config.json and
scenario.json, as `crsec resume` builds one, and nothing of it is ever
written back: the interview reads the restored agents and the simulation
is dropped. What an agent answers from is read off its components
(its instructions and persona, its memory bank, its NormMemory), never by
calling its `act`, whose components would remember being asked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crsec_concordia.calibration import run_policy
from crsec_concordia.errors import UserError
from crsec_concordia.game_masters.interventions import absent_and_closed
from crsec_concordia.interviews.agent_view import Interviewee, agents_of
from crsec_concordia.rundir import writing as rundir
from crsec_concordia.rundir.format import CHECKPOINT_FILES, checkpoint_step
from crsec_concordia.runs import config as config_lib
from crsec_concordia.runs import episode
from crsec_concordia.scenarios import Scenario

__all__ = ["Interviewee", "absent_after", "agents_of", "checkpoint_for",
           "checkpoints", "restore"]


def checkpoints(run_dir: Path) -> list[int]:
  """The slots a run directory has a checkpoint of, in order."""
  folder = run_dir / rundir.CHECKPOINTS
  found = [checkpoint_step(p.name) for p in folder.glob(CHECKPOINT_FILES)]
  return sorted(s for s in found if s is not None)


def checkpoint_for(run_dir: Path, at: int | None) -> tuple[int, Path]:
  """(slot, checkpoint file) to interview at: `at`, or the latest."""
  if not run_dir.is_dir() or not (run_dir / rundir.RUN_JSON).is_file():
    raise UserError(f"{run_dir} is not a run directory (no {rundir.RUN_JSON});"
                    " give the directory `crsec run` printed")
  have = checkpoints(run_dir)
  if not have:
    raise UserError(f"{run_dir} has no checkpoint to restore agents from; "
                    "interview a run that completed at least one slot")
  step = have[-1] if at is None else at
  if step not in have:
    raise UserError(f"{run_dir} has no checkpoint at slot {step}; use --at "
                    f"with one of {', '.join(map(str, have))} (a run keeps "
                    "its latest two; schedule interviews in the scenario "
                    "for earlier slots)")
  return step, rundir.checkpoint_path(run_dir, step)


def _read(path: Path) -> Any:
  try:
    return rundir.read_json(path)
  except FileNotFoundError:
    raise UserError(f"{path.parent} is incomplete ({path.name} is missing); "
                    "interview a complete run directory") from None
  except json.JSONDecodeError as e:
    raise UserError(f"{path} is damaged ({e}); interview another run or "
                    "checkpoint") from None


def restore(run_dir: Path, checkpoint: Path, model, embedder
            ) -> tuple[Scenario, Any]:
  """The run's scenario, and a fresh simulation holding its checkpoint."""
  info = _read(run_dir / rundir.RUN_JSON)
  scenario = Scenario.from_dict(_read(run_dir / rundir.SCENARIO_JSON),
                                source=str(run_dir / rundir.SCENARIO_JSON))
  config = config_lib.build_config(
      scenario, str(info["arm"]), int(info["seed"]),
      run_policy.of_config(_read(run_dir / rundir.CONFIG_JSON)))
  simulation = episode.simulation(config, model, embedder)
  simulation.load_from_checkpoint(_read(checkpoint))
  return scenario, simulation


def absent_after(run_dir: Path, scenario: Scenario, step: int) -> frozenset[str]:
  """The agents taking no part after slot `step` (not arrived yet, or gone,
  as the run's game master replays its `arrive` and `leave`): nobody
  there to interview."""
  seed = int(_read(run_dir / rundir.RUN_JSON)["seed"])
  absent, _ = absent_and_closed(scenario, seed, step)
  return absent

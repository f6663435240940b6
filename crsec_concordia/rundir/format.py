"""The run directory's names: files, record kinds, snapshots, checkpoints.

Defined once for the writers (crsec_concordia/runs/, and the game master
and components that make the records) and the readers (reading.py, the
metrics, the sweeps): a file or a kind named here is named so on both sides.
docs/design.md, "Run directory", gives each file's and each record's fields.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

# -- a run directory -----------------------------------------------------------

RUN_JSON = "run.json"
SCENARIO_JSON = "scenario.json"
CONFIG_JSON = "config.json"
EVENTS = "events.jsonl"
USAGE_JSON = "usage.json"
# What each similarity gate skipped, cumulative, by gate: the game master's
# and each agent's (crsec_concordia/gate_tally.py), rewritten each slot.
GATES_JSON = "gates.json"
LOG_HTML = "log.html"
# Concordia's `SimulationLog.to_json`: the file `concordia-log overview|actions
# |context|... RUN_DIR/log.json` reads.
LOG_JSON = "log.json"
RUN_LOG = "run.log"
CHECKPOINTS = "checkpoints"
NORMS = "norms"
# Written by `crsec report` (crsec_concordia/metrics/present/tables.py).
METRICS = "metrics"
REPORT = "report"
# In RUN_DIR/metrics: the run's summary and its values per slot.
SUMMARY_JSON = "summary.json"
PER_STEP_CSV = "per_step.csv"
# Written by `crsec interview` (crsec_concordia/interviews/): one CSV of
# answers per questionnaire.
INTERVIEW_ANSWERS = "interviews"
# Written by `crsec run` itself (crsec_concordia/interviews/stated.py): the
# rules each agent states before the first slot and after the last, one row
# per stated rule (crsec_concordia/interviews/stated_table.py).
STATED_BELIEF_CSV = "stated_belief.csv"

# -- a run's arm ---------------------------------------------------------------

# The agents a run is made of: CRSEC's normative entity or the baseline
# without it (the prefabs normative__Entity and baseline__Entity).
Arm = Literal["normative", "baseline"]
ARMS: tuple[str, ...] = get_args(Arm)

# -- directories of runs -------------------------------------------------------

# `crsec compare`: {scenario, seeds, arms: {arm: [run dirs]}, failed, ...}.
COMPARE_JSON = "compare.json"
# `crsec sweep`: the grid and each run's status (sweeps/grid.py writes it).
SWEEP_JSON = "sweep.json"
SWEEP_RUNS = "runs"

# -- record kinds of events.jsonl ----------------------------------------------

ACTION = "action"
CONVERSATION = "conversation"
# A talk request the game master dropped before scheduling it (the two
# agents were not in the same place: game_masters/conversations.py).
TALK_DROPPED = "talk_dropped"
CREATED = "created"
# A norm given to an agent from outside the run's agents (an intervention),
# and a notice it was told (components/port.py: receive_norm,
# receive_notice).
TAUGHT = "taught"
NOTICE = "notice"
CONFLICT = "conflict"
# A change the game master made to the running society as a slot opened
# (game_masters/interventions.py): announce, arrive, leave, teach, close,
# open, with its fields.
INTERVENTION = "intervention"
TALK_DECISION = "talk_decision"
THOUGHT = "thought"
CANDIDATE = "candidate"
VERDICT = "verdict"
SYNTHESIS = "synthesis"
PLAN = "plan"
TASKS = "tasks"
FAILURE = "failure"
STEP = "step"
# An agent's own records, in the order things happen within one slot: the
# order a slot's records are written in (runs/session.py).
AGENT_KINDS = (CREATED, TAUGHT, NOTICE, CONFLICT, TALK_DECISION, THOUGHT,
               CANDIDATE, VERDICT, SYNTHESIS, PLAN, TASKS, FAILURE)
# Every kind: the game master's, the agents', and the slot's own `step`.
KINDS = (ACTION, CONVERSATION, TALK_DROPPED, INTERVENTION, *AGENT_KINDS,
         STEP)

# -- per-slot files ------------------------------------------------------------

# norms/step_0007.json: {agent name: NormDatabase.to_json()} after slot 7.
NORM_SNAPSHOT = re.compile(r"^step_(\d+)\.json$")
NORM_SNAPSHOTS = "step_*.json"
# checkpoints/step_7_checkpoint.json: Concordia's checkpoint after slot 7.
CHECKPOINT_FILES = "step_*_checkpoint.json"
# checkpoints/log.jsonl: Concordia's raw log, one entry a slot as each slot
# ends (a checkpoint holds none of it: the log grows by every agent's logs
# each slot, and kept in memory and in every checkpoint it made memory per
# agent grow with the run's length).
CHECKPOINT_LOG = "log.jsonl"

# -- a run's files by how they are written -------------------------------------

# The files a run appends to, by path in the run directory: resume cuts
# each back to the end of the last slot run.json committed (recovery.py).
APPENDED = (EVENTS, f"{CHECKPOINTS}/{CHECKPOINT_LOG}", RUN_LOG)
# The lock a run's one writer holds (`crsec run` or `crsec resume`: lock.py).
RUN_LOCK = ".lock"


def temporary(name: str) -> str:
  """The name a file is written under before it replaces NAME whole."""
  return f".{name}.tmp"


def norm_snapshot(step: int) -> str:
  """The file name of the norm snapshot taken after `step`."""
  return f"step_{step:04d}.json"


def checkpoint(step: int) -> str:
  """The file name of the checkpoint written after `step`."""
  return f"step_{step}_checkpoint.json"


def snapshot_step(name: str) -> int | None:
  """The step of a norm snapshot's file name; None for any other file."""
  match = NORM_SNAPSHOT.match(name)
  return int(match.group(1)) if match else None


def checkpoint_step(name: str) -> int | None:
  """The step of a checkpoint's file name; None for any other file."""
  head, _, rest = name.partition("_")
  number, _, tail = rest.partition("_")
  if head != "step" or tail != "checkpoint.json" or not number.isdigit():
    return None
  return int(number)

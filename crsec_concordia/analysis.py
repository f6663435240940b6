"""`load_run`: a run, compare or sweep directory as pandas DataFrames.

For analysis in a notebook or a script, without reading any file format:

  data = crsec_concordia.load_run("runs/compare-hobbs_cafe_mini")
  data.runs                  # one row per run
  data.events["action"]      # every action record of every run
  data.metrics               # one value per row: run, ..., metric, value
  data.adoption              # per step, place or group and target (towns)

Every frame starts with the same columns naming the run (`run`,
`scenario`, `condition`, `endpoint`, `arm`, `seed`), so the frames of a
compare or a sweep stack, and frames of several directories concatenate.
The metrics are computed as `crsec report` computes them. The matcher
embeds norms with the embedder each run used (run.json names it and it
is imported again; the default, MiniLM, needs the `embeddings` extra),
and `embedder=fn` (any function from text to vector) reads with yours
instead; the matcher's recorded error then applies only if it was
measured with that embedder (docs/calibration.md, "Your own sentence
embedder"). With `metrics=False` only the files are read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from crsec_concordia.embedding import user as user_embedder
from crsec_concordia.embedding import SentenceEmbedder
from crsec_concordia.errors import MissingExtra, UserError
from crsec_concordia.interviews.table import (INTERVIEW_COLUMNS,
                                              read_interviews)
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.interviews.stated_table import STATED_COLUMNS
from crsec_concordia.metrics.measure import (places, run_metrics, say_hold_do,
                                             stated_shares)
from crsec_concordia.metrics.present import stated_report, tables
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.format import COMPARE_JSON, RUN_JSON, SWEEP_JSON

# The columns that name a run, first in every frame.
IDENTITY = ["run", "scenario", "condition", "endpoint", "arm", "seed"]
METRIC_COLUMNS = [*IDENTITY, "step", "time", "target", "metric", "value"]
RUNS = [*IDENTITY, "status", "completed_steps", "max_steps", "agents",
        "has_norms", "model", "wall_seconds", "path"]
ADOPTION = [*IDENTITY, *places.ADOPTION_COLUMNS]
INTERVIEWS = [*IDENTITY, "questionnaire", *INTERVIEW_COLUMNS]
SAY_HOLD_DO = [*IDENTITY, *say_hold_do.COLUMNS]
STATED = [*IDENTITY, *STATED_COLUMNS, "targets"]
STATED_SHARES = [*IDENTITY, *stated_report.STATED_COLUMNS_OUT]


@dataclasses.dataclass(frozen=True)
class RunData:
  """The tables of a run, compare or sweep directory.

  runs     one row per run: its identity, status, steps completed of the
           steps to play, number of agents, whether it kept norm databases
           (the normative arm), the model, wall time and its directory
  events   per record kind of events.jsonl ("action", "conversation",
           "conflict", ...; docs/design.md, "Run directory"): one row per
           record, its fields as columns, nested fields flattened into
           dotted columns ("occasion_check.accepted"), lists kept as lists
  metrics  long: one value per row (docs/metrics.md names every metric;
           `target` is "" for run-wide ones such as conflicts); empty when
           loaded with `metrics=False`
  adoption per step, place (`by` "place") or group (`by` "group") and
           target: the agents there (`where`), the share holding the
           target (`belief`) and complying with it (`behaviour`); rows
           only for runs of several places or of groups (docs/metrics.md,
           "Places and groups"); empty with `metrics=False`
  interviews one row per answer of `crsec interview` (RUN_DIR/interviews/),
           the norms the agent held beside it (and, in a run of several
           models, the `model` that answered); empty without interviews
  say_hold_do one row per agent and target: what it states at the end
           (`say`), holds (`hold`) and does (`do`), each reader's error,
           `entrepreneur` (docs/metrics.md, "Say, hold, do"); SAY is "not
           asked" in a run without stated_belief.csv; empty with
           `metrics=False`
  stated   one row per rule each agent stated at the start and the end
           (RUN_DIR/stated_belief.csv), with the `targets` it means (None
           with `metrics=False`); empty for runs that asked nobody
  stated_shares per run, target, phase and arm: the stated-belief share
           (raw and corrected, 95% interval), each arm's change and the
           start held mark (docs/metrics.md, "Stated belief"); no rows for
           a run that asked nobody (not asked, not zero)

  `run` names a run uniquely within what was loaded: "normative seed 3"
  in a run or compare directory, the sweep's run id in a sweep;
  `condition` and `endpoint` are a sweep's ("" elsewhere).
  """
  runs: pd.DataFrame
  events: Mapping[str, pd.DataFrame]
  metrics: pd.DataFrame
  adoption: pd.DataFrame = dataclasses.field(
      default_factory=lambda: pd.DataFrame(columns=ADOPTION))
  interviews: pd.DataFrame = dataclasses.field(
      default_factory=lambda: pd.DataFrame(columns=INTERVIEWS))
  say_hold_do: pd.DataFrame = dataclasses.field(
      default_factory=lambda: pd.DataFrame(columns=SAY_HOLD_DO))
  stated: pd.DataFrame = dataclasses.field(
      default_factory=lambda: pd.DataFrame(columns=STATED))
  stated_shares: pd.DataFrame = dataclasses.field(
      default_factory=lambda: pd.DataFrame(columns=STATED_SHARES))


@dataclasses.dataclass(frozen=True)
class _Located:
  """A run directory and the names it has in what was loaded (`key` None:
  the run's own name, "normative seed 3")."""
  path: Path
  key: str | None = None
  condition: str = ""
  endpoint: str = ""


def _locate(path: Path) -> list[_Located]:
  if reading.is_sweep_dir(path):
    found = [_Located(r.path, r.id, r.condition, r.endpoint)
             for r in reading.read_sweep(path)]
    if not found:
      raise UserError(f"{path / SWEEP_JSON} lists no run directory yet; "
                      "run `crsec sweep` first")
    return found
  if reading.is_compare_dir(path):
    compare = reading.read_compare(path)
    return [_Located(d) for dirs in compare.runs.values() for d in dirs]
  if reading.is_run_dir(path):
    return [_Located(path)]
  raise UserError(f"{path} is not a run, compare or sweep directory (no "
                  f"{RUN_JSON}, {COMPARE_JSON} or {SWEEP_JSON}); pass a "
                  "directory written by `crsec run`, `crsec compare` or "
                  "`crsec sweep`")


def _identity(run: reading.Run, at: _Located) -> dict[str, Any]:
  return {"run": at.key or run.name, "scenario": run.scenario.get("name"),
          "condition": at.condition, "endpoint": at.endpoint,
          "arm": run.arm, "seed": run.seed}


def _run_row(run: reading.Run, at: _Located) -> dict[str, Any]:
  info = run.run
  model = info.get("model") or {}
  return {**_identity(run, at), "status": info.get("status"),
          "completed_steps": info.get("completed_steps"),
          "max_steps": info.get("max_steps"), "agents": len(run.agents),
          "has_norms": run.has_norms,
          "model": model.get("model") or model.get("endpoint"),
          "wall_seconds": info.get("wall_seconds"), "path": str(run.path)}


def _with_identity(frame: pd.DataFrame, identity: dict[str, Any]
                   ) -> pd.DataFrame:
  rest = frame.drop(columns=[c for c in IDENTITY if c in frame])
  return pd.concat([pd.DataFrame({k: [v] * len(rest)
                                  for k, v in identity.items()},
                                 index=rest.index), rest], axis=1)


def _events(run: reading.Run, identity: dict[str, Any]
            ) -> dict[str, pd.DataFrame]:
  by_kind: dict[str, list[dict[str, Any]]] = {}
  for record in run.records:
    by_kind.setdefault(str(record["kind"]), []).append(record)
  return {kind: _with_identity(tables.events_frame(records), identity)
          for kind, records in by_kind.items()}


def _metrics(run: reading.Run, identity: dict[str, Any],
             embedder: SentenceEmbedder | None) -> list[pd.DataFrame]:
  """[the long metrics, adoption per place and group, stated rules, stated
  shares, say-hold-do] of a run."""
  embedder = user_embedder.used_by_run(run.run, embedder, fix="pass embedder=")
  try:
    matcher = NormMatcher(run.targets, behaviours=run.behaviours,
                          embedder=embedder)
    computed = run_metrics.compute(run, matcher)
    stated = stated_shares.rule_rows(run, matcher)
  except MissingExtra as e:  # The run used the default embedder.
    raise UserError(f"{run.path} was run with the default embedder: {e}, or "
                    "pass embedder= (your text -> vector function), or "
                    "metrics=False for the files alone") from None
  long = tables.long_form(computed)
  shares = stated_report.stated_table_rows(
      computed.summary.get("stated_belief") or {})
  return [_with_identity(long, identity)[METRIC_COLUMNS],
          _with_identity(computed.places, identity)[ADOPTION],
          _with_identity(stated, identity)[STATED],
          _with_identity(shares, identity)[STATED_SHARES],
          _with_identity(computed.say_hold_do, identity)[SAY_HOLD_DO]]


def _stack(frames: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
  frames = [f for f in frames if not f.empty]
  if not frames:
    return pd.DataFrame(columns=columns)
  return pd.concat(frames, ignore_index=True)


def load_run(path: str | Path, *, metrics: bool = True,
             embedder: SentenceEmbedder | None = None) -> RunData:
  """The runs, events and long-form metrics of a run, compare or sweep
  directory (`crsec run`, `crsec compare`, `crsec sweep`).

  `embedder`: the text -> vector function the norm matcher embeds with
  (default: the one each run used, which its run.json names and which is
  imported again; a run on the default, MiniLM, needs the `embeddings`
  extra). With `metrics=False` nothing is embedded: runs, events and
  interviews only. Raises `UserError` (one line naming the fix) when
  `path` is none of the three, or a run's embedder cannot be imported.
  """
  path = Path(path)
  rows, events, asked = [], {}, []
  long, adoption, stated, shares, shd = [], [], [], [], []
  for at in _locate(path):
    run = reading.read_run(at.path)
    identity = _identity(run, at)
    rows.append(_run_row(run, at))
    asked.append(_with_identity(read_interviews(at.path), identity))
    for kind, frame in _events(run, identity).items():
      events.setdefault(kind, []).append(frame)
    if metrics:
      for into, frame in zip((long, adoption, stated, shares, shd),
                             _metrics(run, identity, embedder)):
        into.append(frame)
    else:
      stated.append(_with_identity(stated_shares.rule_rows(run, None),
                                   identity)[STATED])
  return RunData(
      runs=pd.DataFrame(rows, columns=RUNS),
      events={kind: _stack(frames, IDENTITY)
              for kind, frames in sorted(events.items())},
      metrics=_stack(long, METRIC_COLUMNS), adoption=_stack(adoption, ADOPTION),
      interviews=_stack(asked, INTERVIEWS), stated=_stack(stated, STATED),
      stated_shares=_stack(shares, STATED_SHARES),
      say_hold_do=_stack(shd, SAY_HOLD_DO))

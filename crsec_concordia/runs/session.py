"""Session: plays slots and keeps the run directory current.

After every slot it appends the slot's records to events.jsonl (the game
master's, then each agent's, agents in name order) and its warnings to
run.log (runs/run_log.py), snapshots the norm databases, updates
usage.json and run.json, and writes a checkpoint: a crash or Ctrl-C
loses at most the slot in flight (rundir/recovery.py cuts every file back
to the last slot run.json committed). So does a slot in which the run's
embedder returned a bad batch of vectors (embedding/value.py): the run
stops there, `interrupted: lost dependency`, and never completes with a
hole.

What a slot leaves is taken when the slot ends (the checkpoint's states,
the records, the norm snapshots, usage and run.json's fields), but written
by one background thread, in the same order, while the next slot's agents
observe and act: the writing (JSON encoding, fsyncs) grows with the
society, and done between slots it is time with no model call in flight
(docs/trials/runs-and-sweeps.md). The next slot's resolution waits until
it is on disk (the engine's `before_resolve`), and so does the end of the
run, Ctrl-C included. run.json stays the commit point: a kill before it is
written, or a write of the slot that fails, loses that slot, and resume
plays it again.

The session meets the agents only through their ports (components/port.py):
their records, norm snapshots, initial norms and shared DetectConflict
questions. An agent's components run their hooks in parallel threads, so
the order in which one agent's records reach its journal can differ between
runs; the port hands them over in a fixed order (slot, kind, then content
for failures: `record_order`), so the same seed gives the same file
whatever thread finished first.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from concordia.prefabs.simulation import generic as simulation_lib

from crsec_concordia import endings, game_masters, gate_tally, threads
from crsec_concordia.components.port import (KIND_ORDER, port_of,
                                             record_order)
from crsec_concordia.embedding import thresholds as embedder_thresholds
from crsec_concordia.interviews.stated_table import END, START
from crsec_concordia.operations.detect_conflict_sharing import SharedJudgements
from crsec_concordia.rundir import writing as rundir
from crsec_concordia.rundir import recovery
from crsec_concordia.rundir.format import FAILURE, STEP
from crsec_concordia.runs import concordia_log, heap
from crsec_concordia.runs import outage as outage_lib
from crsec_concordia.runs.ordered_writer import OrderedWriter
from crsec_concordia.runs import progress as progress_lib
from crsec_concordia.runs import run_log, stated_run
from crsec_concordia.scenarios import Scenario
from crsec_concordia.scenarios.interview_block import scheduled_slots

_log = logging.getLogger(__name__)

__all__ = ["KIND_ORDER", "Session", "record_order"]


@dataclasses.dataclass
class Session:
  """Plays (part of) an episode and keeps the run directory current."""

  run_dir: Path
  scenario: Scenario
  simulation: simulation_lib.Simulation
  model: Any
  info: dict[str, Any]
  base_usage: dict[str, dict[str, int]]
  progress: bool
  # The models by role of a run with several (runs/model_roles.py).
  roles: Any = None
  # The run's Embedder value (embedding/value.py), whose `failure` stops
  # the run at the end of the slot it came in.
  embedder: Any = None
  # A new simulation as the run's config builds it: a slot thrown away for
  # an outage is played again in one, from the last checkpoint.
  rebuild: Callable[[], simulation_lib.Simulation] | None = None
  # Caps on the run's calls and tokens (runs/budget.py), if any.
  budget: Any = None
  outage_policy: outage_lib.OutagePolicy = dataclasses.field(
      default_factory=outage_lib.OutagePolicy)
  # Whether a DetectConflict question several agents hold is asked once
  # for all of them (off: each agent asks alone, as a bench compares).
  share_judgements: ClassVar[bool] = True

  def __post_init__(self):
    self._gm = self.simulation.get_game_masters()[0]
    self._clock = self._gm.get_component(game_masters.clock.CLOCK_KEY)
    self._started = time.monotonic()
    self._base_wall = float(self.info.get("wall_seconds") or 0.0)
    self._bar = None
    self._writer = OrderedWriter()
    self._guard = outage_lib.Guard(
        [self.model, *(self.roles.models.values() if self.roles else ())],
        self.outage_policy)
    self._run_log: run_log.RunLog | None = None
    # run.json as last written by a completed slot (the commit point).
    self._committed: dict[str, Any] = copy.deepcopy(self.info)
    if "version" not in self.info:
      # Which code made the run (a resume keeps the original's and adds its
      # own to `resumed`); run.json is rewritten when play starts.
      self.info.update(rundir.provenance())
    (self.run_dir / rundir.CHECKPOINTS).mkdir(exist_ok=True)
    (self.run_dir / rundir.NORMS).mkdir(exist_ok=True)

  def _ports(self) -> list[tuple[str, Any]]:
    """Every agent's port, by name."""
    return [(e.name, port_of(e)) for e in sorted(
        self.simulation.get_entities(), key=lambda e: e.name)]

  def _shared_judgements(self) -> SharedJudgements:
    """One SharedJudgements for every agent that detects conflicts: the
    slot engine opens its slots (operations/detect_conflict_sharing.py)."""
    holders = {name: port for name, port in self._ports()
               if port.detects_conflicts()}
    shared = SharedJudgements(holders)
    for port in holders.values():
      port.share_judgements(shared)
    return shared

  def drain(self) -> list[dict[str, Any]]:
    """The records since the last drain, in their fixed order."""
    records = game_masters.drain_records(self._gm)
    mixed = self.roles is not None and self.roles.mixed
    if mixed:
      self.roles.stamp(records, None)
    for name, port in self._ports():
      drained = port.drain_records()
      if mixed:
        self.roles.stamp(drained, name)
      records.extend(drained)
    return records

  def norm_snapshot(self) -> dict[str, Any]:
    """Every agent's norm database that has one, by name."""
    snapshot = {}
    for name, port in self._ports():
      database = port.norm_snapshot()
      if database is not None:
        snapshot[name] = database
    return snapshot

  def gate_counts(self) -> dict[str, Any]:
    """What every similarity gate skipped so far (gate_tally.py): the game
    master's, each agent's that skipped something, and their totals."""
    agents = {name: counts for name, port in self._ports()
              if (counts := port.gate_counts())}
    master = game_masters.gate_counts_of(self._gm)
    return {"game_master": master, "agents": agents,
            "totals": gate_tally.summed([master, *agents.values()])}

  def usage(self) -> dict[str, dict[str, int]]:
    if self.roles is not None and self.roles.mixed:
      return self.roles.usage()
    return rundir.add_usage(self.base_usage, self.model.usage.by_tag())

  def wall_seconds(self) -> float:
    return round(self._base_wall + time.monotonic() - self._started, 1)

  def _write(self, fn, *args) -> None:
    """Runs `fn(*args)` on the writer thread, after the writes before it
    (here and now outside `play`)."""
    self._writer.submit(fn, *args)

  def flush(self) -> None:
    """Waits until everything taken so far is on disk."""
    self._writer.flush()

  def _save_checkpoint(self, data: dict[str, Any]) -> None:
    """Simulation's state callback: the state after each completed slot
    (a slot that met an endpoint outage is thrown away here, before
    anything of it is written).

    The states in `data` are copies made for it. The raw log is the
    simulation's own list: its new entries (the slot's) are appended to
    checkpoints/log.jsonl and leave it, so neither memory nor a checkpoint
    holds every slot's logs of every agent (resume and the end of the run
    read the file).
    """
    self._guard.check()
    step = self._clock.completed_steps
    if "raw_log" in data:
      raw_log = data["raw_log"]
      # The engine numbers slots from 1 in every `play`, so after a resume
      # its log entry for slot 5 says "Step 1": log.html, log.json and
      # `concordia-log` would mix two slots under one number. The entry it
      # has just appended is given the episode's slot number (replaced,
      # not changed: earlier checkpoints' copies share the old one).
      last = raw_log[-1] if raw_log else None
      if isinstance(last, dict) and last.get("Step") not in (None, step):
        raw_log[-1] = {**last, "Step": step, "Summary": f"Slot {step}"}
      entries = list(raw_log)
      del raw_log[:]
      self._write(rundir.append_log, self.run_dir, entries)
      data = {**data, "raw_log": []}
    self._write(rundir.save_checkpoint, self.run_dir, step, data,
                scheduled_slots(self.scenario.interviews))

  def write_logs(self) -> None:
    """log.html and log.json (runs/concordia_log.py)."""
    concordia_log.write(self.run_dir, self.simulation, self.scenario.name,
                        self.info)

  def write_records(self, records: list[dict[str, Any]]) -> None:
    self._write(self._append_records, records)

  def _append_records(self, records: list[dict[str, Any]]) -> None:
    rundir.append_records(self.run_dir / rundir.EVENTS, records)

  def _write_run_log(self, when: str) -> None:
    """Appends the warnings collected since the last time to run.log,
    each line led by `when` (runs/run_log.py)."""
    lines = self._run_log.take(when) if self._run_log is not None else []
    if lines:
      self._write(rundir.append_lines, self.run_dir / rundir.RUN_LOG, lines)

  def _stop_if_embedder_failed(self) -> None:
    """Raises the embedder's bad batch, if one came: the slot it came in
    is not committed (its components recorded failures where vectors were
    missing), so the run stops resumable at the slot before."""
    failure = getattr(self.embedder, "failure", None)
    if failure is not None:
      raise endings.LostDependency(
          f"{failure}; {self.run_dir} stopped after slot "
          f"{self._committed.get('completed_steps', 0)}")

  def _on_step(self, step_data) -> None:
    """The engine's step callback: flush everything the slot produced."""
    self._stop_if_embedder_failed()
    step = self._clock.completed_steps
    stamp = self.scenario.stamp_for(step)
    usage = self.usage()
    totals = stated_run.simulation_totals(usage)
    records = self.drain()
    records.append({"kind": STEP, **game_masters.stamp_fields(stamp),
                    "actors": sorted(step_data.entity_actions), **totals})
    self.write_records(records)
    for r in records:
      if r.get("kind") == FAILURE:
        _log.warning("step %s: %s failed for %s: %s", r.get("step"),
                     r.get("op"), r.get("agent"), r.get("error"))
    self._write_run_log(f"slot {step}:")
    snapshot = self.norm_snapshot()
    if snapshot:
      self._write(
          rundir.write_json,
          self.run_dir / rundir.NORMS / rundir.norm_snapshot(step), snapshot)
    self._write(rundir.write_json, self.run_dir / rundir.USAGE_JSON,
                stated_run.usage_file(self, step, usage))
    self._write(rundir.write_json, self.run_dir / rundir.GATES_JSON,
                {"completed_steps": step, **self.gate_counts()})
    # run.json is written last: it is the slot's commit point, so it
    # carries the usage it commits to (resume starts from it; a kill between
    # usage.json and run.json left a usage.json one slot ahead).
    self.info.update(completed_steps=step, wall_seconds=self.wall_seconds(),
                     usage_by_tag=usage)
    self._write(self._commit, copy.deepcopy(self.info))
    if self._bar is not None:
      reused = totals["reused_prompt_tokens"]
      self._bar.set_postfix_str(
          f"{stamp.time} | {totals['calls']} calls, "
          f"{totals['prompt_tokens'] + totals['completion_tokens']} tokens"
          + (f" ({reused} prompt reused)" if reused else ""), refresh=False)
      self._bar.update(1)
    if self.budget is not None and step < self.scenario.total_steps:
      # The slot is committed: the run ends after it at its budget.
      self.budget.stop_if_reached(totals, self.run_dir)

  def _commit(self, info: dict[str, Any]) -> None:
    """On the writer thread: run.json, the slot's commit point (resume cuts
    the files it appends to back to it: rundir/recovery.py)."""
    rundir.write_json(self.run_dir / rundir.RUN_JSON, info)
    self._committed = info

  def create_initial_norms(self) -> None:
    """CreateNorm for every entrepreneur at once, before the first slot.

    The norms an entrepreneur starts with belong to the episode's setup:
    made inside slot 1 they put a CreateNorm call in front of the
    entrepreneurs' plans and acts while everyone else was already acting.
    Their records carry slot 1's time and are written with slot 1's.
    """
    stamp = self._clock.stamp_at(1)
    if self._bar is not None:
      self._bar.set_postfix_str("entrepreneurs' initial norms", refresh=True)
    threads.run_tasks({
        name: functools.partial(port.set_up, stamp)
        for name, port in self._ports()},
                      workers=threads.workers_for(self.model))
    if self._bar is not None:
      self._bar.set_postfix_str("", refresh=True)

  def _tell_unmeasured(self) -> None:
    """run.log says once that the run's embedder was measured by nobody
    (run.json's `similarity_thresholds`): its gates judge everything."""
    found = self.info.get("similarity_thresholds") or {}
    if found.get("measured", True):
      return
    _log.warning(embedder_thresholds.UNMEASURED_NOTE.format(
        name=found.get("embedder"),
        fingerprint=(self.info.get("embedder") or {}).get("fingerprint")))

  def play(self, *, premise: str) -> None:
    """Plays the remaining slots; records how the run ended (endings.py).

    A slot that met an endpoint outage is thrown away, the endpoint waited
    for, and the slot played again from the last checkpoint
    (runs/outage.py); a slot that reaches the budget ends the run after it.
    """
    (self.run_dir / rundir.RUN_LOG).touch()
    try:
      with run_log.collected() as self._run_log:
        try:
          if int(self.info["completed_steps"]) == 0:
            # Said once, in slot 1's lines, not at each resume.
            self._tell_unmeasured()
            stated_run.hold_phase(self, START)
          while True:
            try:
              self._play_once(premise)
              break
            except outage_lib.SlotAbandoned:
              self._guard.wait(int(self._committed["completed_steps"]) + 1)
              premise = self._restart(premise)
          stated_run.hold_phase(self, END)
        finally:
          # What was logged after the last slot (a crash's own lines): past
          # the commit, so a resume drops it with the lost slot.
          with contextlib.suppress(OSError):
            rundir.append_lines(
                self.run_dir / rundir.RUN_LOG, self._run_log.take(
                    f"after slot {self._committed['completed_steps']}:"))
          self._run_log = None
    except BaseException as e:
      # A run directory that could not be written (a full disk) lost what
      # the run depends on; resume goes on once it can be.
      ending = (endings.LOST_DEPENDENCY if self._writer.failed
                and not isinstance(e, KeyboardInterrupt)
                else endings.ending_of(e))
      # run.json goes back to the last slot committed (a slot whose files
      # failed to be written, were not all taken, or was thrown away for an
      # outage, is not), and resume plays the rest.
      self.info = copy.deepcopy(self._committed)
      self.info.update(status=ending.status, wall_seconds=self.wall_seconds())
      rundir.write_json(self.run_dir / rundir.RUN_JSON, self.info)
      if isinstance(e, endings.RunEnded):
        e.run_dir = self.run_dir  # For the line on how to go on.
      raise
    self.info.update(status=endings.COMPLETED, finished=rundir.now(),
                     wall_seconds=self.wall_seconds())
    rundir.write_json(self.run_dir / rundir.RUN_JSON, self.info)

  def _restart(self, premise: str) -> str:
    """The simulation again as the last committed slot left it (a new one
    before the first), its files cut back to that slot; the premise the
    next `_play_once` is given."""
    done = int(self._committed["completed_steps"])
    if self.rebuild is None:
      raise endings.EndpointUnreachable(
          "the endpoint came back, but this session cannot rebuild its "
          "simulation")
    self.info = copy.deepcopy(self._committed)
    simulation = self.rebuild()
    if done:
      simulation.load_from_checkpoint(rundir.read_json(
          rundir.checkpoint_path(self.run_dir, done)))
    self.simulation = simulation
    self._gm = simulation.get_game_masters()[0]
    self._clock = self._gm.get_component(game_masters.clock.CLOCK_KEY)
    self.drain()  # Records restored with the checkpoint were written.
    recovery.recover(self.run_dir, self._committed)
    return premise if done == 0 else ""

  def _before_resolve(self) -> None:
    """The engine's hook before a slot's resolution: a slot that met an
    outage goes no further; else the previous slot's files are waited
    for."""
    self._guard.check()
    self.flush()

  def _play_once(self, premise: str) -> None:
    """Plays the remaining slots, or raises SlotAbandoned for an outage."""
    total = self.scenario.total_steps
    done = int(self.info["completed_steps"])
    engine = getattr(self.simulation, "_engine", None)
    waits = hasattr(engine, "before_resolve")
    # A run started with its questions asked alone is resumed so.
    shares = (self.share_judgements and hasattr(engine, "shared_judgements")
              and self.info.get("judgements") != "alone")
    self.info["judgements"] = "shared" if shares else "alone"
    self.info.update(status=endings.RUNNING, finished=None)
    rundir.write_json(self.run_dir / rundir.RUN_JSON, self.info)
    self._committed = copy.deepcopy(self.info)
    if self.progress:
      self._bar = progress_lib.slot_bar(
          total=total, initial=done, desc=self.scenario.name,
          meter=(self.roles if self.roles is not None and self.roles.mixed
                 else self.model.usage),
          totals=lambda: stated_run.simulation_totals(self.usage()))
    self._writer.start()
    try:
      if waits:
        engine.before_resolve = self._before_resolve
      if shares:
        engine.shared_judgements = self._shared_judgements()
      try:
        if done == 0:
          self.create_initial_norms()
        with heap.set_up_frozen():
          self.simulation.play(
              premise=premise, max_steps=total - done,
              get_state_callback=self._save_checkpoint,
              step_callback=self._on_step)
      except Exception as e:
        # A failure the outage caused (one no component caught) is the
        # outage's, not the run's.
        if self._guard.seen():
          raise outage_lib.SlotAbandoned() from e
        raise
      finally:
        if waits:
          engine.before_resolve = None
        if shares:
          engine.shared_judgements = None
        try:
          self.flush()
        finally:
          self._writer.stop()
      self._stop_if_embedder_failed()
      leftover = self.drain()
      if leftover:  # Anything recorded after the last slot's flush.
        self.write_records(leftover)
      self.write_logs()
    finally:
      if self._bar is not None:
        self._bar.close()
        self._bar = None

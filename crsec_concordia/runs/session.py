"""Session: plays slots and keeps the run directory current.

After every slot it appends the slot's records to events.jsonl (the game
master's, then each agent's, agents in name order), snapshots the norm
databases, updates usage.json and run.json, and writes a checkpoint: a
crash or Ctrl-C loses at most the slot in flight.

What a slot leaves is taken when the slot ends (the checkpoint's states,
the records, the norm snapshots, usage and run.json's fields), but written
by one background thread, in the same order, while the next slot's agents
observe and act: the writing (JSON encoding, fsyncs) grows with the
society, and done between slots it is time with no model call in flight
(docs/trials/runs-and-sweeps.md). The next slot's resolution waits until
it is on disk (the engine's `before_resolve`), and so does the end of the
run, Ctrl-C included. run.json stays the commit point: a kill before it is
written, or a write of the slot that fails, loses that slot, and resume
plays it again. So does a slot in which the run's embedder returned a bad
batch of vectors (embedding/value.py): the run stops there, interrupted,
as it does when any dependency is lost, and never completes with a hole.

The session meets the agents only through their ports (components/port.py):
their records, norm snapshots, initial norms and shared DetectConflict
questions. An agent's components run their hooks in parallel threads, so
the order in which one agent's records reach its journal can differ between
runs; the port hands them over in a fixed order (slot, kind, then content
for failures: `record_order`), so the same seed gives the same file
whatever thread finished first.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import dataclasses
import functools
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from concordia.prefabs.simulation import generic as simulation_lib
from concordia.utils import structured_logging

from crsec_concordia import game_masters, gate_tally, threads
from crsec_concordia.components.port import (KIND_ORDER, port_of,
                                             record_order)
from crsec_concordia.embedding import thresholds as embedder_thresholds
from crsec_concordia.embedding.check import BadVectors
from crsec_concordia.operations.detect_conflict_sharing import SharedJudgements
from crsec_concordia.rundir import writing as rundir
from crsec_concordia.rundir.format import FAILURE, STEP
from crsec_concordia.runs import progress as progress_lib
from crsec_concordia.scenarios import Scenario
from crsec_concordia.scenarios.interview_block import scheduled_slots

_log = logging.getLogger(__name__)

__all__ = ["KIND_ORDER", "Session", "record_order", "run_log"]


@contextlib.contextmanager
def run_log(run_dir: Path) -> Iterator[None]:
  """Warnings of this session go to RUN_DIR/run.log as well."""
  handler = logging.FileHandler(run_dir / rundir.RUN_LOG, encoding="utf-8")
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
  # Whether a DetectConflict question several agents hold is asked once
  # for all of them (off: each agent asks alone, as a bench compares).
  share_judgements: ClassVar[bool] = True

  def __post_init__(self):
    self._gm = self.simulation.get_game_masters()[0]
    self._clock = self._gm.get_component(game_masters.clock.CLOCK_KEY)
    self._started = time.monotonic()
    self._base_wall = float(self.info.get("wall_seconds") or 0.0)
    self._bar = None
    self._writer: concurrent.futures.ThreadPoolExecutor | None = None
    self._writes: list[concurrent.futures.Future] = []
    self._write_failed = False
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
    """Runs `fn(*args)` on the writer thread, after the writes before it.

    Without a writer (outside `play`) it runs here and now. A failed write
    is raised by the next `_write` or `flush`.
    """
    if self._writer is None:
      fn(*args)
      return
    self._raise_failed_writes(done_only=True)
    self._writes.append(self._writer.submit(self._in_order, fn, *args))

  def _in_order(self, fn, *args) -> None:
    """On the writer thread: nothing is written after a failed write (a
    run.json after records that failed to append would commit them)."""
    if self._write_failed:
      raise RuntimeError("not written: an earlier write of this run failed")
    try:
      fn(*args)
    except BaseException:
      self._write_failed = True
      raise

  def _raise_failed_writes(self, done_only: bool) -> None:
    """Forgets the finished writes; raises the first that failed."""
    writes, self._writes = self._writes, []
    for i, future in enumerate(writes):
      if done_only and not future.done():
        self._writes = writes[i:]
        return
      future.result()  # Raises the write's error, if any.

  def flush(self) -> None:
    """Waits until everything taken so far is on disk."""
    if self._writes:
      self._raise_failed_writes(done_only=False)

  def _save_checkpoint(self, data: dict[str, Any]) -> None:
    """Simulation's state callback: the state after each completed slot.

    The states in `data` are copies made for it. The raw log is the
    simulation's own list: its new entries (the slot's) are appended to
    checkpoints/log.jsonl and leave it, so neither memory nor a checkpoint
    holds every slot's logs of every agent (resume and the end of the run
    read the file).
    """
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

  def _whole_log(self, played: structured_logging.SimulationLog
                 ) -> structured_logging.SimulationLog:
    """Concordia's log of the run's slots, from checkpoints/log.jsonl, with
    the memories Concordia attached to the log of what it played."""
    whole = structured_logging.SimulationLog.from_raw_log(rundir.read_log(
        self.run_dir, int(self.info["completed_steps"])))
    names = [e.name for e in self.simulation.get_entities()]
    whole.attach_memories(
        entity_memories={n: played.get_entity_memories(n) for n in names
                         if played.get_entity_memories(n)},
        game_master_memories=played.get_game_master_memories())
    return whole

  def write_records(self, records: list[dict[str, Any]]) -> None:
    self._write(self._append_records, records)

  def _append_records(self, records: list[dict[str, Any]]) -> None:
    rundir.append_records(self.run_dir / rundir.EVENTS, records)
    for r in records:
      if r.get("kind") == FAILURE:
        _log.warning("step %s: %s failed for %s: %s", r.get("step"),
                     r.get("op"), r.get("agent"), r.get("error"))

  def _stop_if_embedder_failed(self) -> None:
    """Raises the embedder's bad batch, if one came: the slot it came in
    is not committed (its components recorded failures where vectors were
    missing), so the run stops resumable at the slot before."""
    failure = getattr(self.embedder, "failure", None)
    if failure is not None:
      raise BadVectors(
          f"{failure}; {self.run_dir} stopped after slot "
          f"{self._committed.get('completed_steps', 0)}: continue it with "
          f"`crsec resume {self.run_dir}`")

  def _on_step(self, step_data) -> None:
    """The engine's step callback: flush everything the slot produced."""
    self._stop_if_embedder_failed()
    step = self._clock.completed_steps
    stamp = self.scenario.stamp_for(step)
    usage = self.usage()
    totals = rundir.totals(usage)
    records = self.drain()
    records.append({"kind": STEP, **game_masters.stamp_fields(stamp),
                    "actors": sorted(step_data.entity_actions), **totals})
    self.write_records(records)
    snapshot = self.norm_snapshot()
    if snapshot:
      self._write(
          rundir.write_json,
          self.run_dir / rundir.NORMS / rundir.norm_snapshot(step), snapshot)
    written = {"completed_steps": step, "by_tag": usage, "totals": totals}
    if self.roles is not None and self.roles.mixed:
      by_model = self.roles.usage_by_model()
      written["by_model"] = {i: {"by_tag": u, "totals": rundir.totals(u)}
                             for i, u in by_model.items()}
      self.info["usage_by_model"] = by_model
    self._write(rundir.write_json, self.run_dir / rundir.USAGE_JSON, written)
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

  def _commit(self, info: dict[str, Any]) -> None:
    """On the writer thread: run.json, the slot's commit point."""
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
    """Plays the remaining slots; marks the run completed or interrupted."""
    total = self.scenario.total_steps
    done = int(self.info["completed_steps"])
    engine = getattr(self.simulation, "_engine", None)
    waits = hasattr(engine, "before_resolve")
    # A run started with its questions asked alone is resumed so.
    shares = (self.share_judgements and hasattr(engine, "shared_judgements")
              and self.info.get("judgements") != "alone")
    self.info["judgements"] = "shared" if shares else "alone"
    self.info.update(status="running", finished=None)
    rundir.write_json(self.run_dir / rundir.RUN_JSON, self.info)
    self._committed = copy.deepcopy(self.info)
    if self.progress:
      self._bar = progress_lib.slot_bar(
          total=total, initial=done, desc=self.scenario.name,
          meter=(self.roles if self.roles is not None and self.roles.mixed
                 else self.model.usage),
          totals=lambda: rundir.totals(self.usage()))
    self._writer = concurrent.futures.ThreadPoolExecutor(
        max_workers=1, thread_name_prefix="RunDirWriter")
    try:
      with run_log(self.run_dir):
        self._tell_unmeasured()
        if waits:
          engine.before_resolve = self.flush
        if shares:
          engine.shared_judgements = self._shared_judgements()
        try:
          if done == 0:
            self.create_initial_norms()
          log = self.simulation.play(
              premise=premise, max_steps=total - done,
              get_state_callback=self._save_checkpoint,
              step_callback=self._on_step)
        finally:
          if waits:
            engine.before_resolve = None
          if shares:
            engine.shared_judgements = None
          try:
            self.flush()
          finally:
            self._writer.shutdown(wait=True)
            self._writer = None
        self._stop_if_embedder_failed()
        leftover = self.drain()
        if leftover:  # Anything recorded after the last slot's flush.
          self.write_records(leftover)
        log = self._whole_log(log)
        html = log.to_html(title=f"{self.scenario.name} "
                           f"({self.info['arm']}, seed {self.info['seed']})")
        (self.run_dir / rundir.LOG_HTML).write_text(html, encoding="utf-8")
        rundir.write_log_json(self.run_dir, log)
    except BaseException:
      if self._write_failed:
        # A slot whose files failed to be written is not committed: run.json
        # stays at the last slot that was, and resume plays the rest.
        self.info = copy.deepcopy(self._committed)
      self.info.update(status="interrupted", wall_seconds=self.wall_seconds())
      rundir.write_json(self.run_dir / rundir.RUN_JSON, self.info)
      raise
    finally:
      if self._bar is not None:
        self._bar.close()
    self.info.update(status="completed", finished=rundir.now(),
                     wall_seconds=self.wall_seconds())
    rundir.write_json(self.run_dir / rundir.RUN_JSON, self.info)

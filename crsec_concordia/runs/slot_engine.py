"""SlotEngine: Concordia's simultaneous engine, a slot at a time.

Why the simultaneous engine: in CRSEC, as in Generative Agents, every agent
lives through every moment, and a real endpoint serves many requests at
once; the sequential engine lets one agent act per step and every call wait
for the previous one. Why not the asynchronous engine: it lets each agent run
its own loop against the game master, so who has seen what when depends on
thread timing; a slot is a barrier (all observe, all act, then the game
master resolves), which keeps a seeded run replayable and every agent's
clock the same.

The engine keeps Concordia's game-master protocol (termination, next
acting, action specs, observations, resolution, all through the game
master's `act`) and changes three things in the loop:
  - an agent whose turn raises is not dropped with a log line: its error is
    handed to the game master, which records a failure for that slot;
  - the slot's actions reach the game master as one JSON object by name
    (game_masters.slot_actions), not newline-joined text to be split;
  - what the loop hands on (step data, logs) is in name order, whichever
    thread finished first, and an agent's log is what it logged in the
    slot (`_slot_log`);
  - a SharedJudgements, when given, is told who observes in each slot and
    when each has (its questions are grouped once all are known; an
    agent's ConflictDetector tells it sooner, see operations/detect_conflict_sharing.py),
    and every agent then observes before any acts: an act waits for its
    agent's detection, a shared detection for every holder's questions,
    and on a bounded pool an agent acting early could wait for one not
    yet started.
Each agent's task (make its observation, observe, act) runs on a pool of
`workers` threads (crsec_concordia/threads.py: sized by the endpoint's
capacity), so the agents' model calls overlap on the endpoint without a
thread per agent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from absl import logging
from concordia.environment.engines import simultaneous
from concordia.environment import step_controller as step_controller_lib
from concordia.typing import entity as entity_lib

from concordia.components.game_master import make_observation as make_observation_lib
from concordia.components.game_master import next_acting as next_acting_lib

from crsec_concordia.components.port import port_of
from crsec_concordia.operations.detect_conflict_sharing import SharedJudgements
from crsec_concordia.game_masters.slot_actions import SlotActions
from crsec_concordia import threads
from crsec_concordia.models import stopping

_OBSERVATIONS_KEY = make_observation_lib.DEFAULT_MAKE_OBSERVATION_COMPONENT_KEY
_ACTION_SPEC_KEY = next_acting_lib.DEFAULT_NEXT_ACTION_SPEC_COMPONENT_KEY


def _component(game_master, key: str, method: str):
  """The game master's component under `key` if it offers `method`."""
  components = getattr(game_master, "get_all_context_components", None)
  if components is None or key not in components():
    return None
  component = game_master.get_component(key)
  return component if callable(getattr(component, method, None)) else None


def act_reasons(entities: Sequence[entity_lib.Entity],
                actions: Mapping[str, str]) -> dict[str, list[str]]:
  """Why each agent that acted asked the model, as its port tells it (a
  plan-driven act keeps its reasons, components/structured_act.py); agents
  that keep none are left out."""
  reasons = {}
  for entity in entities:
    kept = port_of(entity).act_reasons() if entity.name in actions else []
    if kept:
      reasons[entity.name] = list(kept)
  return reasons


class SlotEngine(simultaneous.Simultaneous):
  """Every agent acts once per slot, concurrently; one resolution per slot."""

  # Called after the agents have acted, before the game master resolves
  # (the session waits there for the previous slot's files, written while
  # the agents observed and acted).
  before_resolve: Callable[[], None] | None = None
  # The simulation's shared DetectConflict questions (the session gives it).
  shared_judgements: SharedJudgements | None = None
  # The agents' threads at most (threads.workers_for(model) in a run).
  workers: int = threads.DEFAULT_WORKERS

  def make_observation(self, game_master: entity_lib.Entity,
                       entity: entity_lib.Entity) -> str:
    """The agent's observation; directly from the queue when there is one.

    The game master's `act` serves one request at a time and runs all of
    its components for each; asked that way, the last of N agents waits
    for N observations in a row before it can start. A game
    master component with `take(name)` (ExactObservations) is read
    directly, by every agent at once; any other game master is asked.
    """
    queue = _component(game_master, _OBSERVATIONS_KEY, "take")
    if queue is not None:
      return queue.take(entity.name)
    with self._gm_log_lock:  # The game master's own act is not reentrant.
      return super().make_observation(game_master, entity)

  def next_acting(self, game_master, entities, log_entry=None, log=None):
    """Who acts and their action specs (read directly when possible)."""
    specs = _component(game_master, _ACTION_SPEC_KEY, "spec_for")
    if specs is None:
      return super().next_acting(game_master, entities, log_entry, log)
    by_name = {e.name: e for e in entities}
    answer = game_master.act(entity_lib.ActionSpec(
        call_to_action=self._call_to_next_acting,
        output_type=entity_lib.OutputType.NEXT_ACTING,
        options=tuple(by_name)))
    names = [n.strip() for n in answer.split(",") if n.strip()]
    unknown = [n for n in names if n not in by_name]
    if unknown:
      raise ValueError(f"the game master named unknown agents {unknown}")
    return ([by_name[n] for n in names], [specs.spec_for(n) for n in names])

  def _observe(self, game_master: entity_lib.Entity,
               entity: entity_lib.Entity) -> str:
    """One agent observes what the game master delivers."""
    try:
      observation = self.make_observation(game_master, entity)
      if observation and observation.strip():
        entity.observe(observation)
    finally:
      if self.shared_judgements is not None:
        self.shared_judgements.observed(entity.name)
    return ""

  def _live_slot(self, game_master: entity_lib.Entity,
                 entity: entity_lib.Entity,
                 action_spec: entity_lib.ActionSpec) -> str:
    """One agent's slot: observe what the game master delivers, then act."""
    self._observe(game_master, entity)
    return entity.act(action_spec)

  def _threads(self) -> threads.KeptThreads:
    """The agents' threads, kept from slot to slot (see threads.py)."""
    if getattr(self, "_agent_threads", None) is None:
      self._agent_threads = threads.KeptThreads("SlotAgent", self.workers)
    return self._agent_threads

  def run_agents(self, tasks: Mapping[str, Callable[[], str]]
                 ) -> tuple[dict[str, str], dict[str, str]]:
    """Runs every agent's slot at once: (actions, errors), by name.

    One agent's error is that agent's failure, not the slot's: it is kept
    as one line (Concordia's fault-tolerant runner printed a traceback to
    the terminal for it) and the game master records it.
    """
    def guarded(task: Callable[[], str]) -> tuple[bool, str]:
      try:
        return True, task()
      except stopping.RequestsStopped as e:
        # The run was interrupted (the main thread says so): not the
        # agent's failure, and no traceback for it.
        return False, str(e)
      except Exception as e:  # pylint: disable=broad-except
        return False, f"{type(e).__name__}: {e}"

    results = self._threads().run_tasks({
        name: functools.partial(guarded, task) for name, task in tasks.items()})
    actions = {n: r[1] for n, r in sorted(results.items()) if r[0]}
    failed = {n: r[1] for n, r in sorted(results.items()) if not r[0]}
    for name, error in failed.items():
      logging.warning("%s failed to act: %s", name, error)
    return actions, failed

  def play_slot(self, game_master: entity_lib.Entity,
                entities: Sequence[entity_lib.Entity]) -> SlotActions:
    """Plays one slot up to and including its resolution."""
    acting, specs = self.next_acting(game_master, entities)
    if self.shared_judgements is not None:
      self.shared_judgements.open_slot(e.name for e in acting)
    if self.shared_judgements is None:
      actions, failed = self.run_agents({
          e.name: functools.partial(self._live_slot, game_master, e, spec)
          for e, spec in zip(acting, specs)})
    else:
      _, failed = self.run_agents({
          e.name: functools.partial(self._observe, game_master, e)
          for e in acting})
      actions, failed_acts = self.run_agents({
          e.name: functools.partial(e.act, spec)
          for e, spec in zip(acting, specs) if e.name not in failed})
      failed = dict(sorted({**failed, **failed_acts}.items()))
    slot = SlotActions(actions=actions, failed=failed,
                       reasons=act_reasons(acting, actions))
    if self.before_resolve is not None:
      self.before_resolve()
    self.resolve(game_master, slot.encode())
    return slot

  def run_loop(
      self,
      game_masters: Sequence[entity_lib.Entity],
      entities: Sequence[entity_lib.Entity],
      premise: str = "",
      max_steps: int = 100,
      verbose: bool = False,
      log: list[Mapping[str, Any]] | None = None,
      checkpoint_callback: Callable[[int], None] | None = None,
      step_controller=None,
      step_callback=None,
  ):
    """Plays slots until the game master's clock ends or `max_steps`."""
    del verbose  # Progress is the runner's; the run directory has the rest.
    if not game_masters:
      raise ValueError("No game masters provided.")
    game_master = game_masters[0]
    if premise:
      game_master.observe(f"{simultaneous.EVENT_TAG} {premise}")
    self._threads().start(len(entities))
    try:
      self._play_slots(game_master, game_masters, entities, max_steps, log,
                       checkpoint_callback, step_controller, step_callback)
    finally:
      kept = getattr(self, "_agent_threads", None)
      if kept is not None:
        kept.close()

  def _play_slots(self, game_master, game_masters, entities, max_steps, log,
                  checkpoint_callback, step_controller, step_callback):
    """run_loop's loop."""
    steps = 0
    while not self.terminate(game_master) and steps < max_steps:
      if (step_controller is not None
          and not step_controller.wait_for_step_permission()):
        break
      game_master = self.next_game_master(game_master, game_masters)
      before = {e.name: _published(e) for e in entities}
      slot = self.play_slot(game_master, entities)
      steps += 1
      entity_logs = {}
      for entity in sorted(entities, key=lambda e: e.name):
        if entity.name in slot.actions and hasattr(entity, "get_last_log"):
          entity_logs[entity.name] = _slot_log(entity, before[entity.name])
      if log is not None:
        log.append({"Step": steps, "Summary": f"Slot {steps}",
                    **{f"Entity [{n}]": v for n, v in entity_logs.items()}})
      if checkpoint_callback is not None:
        checkpoint_callback(steps)
      if step_callback is not None:
        step_callback(step_controller_lib.StepData(
            step=steps, acting_entity=",".join(slot.actions),
            action=slot.encode(), entity_actions=dict(slot.actions),
            entity_logs=entity_logs, game_master=game_master.name))


def _published(entity: entity_lib.Entity) -> dict[str, int]:
  """How many data each of the entity's logging channels holds."""
  channels = getattr(entity, "measurements", None)
  if channels is None:
    return {}
  return {name: len(channels.get_channel(name))
          for name in channels.available_channels()}


def _slot_log(entity: entity_lib.Entity, before: Mapping[str, int]
              ) -> dict[str, Any]:
  """What the entity's components logged in this slot, by channel name.

  Concordia's `get_last_log` gives every channel's last datum, whenever it
  was published: a component silent this slot showed an older slot's
  datum under this one, and a resumed run (whose restored entities start
  with no data) showed none, so its log differed from the uninterrupted
  run's. Only the channels published since `before` are this slot's.
  """
  channels = getattr(entity, "measurements", None)
  if channels is None:
    return entity.get_last_log()
  return {name: channels.get_last_datum(name)
          for name, count in sorted(_published(entity).items())
          if count > before.get(name, 0)}

"""NormativePlanner: CRSEC's Compliance module, and the plan agents act from.

Once per simulated day it plans the day hour by hour with the agent's
qualified norms and their utilities in view (NormativePlan); when a block
begins it decomposes it into tasks of 10 to 60 minutes (DecomposePlan), as
Generative Agents does with the hour it is about to live, and the act
follows the current task (structured_act.py). The day plan goes into the
act context (stable all day, so a server's prompt cache reuses it).
Compliance is chosen, never forced: the norms are in the plan's prompt and
in the act's, and the agent weighs them; a norm qualified during the day
revises the rest of that day's plan (`replan_on_new_norms`), or compliance
could only ever show a day late. Baseline agents plan with the same
component and operations, norms absent (`norm_memory_key=None`, or
`use_norms=False` for the compliance ablation); an agent without an
AgentJournal (a baseline agent) keeps its records in a small journal of the
planner's own. In a scenario that declares its places, every hour of the plan
and every task says where it happens (`places`), and the act is told. The
trials behind it: docs/trials/acting-and-planning.md.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from concordia.language_model import language_model
from concordia.typing import entity as entity_lib
from concordia.typing import entity_component

from crsec_concordia import observations
from crsec_concordia.components._events import parse_events
from crsec_concordia.components.agent_journal import JOURNAL_KEY, AgentJournal
from crsec_concordia.components.norm_memory import NORM_MEMORY_KEY, NormMemory
from crsec_concordia.models.concordia_adapter import structured_view
from crsec_concordia.operations import failure_notice, normative_plan
from crsec_concordia.operations.normative_plan import DAY_PLAN_OP
from crsec_concordia.operations.normative_plan import OP as PLAN_OP
from crsec_concordia.operations.decompose_plan import (at_place,
                                                       block_as_tasks,
                                                       decompose_plan)
from crsec_concordia.rundir.format import FAILURE, PLAN, TASKS

NORMATIVE_PLANNER_KEY = "NormativePlanner"
# The simulated time in a call to action ("It is Day 1 09:10 at ...").
_TIME_IN_CALL = re.compile(r"\bDay (?P<day>\d+),? (?P<clock>\d\d:\d\d)\b")


def _current_block(items: list[dict], clock: str) -> dict | None:
  """The block running at `clock`: the one covering it, else the last one
  begun before it, else the first (a small model's plan may leave gaps and
  empty blocks)."""
  if not items:
    return None
  covering = [i for i in items if i["start"] <= clock < i["end"]]
  if covering:
    return covering[0]
  begun = [i for i in items if i["start"] <= clock]
  return (max(begun, key=lambda i: i["start"]) if begun
          else min(items, key=lambda i: i["start"]))


def time_of(action_spec: entity_lib.ActionSpec | None
            ) -> tuple[int, str] | None:
  """(day, "HH:MM") named in a call to action, if it names one."""
  if action_spec is None:
    return None
  m = _TIME_IN_CALL.search(action_spec.call_to_action or "")
  return (int(m["day"]), m["clock"]) if m else None


class NormativePlanner(entity_component.ContextComponent,
                       entity_component.ComponentWithLogging):
  """Plans each day (with the agent's norms in view) and its tasks."""

  def __init__(self, model: language_model.LanguageModel, *,
               goal: str = "", setting: str = "",
               day_start: str = "09:00", day_end: str = "16:00",
               replan_on_new_norms: bool = True,
               norm_memory_key: str | None = NORM_MEMORY_KEY,
               use_norms: bool = True,
               agent_name: str = "", persona: str = "",
               pre_act_label: str = "Plan for today",
               places: Sequence[Mapping[str, str]] | None = None,
               journal_key: str = JOURNAL_KEY):
    """Creates the planner.

    Args:
      model: the model for NormativePlan and DecomposePlan.
      goal, setting: what the plan is for, and where.
      day_start, day_end: the part of each day the agent is present.
      replan_on_new_norms: revise the rest of the day when a norm is
        qualified.
      norm_memory_key: the entity's NormMemory, or None (a baseline agent:
        name and persona from the arguments, its own journal).
      use_norms: whether the plan weighs the held norms (False: the
        compliance ablation plans as the baseline does).
      agent_name, persona: used when there is no NormMemory.
      pre_act_label: label of the plan in the act context.
      places: the scenario's declared places (id, description each): the
        plan and its tasks say where each happens; None: they do not.
      journal_key: the entity's AgentJournal, where the records go if the
        entity has one (else the planner keeps them).
    """
    super().__init__()
    self._replan = replan_on_new_norms and use_norms
    self._model = structured_view(model)
    # DecomposePlan's calls counted apart from the day plan's.
    tagged = getattr(self._model, "tagged", None)
    self._decompose_model = (tagged("DecomposePlan") if callable(tagged)
                             else self._model)
    self._goal = goal
    self._setting = setting
    self._day_start, self._day_end = day_start, day_end
    self._norm_memory_key = norm_memory_key
    self._journal_key = journal_key
    self._use_norms = use_norms and norm_memory_key is not None
    self._name, self._persona = agent_name, persona
    self._label = pre_act_label
    self._places = ([{"id": str(p["id"]), "description": str(p["description"])}
                     for p in places] if places else None)
    self._plan_lock = threading.Lock()
    self._plans: dict[str, dict] = {}
    self._now: tuple[int, str] | None = None
    self._task: dict | None = None
    # Without an AgentJournal: the records, the news and the time seen.
    self._journal: list[dict[str, Any]] = []
    self._news: list[str] = []
    self._stamp: observations.Stamp | None = None
    # The partners of conversations the agent took part in since it last
    # acted (a conversation that ended is a reason to decide anew).
    self._talks: list[str] = []

  # -- the agent's NormMemory and journal, if it has them -----------------------

  @property
  def journal(self) -> AgentJournal | None:
    components = self.get_entity().get_all_context_components()
    journal = components.get(self._journal_key)
    return journal if isinstance(journal, AgentJournal) else None

  @property
  def norm_memory(self) -> NormMemory | None:
    if self._norm_memory_key is None:
      return None
    return self.get_entity().get_component(self._norm_memory_key,
                                           type_=NormMemory)

  def _who(self) -> tuple[str, str]:
    memory = self.norm_memory
    if memory is not None:
      return memory.agent_name, memory.persona
    return self._name or self.get_entity().name, self._persona

  def _norms(self) -> list | None:
    """The norms the plan weighs, or None (planned without norms).

    An agent that holds no norm yet plans as a baseline agent does, with
    the very same prompt, so the arms differ only once CRSEC has given it
    a norm; once a norm is held, the plan is revised with it.
    """
    if not self._use_norms:
      return None
    memory = self.norm_memory
    memory.ensure_created()
    return memory.database.qualified() or None

  def record_failure(self, failure: Mapping[str, Any]) -> None:
    """The sink of a failed call: the AgentJournal's, or this planner's
    journal (a baseline agent's), told as AgentJournal tells it."""
    journal = self.journal
    if journal is not None:
      journal.record_failure(failure)
      return
    record = self._note_record({**failure, "kind": FAILURE})
    told = failure_notice.tell_once(self._model, record)
    self._logging_channel({"Key": FAILURE, "Summary": told or FAILURE,
                           "Value": record})

  def _note_record(self, record: dict[str, Any]) -> dict[str, Any]:
    stamp = self._stamp
    noted = {
        "kind": record["kind"], "agent": self._who()[0],
        "step": stamp.step if stamp else 0,
        "time": stamp.time if stamp else None,
        "day": stamp.day if stamp else None,
        "clock": stamp.clock if stamp else None,
        **{k: v for k, v in record.items() if k != "kind"}}
    self._journal.append(noted)
    return noted

  def record(self, kind: str, **fields) -> None:
    """A record in the agent's journal (or, without one, this planner's),
    published on this component's channel."""
    journal = self.journal
    if journal is not None:
      record = journal.record(kind, publish=False, **fields)
    else:
      record = self._note_record({"kind": kind, **fields})
      if kind == PLAN and fields.get("revised"):
        self._news.append("the plan revised")
    self._logging_channel({"Key": kind, "Summary": kind, "Value": record})

  def drain_records(self) -> list[dict[str, Any]]:
    """Records of an agent without AgentJournal (with one, they are
    there)."""
    with self._plan_lock:
      records, self._journal = self._journal, []
    return records

  def add_news(self, news: str) -> None:
    """Something new from outside (an agent without AgentJournal: its port
    tells it a notice)."""
    with self._plan_lock:
      if news not in self._news:
        self._news.append(news)

  def pop_news(self) -> list[str]:
    """The plan revised since the last call, and what add_news gave (an
    agent without AgentJournal; with one, the journal gives the news)."""
    with self._plan_lock:
      news, self._news = self._news, []
    return news

  # -- plans and tasks ----------------------------------------------------------

  def plan_for(self, day: int, clock: str | None = None) -> dict | None:
    """The day's plan, made on first need (one NormativePlan call a day).

    With `clock` (the current time) and replanning on, a plan made before
    a norm was qualified is revised from `clock` to the end of the day.
    """
    with self._plan_lock:
      return self._plan_for(day, clock)

  def _plan_for(self, day: int, clock: str | None) -> dict | None:
    plan = self._plans.get(str(day))
    if plan is not None and not self._needs_revision(plan, clock):
      return plan if plan.get("items") else None
    norms = self._norms()
    name, persona = self._who()
    start = clock if plan is not None and clock else self._day_start
    new = normative_plan(
        self._model, name=name, persona=persona, goal=self._goal,
        setting=self._setting, day=day, start=start, end=self._day_end,
        norms=norms, on_failure=self.record_failure, places=self._places,
        op=PLAN_OP if self._use_norms else DAY_PLAN_OP)
    revised = plan is not None
    # A failed plan is recorded once and the day goes on with the plan it
    # had (or none); the norms it missed are not retried all day.
    kept = dict(new or plan or {})
    if new:
      kept["tasks"] = {}
    kept["norm_ids"] = sorted(n.id for n in norms or ())
    self._plans[str(day)] = kept
    if new:
      self.record(PLAN, day=day, items=new["items"],
                   norms_observed=new["norms_observed"], revised=revised)
    return kept if kept.get("items") else None

  def _needs_revision(self, plan: dict, clock: str | None) -> bool:
    if not self._replan or clock is None or clock >= self._day_end:
      return False
    held = {n.id for n in self.norm_memory.database.qualified()}
    return bool(held - set(plan.get("norm_ids", ())))

  def task_at(self, day: int, clock: str) -> dict | None:
    """The task running at `clock` of `day`, decomposing its block (one
    DecomposePlan call) the first time the block is reached."""
    with self._plan_lock:
      plan = self._plan_for(day, clock)
      if not plan:
        # No plan (NormativePlan failed, recorded): the day in hour-long
        # stretches with no activity of its own, so the agent decides
        # anew each hour rather than every slot.
        plan = self._plans.setdefault(str(day), {})
        plan.setdefault("unplanned", block_as_tasks(
            {"start": self._day_start, "end": self._day_end,
             "activity": ""}))
        task = _current_block(plan["unplanned"], clock)
        return dict(task, day=day, block="unplanned") if task else None
      block = _current_block(plan["items"], clock)
      tasks = plan.setdefault("tasks", {})
      key = f"{block['start']}-{block['end']}"
      if key not in tasks:
        name, persona = self._who()
        found = decompose_plan(
            self._decompose_model, name=name, persona=persona, goal=self._goal,
            setting=self._setting, norms=self._norms(), plan=plan["items"],
            block=block, on_failure=self.record_failure, places=self._places)
        tasks[key] = found if found is not None else block_as_tasks(block)
        self.record(TASKS, day=day, block=dict(block), tasks=tasks[key],
                     decomposed=found is not None)
      task = _current_block(tasks[key], clock)
      return dict(task, day=day, block=key) if task else None

  def current_task(self) -> dict | None:
    """The task found at the last pre_act (None: no time or no plan)."""
    with self._plan_lock:
      return dict(self._task) if self._task else None

  # -- hooks --------------------------------------------------------------------

  def waits_on_model(self, hook: str) -> bool:
    """pre_act may call NormativePlan or DecomposePlan."""
    return hook == "pre_act"

  def pop_talks(self) -> list[str]:
    """Who the agent talked with since the last call (ended conversations)."""
    with self._plan_lock:
      talks, self._talks = self._talks, []
    return talks

  def pre_observe(self, observation: str) -> str:
    events = parse_events(observation)
    me = self._who()[0]
    with self._plan_lock:
      for event in events:
        if self._stamp is None or event.stamp.step >= self._stamp.step:
          self._stamp = event.stamp
        if (isinstance(event, observations.ConversationObservation)
            and me in event.participants):
          self._talks.extend(p for p in event.participants if p != me)
    return ""

  def _time_now(self, action_spec: entity_lib.ActionSpec | None
                ) -> tuple[int, str]:
    named = time_of(action_spec)
    if named is not None:
      return named
    journal = self.journal
    stamp = journal.last_stamp if journal is not None else self._stamp
    # Nothing told yet (a game master that names no time, before its
    # first observation): the start of the first day.
    return (stamp.day, stamp.clock) if stamp else (1, self._day_start)

  def pre_act(self, action_spec: entity_lib.ActionSpec) -> str:
    if action_spec.tag == observations.SPEECH_TAG:
      return ""  # A conversation turn: neither plan nor task in its prompt.
    now = self._time_now(action_spec)
    task = self.task_at(*now)
    with self._plan_lock:
      self._now, self._task = now, task
      plan = self._plans.get(str(now[0])) if now else None
    if not plan or not plan.get("items"):
      return ""
    lines = "\n".join(f"{i['start']}-{i['end']}: {i['activity']}"
                      f"{at_place(i)}" for i in plan["items"])
    return f"{self._label}:\n{lines}"

  def get_state(self) -> entity_component.ComponentState:
    with self._plan_lock:
      stamp = self._stamp
      return {"plans": {k: dict(v) for k, v in self._plans.items()},
              "task": dict(self._task) if self._task else None,
              "journal": [dict(r) for r in self._journal],
              "news": list(self._news), "talks": list(self._talks),
              "stamp": [stamp.day, stamp.clock, stamp.step] if stamp else None}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._plan_lock:
      self._plans = {str(k): dict(v) for k, v in
                     dict(state.get("plans", {})).items()}
      task = state.get("task")
      self._task = dict(task) if task else None
      self._journal = [dict(r) for r in state.get("journal", [])]
      self._news = [str(n) for n in state.get("news", [])]
      self._talks = [str(n) for n in state.get("talks", [])]
      stamp = state.get("stamp")
      self._stamp = (observations.Stamp(int(stamp[0]), str(stamp[1]),
                                        int(stamp[2])) if stamp else None)

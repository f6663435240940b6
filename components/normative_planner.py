"""NormativePlanner: CRSEC's Compliance module as a Concordia component.

Once per simulated day it makes a plan with the agent's qualified norms and
their utilities in view (NormativePlan), and before each action it puts the
plan block for the current time into the act context, with the reminder to
weigh the norms. The act component then writes the action: the paper's
Act(plan item, norms, description). Compliance is chosen, never forced.

A norm qualified during the day revises the rest of that day's plan (one
more NormativePlan call, from the current time on): otherwise a smoker who
accepts "No smoking indoors" at 09:40 would follow his morning plan of
smoking at his table until the next day, and compliance could only ever
show a day late. `replan_on_new_norms=False` restores the once-a-day plan.
"""

from __future__ import annotations

import threading

from concordia.components.agent import action_spec_ignored
from concordia.typing import entity_component

from crsec_concordia.components._shared import UsesNormMemory
from crsec_concordia.components.norm_memory import NORM_MEMORY_KEY
from crsec_concordia.operations import normative_plan

NORMATIVE_PLANNER_KEY = "NormativePlanner"


def _current_block(items: list[dict], clock: str) -> dict | None:
  """The block running at `clock`: the one covering it, else the last one
  begun before it, else the first.

  The plan was asked to cover the day, but the 1.5B model leaves gaps
  ("10:00-10:15" in a day from 09:00) and empty blocks ("10:15-10:15");
  with no "Now" line its acts drifted from the plan to a paraphrase of the
  instructions. So a gap belongs to the block before it, and the time
  before the first block to the first.
  """
  if not items:
    return None
  covering = [i for i in items if i["start"] <= clock < i["end"]]
  if covering:
    return covering[0]
  begun = [i for i in items if i["start"] <= clock]
  return (max(begun, key=lambda i: i["start"]) if begun
          else min(items, key=lambda i: i["start"]))


class NormativePlanner(UsesNormMemory, action_spec_ignored.ActionSpecIgnored,
                       entity_component.ComponentWithLogging):
  """Plans each day with the agent's norms in view."""

  def __init__(self, model, *, goal: str = "", setting: str = "",
               day_start: str = "09:00", day_end: str = "16:00",
               replan_on_new_norms: bool = True,
               norm_memory_key: str = NORM_MEMORY_KEY,
               pre_act_label: str = "Plan for today"):
    super().__init__(pre_act_label)
    self._replan = replan_on_new_norms
    self._model = model
    self._goal = goal
    self._setting = setting
    self._day_start, self._day_end = day_start, day_end
    self._norm_memory_key = norm_memory_key
    self._plan_lock = threading.Lock()
    self._plans: dict[str, dict] = {}

  def plan_for(self, day: int, clock: str | None = None) -> dict | None:
    """The day's plan, made on first need (one NormativePlan call a day).

    With `clock` (the current time) and replanning on, a plan made before
    a norm was qualified is revised from `clock` to the end of the day.
    """
    with self._plan_lock:
      memory = self.norm_memory
      plan = self._plans.get(str(day))
      if plan is not None and not self._needs_revision(plan, clock):
        return plan if plan.get("items") else None
      memory.ensure_created()
      norms = memory.database.qualified()
      start = clock if plan is not None and clock else self._day_start
      new = normative_plan(
          self._model, name=memory.agent_name, persona=memory.persona,
          goal=self._goal, setting=self._setting, day=day,
          start=start, end=self._day_end, norms=norms,
          on_failure=memory.record_failure)
      revised = plan is not None
      # A failed plan is recorded once and the day goes on with the plan it
      # had (or none); the norms it missed are not retried all day.
      kept = dict(new or plan or {})
      kept["norm_ids"] = sorted(n.id for n in norms)
      self._plans[str(day)] = kept
      if new:
        self._record("plan", day=day, items=new["items"],
                     norms_observed=new["norms_observed"], revised=revised)
      return kept if kept.get("items") else None

  def _needs_revision(self, plan: dict, clock: str | None) -> bool:
    if not self._replan or clock is None or clock >= self._day_end:
      return False
    held = {n.id for n in self.norm_memory.database.qualified()}
    return bool(held - set(plan.get("norm_ids", ())))

  def waits_on_model(self, hook: str) -> bool:
    """pre_act may call NormativePlan (once a day, or to revise)."""
    return hook == "pre_act"

  def _make_pre_act_value(self) -> str:
    stamp = self.norm_memory.last_stamp
    plan = self.plan_for(stamp.day if stamp else 1,
                         stamp.clock if stamp else None)
    name = self.get_entity().name
    reminder = (f"When acting, {name} weighs the personal norms above by "
                "their importance." if self.norm_memory.database.qualified()
                else "")
    if not plan:
      return reminder
    lines = [f"{i['start']}-{i['end']}: {i['activity']}" for i in plan["items"]]
    now = ""
    current = _current_block(plan["items"], stamp.clock) if stamp else None
    if current:
      now = f"\nNow ({stamp.clock}): {current['activity']}"
    return "\n".join(lines) + now + (
        f"\n{reminder}" if reminder else "")

  def get_state(self) -> entity_component.ComponentState:
    with self._plan_lock:
      return {"plans": {k: dict(v) for k, v in self._plans.items()}}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._plan_lock:
      self._plans = {str(k): dict(v) for k, v in
                     dict(state.get("plans", {})).items()}

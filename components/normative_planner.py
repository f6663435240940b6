"""NormativePlanner: CRSEC's Compliance module as a Concordia component.

Once per simulated day it makes a plan with the agent's qualified norms and
their utilities in view (NormativePlan), and before each action it puts the
plan block for the current time into the act context, with the reminder to
weigh the norms. The act component then writes the action: the paper's
Act(plan item, norms, description). Compliance is chosen, never forced.
"""

from __future__ import annotations

import threading

from concordia.components.agent import action_spec_ignored
from concordia.typing import entity_component

from crsec_concordia.components._shared import UsesNormMemory
from crsec_concordia.components.norm_memory import NORM_MEMORY_KEY
from crsec_concordia.operations import normative_plan

NORMATIVE_PLANNER_KEY = "NormativePlanner"


class NormativePlanner(UsesNormMemory, action_spec_ignored.ActionSpecIgnored,
                       entity_component.ComponentWithLogging):
  """Plans each day with the agent's norms in view."""

  def __init__(self, model, *, goal: str = "", setting: str = "",
               day_start: str = "09:00", day_end: str = "16:00",
               norm_memory_key: str = NORM_MEMORY_KEY,
               pre_act_label: str = "Plan"):
    super().__init__(pre_act_label)
    self._model = model
    self._goal = goal
    self._setting = setting
    self._day_start, self._day_end = day_start, day_end
    self._norm_memory_key = norm_memory_key
    self._plan_lock = threading.Lock()
    self._plans: dict[str, dict] = {}

  def plan_for(self, day: int) -> dict | None:
    """The day's plan, made on first need (one NormativePlan call a day)."""
    with self._plan_lock:
      if str(day) in self._plans:
        return self._plans[str(day)]
      memory = self.norm_memory
      memory.ensure_created()
      plan = normative_plan(
          self._model, name=memory.agent_name, persona=memory.persona,
          goal=self._goal, setting=self._setting, day=day,
          start=self._day_start, end=self._day_end,
          norms=memory.database.qualified(),
          on_failure=memory.record_failure)
      # A failed plan is recorded once and the day goes on without a plan.
      self._plans[str(day)] = plan or {}
      if plan:
        self._record("plan", day=day, items=plan["items"],
                      norms_observed=plan["norms_observed"])
      return plan

  def _make_pre_act_value(self) -> str:
    stamp = self.norm_memory.last_stamp
    plan = self.plan_for(stamp.day if stamp else 1)
    name = self.get_entity().name
    reminder = (f"When acting, {name} weighs the personal norms above by "
                "their importance." if self.norm_memory.database.qualified()
                else "")
    if not plan:
      return reminder
    lines = [f"{i['start']}-{i['end']}: {i['activity']}" for i in plan["items"]]
    now = ""
    if stamp:
      current = [i for i in plan["items"]
                 if i["start"] <= stamp.clock < i["end"]]
      if current:
        now = f"\nNow ({stamp.clock}): {current[0]['activity']}"
    return "\n".join(["Plan for today:", *lines]) + now + (
        f"\n{reminder}" if reminder else "")

  def get_state(self) -> entity_component.ComponentState:
    with self._plan_lock:
      return {"plans": {k: dict(v) for k, v in self._plans.items()}}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._plan_lock:
      self._plans = {str(k): dict(v) for k, v in
                     dict(state.get("plans", {})).items()}

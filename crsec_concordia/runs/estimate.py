"""`--estimate`: a run's calls, tokens and cost, said before it starts.

The rule: a run costs in proportion to its size, agents times simulated
hours, at a rate per agent-hour measured, not chosen. An agent acts once
a slot and each slot's operations are the same whatever its length
(docs/measurements.md: "cost per agent follows slots"), so a rate per
agent-hour holds for one slot length: the rate for a scenario is the
published runs' calls per agent and slot times the scenario's slots per
hour. Every completed run the project published
(docs/results/**/results.json, written by `make paper` and the
experiments) of the same arm is pooled: total calls over total agent-slots,
so a long run weighs what it lasted. A published run's calls include
those its response cache answered: a run without that cache sends them
all, so the estimate is of calls sent. Tokens are the pooled tokens per
call the endpoint answered, times the calls. The published runs count
tokens without splitting prompt from completion, so a cost is a range:
every token at the lower price to every token at the higher.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from crsec_concordia.errors import UserError
from crsec_concordia.scenarios import Scenario

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"


@dataclasses.dataclass(frozen=True)
class RunRates:
  """Measured per-agent-hour rates of one arm, and where they come from."""
  calls_per_agent_hour: float
  tokens_per_call: float
  runs: int
  agent_hours: float
  source: str


@dataclasses.dataclass(frozen=True)
class RunEstimate:
  """What a run (or several) is expected to cost."""
  label: str
  agent_hours: float
  calls: float
  tokens: float
  rates: RunRates | None = None

  def cost(self, price_in: float | None, price_out: float | None
           ) -> tuple[float, float] | None:
    """(low, high) in the prices' currency, per million tokens given."""
    if price_in is None and price_out is None:
      return None
    prices = [p for p in (price_in, price_out) if p is not None]
    return (self.tokens * min(prices) / 1e6, self.tokens * max(prices) / 1e6)


def published_runs(root: Path = RESULTS) -> list[dict[str, Any]]:
  """Every completed run of the published results under `root`."""
  runs = []
  for path in sorted(root.glob("**/results.json")):
    try:
      data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
      continue
    for run in data.get("runs") or ():
      if run.get("status") == "completed" and run.get("agent_hours"):
        runs.append({**run, "_source": str(path.relative_to(root.parent))})
  return runs


def agent_slots(run: dict[str, Any]) -> int:
  """A published run's agents times the slots it played."""
  return int(run.get("agents") or 0) * int(run.get("steps_completed") or 0)


def rates_for(arm: str, minutes_per_slot: float,
              runs: Sequence[dict[str, Any]]) -> RunRates:
  """The pooled rates of `arm` for slots of `minutes_per_slot` (the rule
  in the module's docstring)."""
  pool = [r for r in runs if r.get("arm") == arm and agent_slots(r)]
  if not pool:
    raise UserError(f"--estimate: no published run of the {arm} arm to "
                    f"measure rates from (looked in {RESULTS})")
  per_slot = sum(r["calls"] for r in pool) / sum(map(agent_slots, pool))
  answered = [r for r in pool if r["calls"] > (r.get("cached_calls") or 0)]
  sent = sum(r["calls"] - (r.get("cached_calls") or 0) for r in answered)
  tokens = sum(r.get("tokens") or 0 for r in answered)
  return RunRates(per_slot * 60.0 / minutes_per_slot,
               tokens / sent if sent else 0.0, len(pool),
               sum(r["agent_hours"] for r in pool),
               f"{len(pool)} published {arm} run(s), {per_slot:.2f} calls "
               f"per agent and slot")


def agent_hours(scenario: Scenario, steps: int | None = None) -> float:
  slots = steps or scenario.total_steps
  return len(scenario.agents) * slots * scenario.clock.minutes_per_step / 60


def of_scenario(scenario: Scenario, arm: str, steps: int | None = None,
                runs: Sequence[dict[str, Any]] | None = None) -> RunEstimate:
  """One run of `scenario`'s `arm`."""
  rates = rates_for(arm, scenario.clock.minutes_per_step,
                    published_runs() if runs is None else runs)
  hours = agent_hours(scenario, steps)
  calls = rates.calls_per_agent_hour * hours
  return RunEstimate(f"{scenario.name}, {arm}", hours, calls,
                  calls * rates.tokens_per_call, rates)


def total(label: str, parts: Iterable[RunEstimate]) -> RunEstimate:
  parts = list(parts)
  return RunEstimate(label, sum(p.agent_hours for p in parts),
                  sum(p.calls for p in parts), sum(p.tokens for p in parts))


def lines(estimates: Sequence[RunEstimate], price_in: float | None,
          price_out: float | None) -> list[str]:
  """What --estimate prints: one line per run kind, one for the total."""
  out = []
  for e in estimates:
    out.append(f"estimate: {e.label}: {e.agent_hours:g} agent-hours, "
               f"{e.calls:,.0f} calls, {e.tokens:,.0f} tokens"
               + _cost(e, price_in, price_out))
    if e.rates is not None:
      out.append(f"  {e.rates.calls_per_agent_hour:.1f} calls per "
                 f"agent-hour and {e.rates.tokens_per_call:,.0f} tokens per "
                 f"call, pooled over {e.rates.source} "
                 f"({e.rates.agent_hours:g} agent-hours)")
  if price_in is not None or price_out is not None:
    out.append("  (the published runs do not split prompt from completion "
               "tokens: the cost runs from every token at the lower price "
               "to every token at the higher)")
  return out


def _cost(e: RunEstimate, price_in: float | None,
          price_out: float | None) -> str:
  cost = e.cost(price_in, price_out)
  if cost is None:
    return ""
  low, high = cost
  return (f", cost {low:,.2f}" if low == high
          else f", cost {low:,.2f} to {high:,.2f}")

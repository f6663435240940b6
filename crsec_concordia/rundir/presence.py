"""Who takes part in each slot of a run: its agents less those not yet
arrived or gone (a scenario's `arrive` and `leave`, docs/design.md,
"arrive / leave").

Read from what the run wrote, so that a measure counts the agents that
were there: an `intervention` record of kind arrive makes its `agents`
present from its slot on, one of kind leave makes them absent from its
slot on. Before any record, the agents the scenario's `arrive`s bring
(scenario.json, the rule of scenarios/interventions.py, `arriving`) are
absent; one whose arrive never came (a run ended before its slot) stays
absent to the end. A run without arrive or leave has every agent present
at every slot, so its shares are what they were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia.rundir.format import INTERVENTION
from crsec_concordia.rundir.reading import Run
from crsec_concordia.scenarios.interventions import Intervention, arriving

# Why an agent is absent at a slot.
NOT_YET = "not yet arrived"
LEFT = "left"


def _block(scenario: Mapping[str, Any]) -> list[Intervention]:
  """The scenario's interventions as the scenario's own type (scenario.json
  was validated when the run started; read leniently, as reading.py
  reads the rest of it)."""
  fields = Intervention.model_fields
  return [Intervention.model_construct(
      **{k: v for k, v in entry.items() if k in fields})
          for entry in scenario.get("interventions") or ()
          if isinstance(entry, Mapping)]


def absence(run: Run, steps: Sequence[int]) -> list[dict[str, str]]:
  """Per step of `steps` (ascending): each absent agent -> why (NOT_YET or
  LEFT), once that slot's interventions have happened."""
  groups = {a["name"]: a.get("group") for a in run.scenario.get("agents", ())
            if isinstance(a, Mapping) and "name" in a}
  away = dict.fromkeys(sorted(arriving(_block(run.scenario), groups,
                                       run.seed or 0)), NOT_YET)
  changes = sorted((int(r["step"]), i, r) for i, r in
                   enumerate(run.of_kind(INTERVENTION))
                   if r.get("intervention") in ("arrive", "leave"))
  out: list[dict[str, str]] = []
  done = 0
  for step in steps:
    while done < len(changes) and changes[done][0] <= step:
      record = changes[done][2]
      for name in record.get("agents") or ():
        if record["intervention"] == "arrive":
          away.pop(name, None)
        else:
          away[name] = LEFT
      done += 1
    out.append(dict(away))
  return out


def present_at(run: Run, steps: Sequence[int]) -> list[list[str]]:
  """Per step of `steps`: the agents taking part, in `run.agents` order."""
  agents = run.agents
  return [[a for a in agents if a not in away]
          for away in absence(run, steps)]

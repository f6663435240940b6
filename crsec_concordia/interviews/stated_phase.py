"""The stated-belief question held by a run itself, at its start and end.

Every agent present is asked StatedBelief (stated.py) with the model it
plays with, one agent per thread, read off its components (agent_view.py)
so that nothing of the simulation changes: a run that asks and one that
does not play the same slots. The answers go to RUN_DIR/stated_belief.csv
(stated_table.py), written whole and atomically: the start's rows, then
the same with the end's. run.json's STATED_BELIEF_KEY records the switch
and the phases done, written after the table, so a resume asks a phase
that is not done and never one that is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from crsec_concordia import threads
from crsec_concordia.interviews.agent_view import Interviewee, agents_of
from crsec_concordia.interviews.stated import OP, Stated, ask_stated
from crsec_concordia.interviews.stated_table import (NO_RULE, STATED_BELIEF_KEY,
                                                     STATED_COLUMNS,
                                                     read_stated)
from crsec_concordia.interviews.table import write_csv
from crsec_concordia.models.concordia_adapter import as_structured
from crsec_concordia.rundir.format import STATED_BELIEF_CSV
from crsec_concordia.scenarios import Scenario

# An agent's model: (its id as run.json names it, the model).
ModelOf = Callable[[str], tuple[str, Any]]


def switch(asked: bool) -> dict[str, Any]:
  """run.json's STATED_BELIEF_KEY for a new run."""
  return {"asked": bool(asked), "done": []}


def due(info: dict[str, Any], phase: str) -> bool:
  """Whether the run asks `phase` and has not yet (a run recorded without
  the key asks nothing)."""
  found = info.get(STATED_BELIEF_KEY) or {}
  return bool(found.get("asked")) and phase not in found.get("done", ())


def mark_done(info: dict[str, Any], phase: str) -> None:
  found = info.setdefault(STATED_BELIEF_KEY, switch(True))
  found["done"] = [*found.get("done", ()), phase]


def phase_rows(phase: str, slot: int, answers: list[Stated],
         agents: list[Interviewee], model_id: dict[str, str]
         ) -> pd.DataFrame:
  """The table's rows of one phase: a row per rule, one NO_RULE row for an
  agent that stated none or failed."""
  role = {a.name: a.role for a in agents}
  out = []
  for answer in answers:
    base = {"phase": phase, "slot": slot, "agent": answer.agent,
            "role": role.get(answer.agent, ""),
            "model": model_id[answer.agent], "error": answer.error}
    said = list(enumerate(answer.rules)) or [(NO_RULE, "")]
    out += [{**base, "rule_index": i, "rule": r} for i, r in said]
  return pd.DataFrame(out, columns=STATED_COLUMNS)



def ask_phase(run_dir: Path, phase: str, slot: int, simulation,
         scenario: Scenario, absent: frozenset[str], model_of: ModelOf
         ) -> pd.DataFrame:
  """Asks every agent not `absent`, writes the table with this phase's rows
  (any earlier ones of the phase, from an interrupted try, replaced) and
  returns them."""
  agents = [a for a in agents_of(simulation, scenario)
            if a.name not in absent]
  chosen = {a.name: model_of(a.name) for a in agents}
  tagged: dict[str, Any] = {}
  for model_id, model in chosen.values():
    tagged.setdefault(model_id, as_structured(model).tagged(OP))
  done = threads.run_tasks(
      {a.name: functools.partial(ask_stated, tagged[chosen[a.name][0]], a)
       for a in agents},
      workers=sum(threads.workers_for(m) for m in tagged.values()))
  frame = phase_rows(phase, slot, [done[a.name] for a in agents], agents,
               {name: model_id for name, (model_id, _) in chosen.items()})
  earlier = read_stated(run_dir)
  earlier = earlier[earlier["phase"] != phase]
  whole = frame if earlier.empty else pd.concat([earlier, frame],
                                                ignore_index=True)
  write_csv(whole, Path(run_dir) / STATED_BELIEF_CSV)
  return frame

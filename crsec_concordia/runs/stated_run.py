"""The session's side of the stated-belief question, and usage apart.

The run asks its agents' stated rules (interviews/stated_phase.py) at two
moments the session marks: before its first slot and after its last. The
calls are counted in usage.json's `by_tag` under their own tag, but the
totals a slot records (events.jsonl's step records, the progress bar, a
budget) are the simulation's alone, so a run that asks and one that does
not keep the same records; usage.json shows the rest `apart`.
"""

from __future__ import annotations

import logging
from typing import Any

from crsec_concordia.game_masters.interventions import absent_and_closed
from crsec_concordia.interviews import stated_phase
from crsec_concordia.interviews.stated_table import END
from crsec_concordia.operations.names import split_usage
from crsec_concordia.rundir import writing as rundir
from crsec_concordia.scenarios.models_block import MAIN_MODEL

_log = logging.getLogger(__name__)


def simulation_totals(usage: dict[str, dict[str, int]]) -> dict[str, int]:
  """The usage totals of the simulation alone."""
  return rundir.totals(split_usage(usage)[0])


def usage_file(session, step: int, usage) -> dict[str, Any]:
  """usage.json: every call by tag, the simulation's totals, and the
  totals of the calls made apart from it (when there were any); by model
  in a run of several (recorded in run.json too, for a resume)."""
  inside, apart = split_usage(usage)
  written = {"completed_steps": step, "by_tag": usage,
             "totals": rundir.totals(inside)}
  if apart:
    written["apart"] = rundir.totals(apart)
  roles = session.roles
  if roles is not None and roles.mixed:
    by_model = roles.usage_by_model()
    written["by_model"] = {i: {"by_tag": u, "totals": simulation_totals(u)}
                           for i, u in by_model.items()}
    session.info["usage_by_model"] = by_model
  return written


def _model_of(session):
  """Each agent's model, by the id run.json names it."""
  def of(agent: str) -> tuple[str, Any]:
    if session.roles is None:
      return MAIN_MODEL, session.model
    model_id = session.roles.id_of(agent)
    return model_id, session.roles.models[model_id]
  return of


def hold_phase(session, phase: str) -> bool:
  """Asks `phase` if the run asks it and has not yet (False: nothing
  asked); then run.json records it done (and, at the end, usage.json and
  run.json count its calls). It reads the agents and changes nothing of
  the simulation. The session's commit point needs no update: the start
  is followed by the first slot's, which carries it, and the end by the
  run's completion (a failure in between leaves the end to a resume)."""
  info = session.info
  if not stated_phase.due(info, phase):
    return False
  slot = int(info["completed_steps"]) if phase == END else 0
  absent, _ = absent_and_closed(session.scenario, int(info["seed"]), slot)
  frame = stated_phase.ask_phase(session.run_dir, phase, slot,
                                 session.simulation, session.scenario,
                                 absent, _model_of(session))
  for agent, error in zip(frame["agent"], frame["error"]):
    if error:  # run.log's line; the table keeps it, events.jsonl never.
      _log.warning("stated belief (%s): %s's question failed: %s", phase,
                   agent, error)
  stated_phase.mark_done(info, phase)
  usage = session.usage()
  info["usage_by_tag"] = usage
  if phase == END:  # The last slot's usage.json, with the end's calls.
    rundir.write_json(session.run_dir / rundir.USAGE_JSON,
                      usage_file(session, slot, usage))
  rundir.write_json(session.run_dir / rundir.RUN_JSON, info)
  return True

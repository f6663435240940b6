"""Metrics split by model, for a run with models by role.

A run whose game master, groups or share of agents were on other models
(runs/model_roles.py) names in run.json each model, the game master's and
each agent's, and in each record the model that made it; usage.json counts
each model's calls. One row per model: whether it was the game master's,
how many agents it played, its calls and failed calls, the failure and
conflict records it made, and, for each target norm, the share of its
agents that hold the target at the last snapshot (adoption among the
agents on that model). It also says whether each model is calibrated for
the run's venue, since a report corrects the referee's shares with its
model's calibration only. A one-model run has no such table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crsec_concordia.calibration import advice, store
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.format import CONFLICT, FAILURE
from crsec_concordia.rundir.reading import Run


def _calibrated(described: Mapping[str, Any], venue: str) -> bool:
  identity = ModelIdentity.of_described(described)
  return any(e.get("scenario") == venue and identity.same_model(
      ModelIdentity.from_dict(e["model"])) for e in store.entries())


def model_rows(run: Run, matcher: NormMatcher) -> list[dict[str, Any]]:
  """One row per model of the run (none for a one-model run)."""
  models = run.run.get("models")
  if not models:
    return []
  agents_of: dict[str, list[str]] = {}
  for agent, i in (models.get("agents") or {}).items():
    agents_of.setdefault(i, []).append(agent)
  by_model = (run.usage or {}).get("by_model") or {}
  last = run.snapshots[max(run.snapshots)] if run.snapshots else {}
  contents = sorted({n["content"] for db in last.values()
                     for n in reading.qualified(db)})
  means = dict(zip(contents, matcher.means_many(contents)))
  held = {(target, agent) for agent, db in last.items()
          for n in reading.qualified(db)
          for target in means.get(n["content"], ())}
  venue = str(run.scenario.get("name"))
  rows = []
  for i, described in (models.get("endpoints") or {}).items():
    mine = agents_of.get(i, [])
    totals = (by_model.get(i) or {}).get("totals") or {}
    row: dict[str, Any] = {
        "model": i, "name": described.get("model"),
        "game_master": i == models.get("game_master"),
        "agents": len(mine), "calls": int(totals.get("calls", 0)),
        "failed_calls": int(totals.get("failed_calls", 0)),
        "failures": sum(r.get("model") == i for r in run.of_kind(FAILURE)),
        "conflicts": sum(r.get("model") == i for r in run.of_kind(CONFLICT)),
    }
    for t in matcher.targets:
      row[f"held_end.{t.id}"] = (sum((t.id, a) in held for a in mine)
                                 / len(mine) if mine and last else None)
    calibrated = _calibrated(described, venue)
    row["calibrated"] = calibrated
    row["calibrate_with"] = None if calibrated else advice.command(
        described, venue, run.run.get("scenario_path"), run.path)
    rows.append(row)
  return rows

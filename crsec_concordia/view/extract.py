"""A run's page data: what the run and its report computed, compact.

The page (page.py, page.js) reads one dict per run: the slots, the panels
(places), the agents, where each agent is and which target norms it holds
per slot, who is away per slot (not yet arrived, or left: a scenario's
`arrive` and `leave`, rundir/presence.py; the page draws them apart from
the places, where their home would otherwise show them), the slot's records, each agent's norms over time, the diffusion
edges, the adoption curves of the report and the usage. `notes` says what
the page cannot show for this run and why (no report, no snapshots, no
per-agent call counts).
"""

from __future__ import annotations

from typing import Any

from crsec_concordia.rundir import presence
from crsec_concordia.view import norms, slots
from crsec_concordia.view.load import Loaded

# Curves of the report's per_step.csv the page draws, per target.
CURVES = ("belief", "behaviour")


def _model(info: dict[str, Any]) -> str:
  model = info.get("model")
  if isinstance(model, dict):
    return str(model.get("model") or model.get("endpoint") or "")
  return str(model or "")


def _agents(loaded: Loaded) -> list[dict[str, Any]]:
  listed = {a["name"]: a for a in loaded.run.scenario.get("agents", [])
            if isinstance(a, dict) and "name" in a}
  return [{"n": name, "r": listed.get(name, {}).get("role", "ordinary"),
           "g": listed.get(name, {}).get("group"),
           "home": listed.get(name, {}).get("home"),
           "persona": listed.get(name, {}).get("persona", "")}
          for name in loaded.run.agents]


def _away(loaded: Loaded, names: list[str],
          steps: list[int]) -> list[list[list[Any]]]:
  """Per slot: [agent index, why] of each agent away (presence.NOT_YET or
  presence.LEFT), in the agents' order."""
  index = {n: i for i, n in enumerate(names)}
  return [sorted([index[a], why] for a, why in away.items() if a in index)
          for away in presence.absence(loaded.run, steps)]


def _curves(loaded: Loaded, targets: list[str],
            steps: list[int]) -> dict[str, dict[str, list]] | None:
  """Target -> curve -> value per slot, from metrics/per_step.csv."""
  rows = loaded.reported.per_step
  if not rows:
    return None
  by_step = {int(r["step"]): r for r in rows if r.get("step") is not None}
  return {t: {c: [by_step.get(s, {}).get(f"{c}.{t}") for s in steps]
              for c in CURVES} for t in targets}


def _notes(loaded: Loaded, curves: Any) -> list[str]:
  run = loaded.run
  notes = []
  if loaded.reported.summary is None:
    notes.append(
        "Not reported: the target colours go by each target's exact wording "
        "only, and there are no adoption curves; run `crsec report "
        f"{run.path}` and view it again for the report's classification.")
  else:
    notes.append(
        "Target colours: the norm wordings the report classified (holders at "
        "the end, diffusion examples) and each target's exact wording; a "
        "wording the report did not list is not coloured.")
  if curves is None and loaded.reported.summary is not None:
    notes.append("metrics/per_step.csv is missing: no adoption curves.")
  if not run.snapshots:
    notes.append("No norm snapshots (a baseline run, or none written): "
                  "nobody holds a norm on this page.")
  notes.append(
      "Model calls are recorded per slot and per operation (usage.json), "
      "not per agent: an agent's panel shows its slot's totals.")
  return notes


def run_data(loaded: Loaded) -> dict[str, Any]:
  """The page's data for one run."""
  run = loaded.run
  summary = loaded.reported.summary
  slot_list = slots.steps_of(run)
  steps = [s["s"] for s in slot_list]
  agents = _agents(loaded)
  names = [a["n"] for a in agents]
  panels = slots.places(run.scenario)
  targets = [{"id": str(t["id"]), "text": str(t.get("text") or t["id"])}
             for t in run.scenario.get("target_norms") or ()]
  ids = [t["id"] for t in targets]
  means = norms.target_wordings(run.scenario, summary)
  where = slots.panel_positions(run, names, panels, steps)
  curves = _curves(loaded, ids, steps)
  usage = (run.usage or {}).get("by_tag") or run.run.get("usage_by_tag") or {}
  return {
      "label": loaded.label,
      "meta": {"scenario": run.scenario.get("name") or run.run.get("scenario"),
               "arm": run.arm, "seed": run.seed,
               "status": run.run.get("status"),
               "completed": run.run.get("completed_steps"),
               "model": _model(run.run), "path": str(run.path),
               "reported": summary is not None},
      "notes": _notes(loaded, curves),
      "steps": slot_list,
      "places": panels,
      "agents": agents,
      "targets": targets,
      "pos": where,
      "away": _away(loaded, names, steps),
      "hold": norms.holds(run, steps, names, means, ids),
      "events": slots.events(run, names, panels, steps),
      "norms": norms.timelines(run, names, means, ids),
      "edges": norms.candidate_edges(run, names, where, steps, means, ids),
      "curves": curves,
      "usage": usage,
  }

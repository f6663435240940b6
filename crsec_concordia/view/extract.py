"""A run's page data: what the run and its report computed, compact.

The page (page.py, page.js) reads one dict per run: the slots, the panels
(places), the agents, where each agent is and which target norms it holds
per slot, who is away per slot (not yet arrived, or left: a scenario's
`arrive` and `leave`, rundir/presence.py; the page draws them apart from
the places, where their home would otherwise show them), the slot's records, each agent's norms over time, the diffusion
edges, the adoption curves of the report, the usage, and each agent's
say, hold and do per target (say_hold.py). `notes` says what
the page cannot show for this run and why (no report, no snapshots, no
per-agent call counts).
"""

from __future__ import annotations

from typing import Any

from crsec_concordia.metrics.measure import adoption
from crsec_concordia.rundir import format as fmt
from crsec_concordia.rundir import presence
from crsec_concordia.rundir.writing import totals
from crsec_concordia.view import belief, norms, say_hold, slots
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


def _own_curves(loaded: Loaded, reader: belief.RunBelief,
                read: list[Any], steps: list[int]
                ) -> dict[str, dict[str, list]]:
  """The view's own curves of a run not reported: belief from the slots'
  readings, behaviour from the referee's tags (adoption.behaviour)."""
  shown = adoption.behaviour(loaded.run, steps, reader.matcher)["behaviour"]
  return {t.id: {"belief": [r.shares[k] for r in read],
                 "behaviour": shown[t.id]}
          for k, t in enumerate(reader.matcher.targets)}


def _notes(loaded: Loaded, curves: Any, matcher_note: str | None) -> list[str]:
  run = loaded.run
  notes = [matcher_note] if matcher_note else []
  if loaded.reported.summary is None:
    notes.append(
        "Not reported: the curves are the view's own (belief by the matcher, "
        "behaviour from the referee's tags), without the report's "
        "correction for the matcher's measured error; run `crsec report "
        f"{run.path}` for the report's figures."
        if curves else
        "Not reported: there are no adoption curves; run `crsec report "
        f"{run.path}` and view it again for the report's classification.")
  else:
    notes.append(
        "Target colours also take the norm wordings the report classified "
        "(holders at the end, diffusion examples) and each target's exact "
        "wording.")
  if curves is None and loaded.reported.summary is not None:
    notes.append("metrics/per_step.csv is missing: no adoption curves.")
  if not run.snapshots:
    notes.append("No norm snapshots (a baseline run, or none written yet): "
                  "nobody holds a norm on this page.")
  notes.append(
      "Model calls are recorded per slot and per operation (usage.json), "
      "not per agent: an agent's panel shows its slot's totals.")
  return notes


def _progress(loaded: Loaded, usage: dict[str, Any]) -> dict[str, Any]:
  """How far the run is: run.json's status as it is, its slots done and
  planned, and the calls (cached ones too) and tokens so far, as run.json
  committed them with its last slot (usage.json may be a slot ahead)."""
  info = loaded.run.run
  summed = totals(info.get("usage_by_tag") or usage)
  return {"status": info.get("status"),
          "completed": info.get("completed_steps"),
          "max": info.get("max_steps"),
          "calls": summed["calls"] + summed["cached_calls"],
          "tokens": summed["prompt_tokens"] + summed["completion_tokens"]}


def _contents(run: Any) -> list[str]:
  """Every norm wording the run holds or passes, in snapshots and records."""
  found = [n.get("content") for snap in run.snapshots.values()
           for db in snap.values() for n in (db or {}).get("norms", [])]
  found += [r.get("content") for r in run.of_kind(
      fmt.CREATED, fmt.CANDIDATE, fmt.VERDICT, fmt.SYNTHESIS)]
  return [str(c) for c in found if c]


def run_data(loaded: Loaded,
             beliefs: belief.Beliefs | None = None) -> dict[str, Any]:
  """The page's data for one run; `beliefs`: the matchers that read who
  holds which target (None: the report's classification and exact
  wordings only)."""
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
  found = (beliefs.for_run(run) if beliefs is not None
           else belief.Found(None, ""))
  reader = found.reader
  curves = _curves(loaded, ids, steps)
  if reader is None:
    hold = norms.holds(run, steps, names, means, ids)
  else:
    read = reader.slots(run, steps, names, means)
    hold = [r.masks for r in read]
    for content, meant in reader.readings(_contents(run)).items():
      means.setdefault(norms.fold(content), set()).update(meant)
    if curves is None and summary is None:
      curves = _own_curves(loaded, reader, read, steps)
  shd = say_hold.readings(
      loaded, names, ids, hold[-1] if hold else [],
      reader.readings if reader is not None
      else say_hold.exact_reader(means))
  where = slots.panel_positions(run, names, panels, steps)
  usage = (run.usage or {}).get("by_tag") or run.run.get("usage_by_tag") or {}
  return {
      "label": loaded.label,
      "meta": {"scenario": run.scenario.get("name") or run.run.get("scenario"),
               "arm": run.arm, "seed": run.seed,
               "status": run.run.get("status"),
               "completed": run.run.get("completed_steps"),
               "model": _model(run.run), "path": str(run.path),
               "reported": summary is not None,
               "matcher": reader is not None, "loading": found.loading},
      "progress": _progress(loaded, usage),
      "notes": _notes(loaded, curves, found.note),
      "steps": slot_list,
      "places": panels,
      "agents": agents,
      "targets": targets,
      "pos": where,
      "away": _away(loaded, names, steps),
      "hold": hold,
      "events": slots.events(run, names, panels, steps),
      "norms": norms.timelines(run, names, means, ids),
      "edges": norms.candidate_edges(run, names, where, steps, means, ids),
      "curves": curves,
      "usage": usage,
      "shd": shd,
  }

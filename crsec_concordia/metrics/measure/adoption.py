"""Adoption of each target norm: belief (held) and behaviour (complied).

Every share is over the agents present at step t (rundir/presence.py): an
agent not yet arrived, or gone (a scenario's `arrive` and `leave`), is
neither counted nor flagged, its per-agent flag None, so that the
correction (correction.py) leaves it out too. In a run without arrive or
leave every agent is present: "all agents" below.

BELIEF at step t: the share of the scenario's agents whose latest norms
snapshot at or before t holds a qualified norm that MEANS the target
(matching.py). Agents missing from the snapshot hold nothing. Steps before
the first snapshot, and baseline runs (no snapshots at all), have no belief:
NaN, not 0, because nothing was measured.

BEHAVIOUR, from the game master's `action` records. An action is relevant to
a target when its `behaviours` include one of the target's `complies` or
`violates` ids; if it includes both, it violates. At step t an agent
  - complies when its most recent relevant action up to t complies,
  - violates when that action violates,
  - is not yet observed when it has had no relevant action.
Three shares are exported, each with its use:
  behaviour            complying / all agents. The headline: comparable
                       across arms and seeds, reaches 1 only when everyone
                       has shown the behaviour.
  behaviour_observed   complying / observed agents (NaN while nobody is
                       observed): compliance among those who acted.
  behaviour_nonviolating  1 - violating / all agents: for a prohibition
                       ("no smoking indoors") an agent who never smokes
                       complies; closest to the paper's 100% for injunctive
                       prohibitions, but it is 1 before anybody acts.

PLAN (normative agents): at step t an agent's plan complies when its most
recent `plan` record up to t lists in `norms_observed` one of its norms
(ids resolved through snapshots and records) that MEANS the target. Shares
over all agents (`plan`) and over agents with a plan (`plan_observed`); NaN
when the run has no plan records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.rundir import presence, reading
from crsec_concordia.rundir.format import ACTION, PLAN
from crsec_concordia.rundir.reading import Run

NAN = math.nan


def belief(run: Run, steps: Sequence[int],
           matcher: NormMatcher) -> dict[str, Any]:
  """{target id: [share per step]} and who held what at the end.

  Returns {"share": {id: [...]}, "holders": {id: {agent: [contents]}},
  "flags": {id: [per step: [bool per agent, None when absent] or None
  before a snapshot]}, "norms": [per step: [qualified norms per agent (0
  when absent)] or None]}; flags and norms feed the misclassification
  correction (correction.py).
  """
  agents = run.agents
  present = presence.present_at(run, steps)
  ids = [t.id for t in matcher.targets]
  contents = sorted({n["content"] for snap in run.snapshots.values()
                     for db in snap.values() for n in reading.qualified(db)})
  means = dict(zip(contents, matcher.means_many(contents)))
  share: dict[str, list[float]] = {i: [] for i in ids}
  holders: dict[str, dict[str, list[str]]] = {i: {} for i in ids}
  flags: dict[str, list[list[bool] | None]] = {i: [] for i in ids}
  norms: list[list[int] | None] = []
  for step, here in zip(steps, present):
    snapshot = reading.snapshot_at(run.snapshots, step)
    if snapshot is None:
      for i in ids:
        share[i].append(NAN)
        flags[i].append(None)
      norms.append(None)
      continue
    held: dict[str, dict[str, list[str]]] = {i: {} for i in ids}
    counts = []
    there = set(here)
    for agent in agents:
      mine = reading.qualified(snapshot.get(agent)) if agent in there else []
      counts.append(len(mine))
      for norm in mine:
        for i in means.get(norm["content"], ()):
          held[i].setdefault(agent, []).append(norm["content"])
    for i in ids:
      share[i].append(len(held[i]) / len(here) if here else NAN)
      flags[i].append([a in held[i] if a in there else None for a in agents])
    norms.append(counts)
    holders = held
  return {"share": share, "holders": holders, "flags": flags, "norms": norms}


def behaviour(run: Run, steps: Sequence[int],
              matcher: NormMatcher, flags: bool = False
              ) -> dict[str, dict[str, list[Any]]]:
  """{measure: {target id: [value per step]}} from `action` records.

  Measures: behaviour, behaviour_observed, behaviour_nonviolating, observed
  (count of observed agents), violations and compliances (action counts at
  that step). With `flags`, also "flags": {id: [per step: [complies? per
  agent, in run.agents order, None when absent]]} for the correction
  (correction.py).
  """
  agents = set(run.agents)
  present = presence.present_at(run, steps)
  targets = matcher.targets
  by_step: dict[int, list[dict[str, Any]]] = {}
  for record in run.of_kind(ACTION):
    by_step.setdefault(int(record["step"]), []).append(record)
  state: dict[str, dict[str, str]] = {t.id: {} for t in targets}
  out = {m: {t.id: [] for t in targets}
         for m in ("behaviour", "behaviour_observed", "behaviour_nonviolating",
                   "observed", "violations", "compliances")}
  if flags:
    # Present even with no step yet (a run that has just started, read by
    # `crsec report` while a sweep runs it).
    out["flags"] = {t.id: [] for t in targets}
  for step, here in zip(steps, present):
    n, there = len(here), set(here)
    counts = {t.id: [0, 0] for t in targets}
    for record in by_step.get(step, ()):
      actor = record.get("actor")
      if actor not in agents:
        continue
      shown = set(record.get("behaviours") or ())
      for t in targets:
        if shown & set(t.violates):
          state[t.id][actor] = "violates"
          counts[t.id][0] += 1
        elif shown & set(t.complies):
          state[t.id][actor] = "complies"
          counts[t.id][1] += 1
    for t in targets:
      values = [state[t.id][a] for a in here if a in state[t.id]]
      complying = values.count("complies")
      violating = values.count("violates")
      out["behaviour"][t.id].append(complying / n if n else NAN)
      out["behaviour_observed"][t.id].append(
          complying / len(values) if values else NAN)
      out["behaviour_nonviolating"][t.id].append(
          1 - violating / n if n else NAN)
      out["observed"][t.id].append(float(len(values)))
      out["violations"][t.id].append(float(counts[t.id][0]))
      out["compliances"][t.id].append(float(counts[t.id][1]))
      if flags:
        out["flags"][t.id].append(
            [state[t.id].get(a) == "complies" if a in there else None
             for a in run.agents])
  return out


def plans(run: Run, steps: Sequence[int],
          matcher: NormMatcher) -> dict[str, dict[str, list[float]]]:
  """{"plan": {id: [...]}, "plan_observed": {id: [...]}}; NaN without plans."""
  ids = [t.id for t in matcher.targets]
  records = run.of_kind(PLAN)
  out = {"plan": {i: [] for i in ids}, "plan_observed": {i: [] for i in ids}}
  if not records:
    for m in out.values():
      for i in ids:
        m[i] = [NAN] * len(steps)
    return out
  index = reading.norm_index(run)
  agents = set(run.agents)
  present = presence.present_at(run, steps)
  by_step: dict[int, list[dict[str, Any]]] = {}
  for record in records:
    by_step.setdefault(int(record["step"]), []).append(record)
  latest: dict[str, frozenset[str]] = {}
  for step, here in zip(steps, present):
    for record in by_step.get(step, ()):
      agent = record.get("agent")
      if agent not in agents:
        continue
      texts = [index.get((agent, norm_id), {}).get("content")
               for norm_id in record.get("norms_observed") or ()]
      texts = [t for t in texts if t]
      observed: set[str] = set()
      for ids_meant in matcher.means_many(texts):
        observed.update(ids_meant)
      latest[agent] = frozenset(observed)
    planned = [latest[a] for a in here if a in latest]
    for i in ids:
      complying = sum(i in s for s in planned)
      out["plan"][i].append(complying / len(here) if here else NAN)
      out["plan_observed"][i].append(
          complying / len(planned) if planned else NAN)
  return out

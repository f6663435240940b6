"""Adoption by distance in the social network from the nearest entrepreneur.

A run whose scenario has a `network:` block (scenarios/network.py)
records its edges in scenario.json. Each agent's distance is the fewest
ties between it and any norm entrepreneur (0 for an entrepreneur; None
when no chain of ties reaches it, or the agent is outside the network).
For each target norm and distance: how many agents are there, the share
that ever held the target and that holds it at the last snapshot, and
the mean slot at which they first held it (from diffusion.tree). On a
ring, a norm spread only by talk between neighbours reaches distance d
no sooner than d talks after the start.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.metrics.measure import diffusion
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.reading import Run

# The rows of by_distance (RUN_DIR/metrics/by_distance.csv).
BY_DISTANCE_COLUMNS = ["target", "distance", "agents", "ever", "held_end",
                       "mean_first_step"]


def edges_of(scenario: Mapping[str, Any]) -> list[tuple[str, str]]:
  """The network's edges a run's scenario.json records (none without)."""
  network = scenario.get("network") or {}
  return [(str(a), str(b)) for a, b in network.get("edges") or ()]


def distances(edges: Iterable[tuple[str, str]], sources: Sequence[str],
              agents: Sequence[str]) -> dict[str, int | None]:
  """Each agent's fewest ties to any of `sources` (None: unreached)."""
  near: dict[str, set[str]] = {}
  for a, b in edges:
    near.setdefault(a, set()).add(b)
    near.setdefault(b, set()).add(a)
  found: dict[str, int] = {s: 0 for s in sources}
  queue = deque(sources)
  while queue:
    here = queue.popleft()
    for there in sorted(near.get(here, ())):
      if there not in found:
        found[there] = found[here] + 1
        queue.append(there)
  return {a: found.get(a) for a in agents}


def by_distance(run: Run, matcher: NormMatcher) -> list[dict[str, Any]]:
  """One row per (target, distance), nearest first; none for a run
  without a network or without entrepreneurs."""
  edges = edges_of(run.scenario)
  sources = [a for a, role in run.roles.items() if role == "entrepreneur"]
  if not edges or not sources or not run.snapshots:
    return []
  agents = run.agents
  away = distances(edges, sources, agents)
  firsts = {(r["target"], r["receiver"]): int(r["step"])
            for r in diffusion.tree(run, matcher)}
  last = run.snapshots[max(run.snapshots)]
  contents = sorted({n["content"] for db in last.values()
                     for n in reading.qualified(db)})
  means = dict(zip(contents, matcher.means_many(contents)))
  held_end = {(target, agent) for agent, db in last.items()
              for n in reading.qualified(db)
              for target in means.get(n["content"], ())}
  order = sorted({d for d in away.values() if d is not None})
  levels: list[int | None] = [*order, None] if None in away.values() else order
  rows = []
  for target in (t.id for t in matcher.targets):
    for level in levels:
      there = [a for a in agents if away[a] == level]
      steps = [firsts[target, a] for a in there if (target, a) in firsts]
      rows.append({
          "target": target, "distance": level, "agents": len(there),
          "ever": len(steps) / len(there),
          "held_end": sum((target, a) in held_end for a in there) / len(there),
          "mean_first_step": (sum(steps) / len(steps)) if steps else math.nan})
  return rows

"""Emergent norms: norms several agents hold that no target norm covers.

Qualified norms of the final snapshot that MEAN no target are clustered by
average-linkage hierarchical clustering on cosine distance, cut at
1 - MATCH_THRESHOLD: a cluster's members mean the same thing by the same
standard the belief metric uses. Clusters held by two or more agents are
emergent norms. `seeded` tells whether an entrepreneur created one of its
members (origin "created") or the scenario gave it as an initial norm; the
paper's headline case ("maintain a healthy environment") is unseeded.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.cluster import hierarchy
from scipy.spatial import distance

from crsec_concordia import embedding
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.reading import Run


def _clusters(vectors: np.ndarray, threshold: float) -> list[list[int]]:
  if len(vectors) == 1:
    return [[0]]
  dist = np.clip(1.0 - vectors @ vectors.T, 0.0, 2.0)
  np.fill_diagonal(dist, 0.0)
  tree = hierarchy.linkage(distance.squareform(dist, checks=False),
                           method="average")
  labels = hierarchy.fcluster(tree, t=1.0 - threshold, criterion="distance")
  groups: dict[int, list[int]] = {}
  for i, label in enumerate(labels):
    groups.setdefault(int(label), []).append(i)
  return list(groups.values())


def emergent_norms(run: Run, matcher: NormMatcher,
                   embedder: Any = None) -> list[dict[str, Any]]:
  """Clusters of non-target qualified norms held by >= 2 agents, big first."""
  if not run.snapshots:
    return []
  final = run.snapshots[max(run.snapshots)]
  seeds = {str(n.get("content", "")).strip().lower()
           for a in run.scenario.get("agents", [])
           for n in (a.get("initial_norms") or [])}
  members = []
  for agent in run.agents:
    for norm in reading.qualified(final.get(agent)):
      members.append((agent, norm))
  if not members:
    return []
  meant = matcher.means_many([n["content"] for _, n in members])
  members = [m for m, ids in zip(members, meant) if not ids]
  if not members:
    return []
  if embedder is None:
    embedder = matcher.embedder
  vectors = embedding.encode(embedder, [n["content"] for _, n in members])
  out = []
  for group in _clusters(vectors, matcher.threshold):
    agents = sorted({members[i][0] for i in group})
    if len(agents) < 2:
      continue
    sims = vectors[group] @ vectors[group].T
    centre = group[int(np.argmax(sims.mean(axis=1)))]
    steps = [s for i in group
             for s in [members[i][1].get("evaluated_step"),
                       members[i][1].get("step")] if s is not None]
    out.append({
        "representative": members[centre][1]["content"],
        "n_agents": len(agents),
        "agents": agents,
        "seeded": any(members[i][1].get("origin") == "created"
                      or members[i][1]["content"].strip().lower() in seeds
                      for i in group),
        "first_step": min(steps) if steps else None,
        "members": [{"agent": members[i][0], "norm_id": members[i][1].get("id"),
                     "content": members[i][1]["content"],
                     "origin": members[i][1].get("origin")} for i in group],
    })
  out.sort(key=lambda c: (-c["n_agents"], c["representative"]))
  return out

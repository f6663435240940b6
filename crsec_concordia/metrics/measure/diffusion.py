"""Who passed which norm to whom, from the norms' provenance.

Every `candidate` record of origin conversation names its `source_agent`:
an edge source -> receiver. Edges are grouped by (source, receiver, target
norm the candidate MEANS, or "other") and count candidates and how many the
receiver accepted (its `verdict`). Candidates of origin observation that
name a source agent (the actor watched) are kept apart as `observed` edges.
"""

from __future__ import annotations

from typing import Any

from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.rundir.format import CANDIDATE, VERDICT
from crsec_concordia.rundir.reading import Run

OTHER = "other"


def edges(run: Run, matcher: NormMatcher) -> list[dict[str, Any]]:
  candidates = [r for r in run.of_kind(CANDIDATE)
                if r.get("source_agent") and r.get("agent")
                and r.get("origin") in ("conversation", "observation")
                and r.get("source_agent") != r.get("agent")]
  accepted = {(r.get("agent"), r.get("norm_id")) for r in run.of_kind(VERDICT)
              if r.get("accepted")}
  meant = matcher.means_many([str(r.get("content") or "") for r in candidates])
  grouped: dict[tuple[str, str, str, str], dict[str, Any]] = {}
  for record, ids in zip(candidates, meant):
    for target in sorted(ids) or [OTHER]:
      key = (record["source_agent"], record["agent"], target, record["origin"])
      edge = grouped.setdefault(key, {
          "source": key[0], "receiver": key[1], "target": target,
          "origin": key[3], "candidates": 0, "accepted": 0,
          "first_step": int(record["step"]), "first_time": record.get("time"),
          "examples": []})
      edge["candidates"] += 1
      key_id = (record.get("agent"), record.get("norm_id"))
      edge["accepted"] += key_id in accepted
      if len(edge["examples"]) < 3:
        edge["examples"].append(record.get("content"))
  return sorted(grouped.values(), key=lambda e: (e["first_step"], e["source"],
                                                 e["receiver"], e["target"]))

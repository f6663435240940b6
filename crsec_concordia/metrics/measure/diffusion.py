"""Who passed which norm to whom, from the norms' provenance.

Every `candidate` record of origin conversation names its `source_agent`:
an edge source -> receiver. Edges are grouped by (source, receiver, target
norm the candidate MEANS, or "other") and count candidates and how many the
receiver accepted (its `verdict`). Candidates of origin observation that
name a source agent (the actor watched) are kept apart as `observed` edges.

`tree` gives, per target norm, how each agent came to hold it: by talk
(from whom), by observation (whose deeds its reflection read: the
`thought` record of that agent and slot names them, so the candidate's
own record, whose `source_agent` stays empty as runs have always written
it, needs no new field), from the start or by synthesis; and when.
"""

from __future__ import annotations

from typing import Any

from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.format import CANDIDATE, THOUGHT, VERDICT
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


# -- the diffusion tree ----------------------------------------------------------

# How an agent came to hold a norm (its `origin`, as the tree names it).
VIA = {"conversation": "talk", "observation": "observation",
       "created": "initial", "synthesis": "synthesis"}
TREE_COLUMNS = ["target", "receiver", "via", "sources", "step", "time",
                "norm_id", "content"]


def _observed(run: Run) -> dict[tuple[str, int], list[str]]:
  """(agent, step) -> the actors whose deeds its reflection read then (the
  `thought` record's `observed` lines, "Actor (place) does ..." or, an
  action not starting with its actor's name, "Actor (place): ...")."""
  out: dict[tuple[str, int], list[str]] = {}
  for r in run.of_kind(THOUGHT):
    actors = [str(line).split(" (", 1)[0] for line in r.get("observed") or ()]
    key = (str(r.get("agent")), int(r.get("step", 0)))
    out[key] = list(dict.fromkeys(out.get(key, []) + actors))
  return out


def tree(run: Run, matcher: NormMatcher) -> list[dict[str, Any]]:
  """Each agent's first holding of each target norm, and whence: one row
  per (target, receiver), in the order they came to hold it.

  `via` is talk (the norm came from a conversation; `sources` is the
  partner), observation (from reflecting on deeds; `sources` are the
  actors whose deeds were read then and who held the target at the slot
  before, or all of them when none did), initial (held from the start:
  given or CreateNorm's) or synthesis. A norm that meant the target before
  its holder's snapshot shows it is dated by its own `step`.
  """
  contents = sorted({n["content"] for snap in run.snapshots.values()
                     for db in snap.values() for n in reading.qualified(db)})
  means = dict(zip(contents, matcher.means_many(contents)))
  observed = _observed(run)
  first: dict[tuple[str, str], dict[str, Any]] = {}
  for step in sorted(run.snapshots):
    for agent, db in sorted(run.snapshots[step].items()):
      for norm in reading.qualified(db):
        for target in sorted(means.get(norm["content"], ())):
          if (target, agent) not in first:
            first[target, agent] = {**norm, "held_step": step}
  rows = []
  for (target, agent), norm in first.items():
    step = int(norm.get("step") or norm["held_step"])
    via = VIA.get(str(norm.get("origin")), str(norm.get("origin")))
    sources: list[str] = []
    if via == "talk" and norm.get("source_agent"):
      sources = [str(norm["source_agent"])]
    elif via == "observation":
      seen = [a for a in observed.get((agent, step), []) if a != agent]
      held = [a for a in seen if (target, a) in first
              and first[target, a]["held_step"] < step]
      sources = held or seen
    rows.append({"target": target, "receiver": agent, "via": via,
                 "sources": sources, "step": step, "time": norm.get("time"),
                 "norm_id": norm.get("id"), "content": norm.get("content")})
  return sorted(rows, key=lambda r: (r["target"], r["step"], r["receiver"]))

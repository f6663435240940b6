"""Norms on the page: which target a wording means, who holds what when,
each agent's norms over time, and who passed a norm to whom.

A wording means a target when the report classified it so (the holders
and diffusion examples in metrics/summary.json, by the report's matcher)
or when it is the target's text or one of its aliases, letter for letter
(case and surrounding space aside). No embedder is called: a wording the
report never listed, in a run never reported on, is not coloured, and the
page says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia.rundir import format as fmt
from crsec_concordia.rundir import reading


def fold(text: Any) -> str:
  """A wording as it is compared: case and spacing aside."""
  return " ".join(str(text or "").split()).casefold()


def target_wordings(scenario: Mapping[str, Any],
                    summary: Mapping[str, Any] | None) -> dict[str, set[str]]:
  """Wording (folded) -> the target ids it means."""
  means: dict[str, set[str]] = {}
  for target in scenario.get("target_norms") or ():
    for text in [target.get("text"), *(target.get("aliases") or ())]:
      if text:
        means.setdefault(fold(text), set()).add(str(target["id"]))
  for tid, data in ((summary or {}).get("targets") or {}).items():
    for contents in (data.get("holders") or {}).values():
      for content in contents or ():
        means.setdefault(fold(content), set()).add(str(tid))
  for edge in (summary or {}).get("diffusion") or ():
    target = edge.get("target")
    if target and target != "other":
      for content in edge.get("examples") or ():
        means.setdefault(fold(content), set()).add(str(target))
  return means


def meaning(content: Any, means: Mapping[str, set[str]],
            targets: Sequence[str]) -> list[int]:
  """The indices (in `targets`) of the targets a wording means."""
  ids = means.get(fold(content), set())
  return [i for i, t in enumerate(targets) if t in ids]


def holds(run: reading.Run, steps: Sequence[int], agents: Sequence[str],
          means: Mapping[str, set[str]], targets: Sequence[str]
          ) -> list[list[int]]:
  """Per step, per agent: a bit mask of the targets its qualified norms
  mean (bit i: targets[i]); zeros before the first snapshot."""
  out = []
  for step in steps:
    snapshot = reading.snapshot_at(run.snapshots, step) or {}
    row = []
    for agent in agents:
      mask = 0
      for norm in reading.qualified(snapshot.get(agent)):
        for i in meaning(norm.get("content"), means, targets):
          mask |= 1 << i
      row.append(mask)
    out.append(row)
  return out


def _recorded_status(record: Mapping[str, Any]) -> str | None:
  """The status a record gives its norm: rejected at creation (a duplicate
  at CreateNorm: `accepted` false) or on evaluation, qualified by a
  verdict; None where it says nothing of it."""
  kind, accepted = record.get("kind"), record.get("accepted")
  if kind == fmt.VERDICT:
    return "qualified" if accepted else "rejected"
  if kind == fmt.CREATED and accepted is False:
    return "rejected"
  return None


def timelines(run: reading.Run, agents: Sequence[str],
              means: Mapping[str, set[str]], targets: Sequence[str]
              ) -> list[list[dict[str, Any]]]:
  """Per agent: its norms, each with its origin and its status by step.

  From the snapshots (a status change is kept only when it changes); a
  norm a snapshot never saw (a run without snapshots, or a slot whose
  snapshot has not landed yet) comes from the records (created,
  candidate, verdict), rejected where its creation or its evaluation
  rejected it.
  """
  index = {a: i for i, a in enumerate(agents)}
  norms: list[dict[str, dict[str, Any]]] = [{} for _ in agents]

  def entry(agent: str, norm_id: str, data: Mapping[str, Any]
            ) -> dict[str, Any]:
    mine = norms[index[agent]]
    if norm_id not in mine:
      mine[norm_id] = {
          "id": norm_id, "content": data.get("content"),
          "type": data.get("type"), "origin": data.get("origin"),
          "from": data.get("source_agent"),
          "t": meaning(data.get("content"), means, targets),
          "status": []}
    return mine[norm_id]

  for step in sorted(run.snapshots):
    for agent, db in run.snapshots[step].items():
      if agent not in index:
        continue
      for norm in (db or {}).get("norms", []):
        e = entry(agent, str(norm.get("id")), norm)
        status = norm.get("status") or (
            "qualified" if norm.get("activated") and norm.get("valid")
            else "candidate")
        if not e["status"] or e["status"][-1][1] != status:
          e["status"].append([step, status])
        if norm.get("rejection_reason"):
          e["why"] = norm["rejection_reason"]
        if norm.get("replaced_by"):
          e["by"] = norm["replaced_by"]
  seen = {id(e) for mine in norms for e in mine.values() if e["status"]}
  for record in run.of_kind(fmt.CREATED, fmt.CANDIDATE, fmt.VERDICT):
    agent, norm_id = record.get("agent"), record.get("norm_id")
    if agent in index and norm_id:
      data = dict(record)
      if record.get("kind") == fmt.CREATED:
        data["origin"] = "created"
      e = entry(agent, str(norm_id), data)
      e.setdefault("first", int(record["step"]))
      status = _recorded_status(record)
      if status == "rejected":
        e.setdefault("why", record.get("reason"))
      if status and id(e) not in seen:
        # No snapshot saw it (yet): its status is the records'.
        e["status"].append([int(record["step"]), status])
  return [sorted(mine.values(), key=lambda n: (n.get("first") or 0, n["id"]))
          for mine in norms]


def candidate_edges(run: reading.Run, agents: Sequence[str],
                    positions: Sequence[Sequence[int]], steps: Sequence[int],
                    means: Mapping[str, set[str]], targets: Sequence[str]
                    ) -> list[dict[str, Any]]:
  """Every candidate an agent took from another one (by talk or by watching
  it): source, receiver, how, when, where the receiver was, whether it was
  accepted, and the targets its wording means. The diffusion graph's edges.
  """
  index = {a: i for i, a in enumerate(agents)}
  where = {s: i for i, s in enumerate(steps)}
  verdicts = {(r.get("agent"), r.get("norm_id")): bool(r.get("accepted"))
              for r in run.of_kind(fmt.VERDICT)}
  out = []
  for r in run.of_kind(fmt.CANDIDATE):
    source, receiver = r.get("source_agent"), r.get("agent")
    if (r.get("origin") not in ("conversation", "observation")
        or source not in index or receiver not in index
        or source == receiver):
      continue
    step = int(r["step"])
    at = positions[where[step]][index[receiver]] if step in where else None
    out.append({"s": index[source], "r": index[receiver],
                "o": "talk" if r["origin"] == "conversation" else "observation",
                "step": step, "id": r.get("norm_id"),
                "content": r.get("content"), "p": at,
                "ok": verdicts.get((receiver, r.get("norm_id"))),
                "t": meaning(r.get("content"), means, targets)})
  return out

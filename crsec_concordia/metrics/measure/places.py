"""Adoption across places and groups, and the norms carried between places.

A society of several places (or of groups) is not one share: a norm may
hold in one room and be unknown in the next, or be taken up by one group
and not another. Where an agent stands in a slot is where the referee put
its action of that slot (the `place` of its `action` record); before its
first action it is at its `home` (else the scenario's `default_place`),
and in a slot where it has no action record (its turn failed) it is where
it last was. Its group and whether it is committed are its scenario.json
entry's `group` and `committed` (absent: none, not committed).

  positions     agent -> its place per step
  adoption      per step, place (declared places only) or group and
                target: agents there, the share holding a qualified norm
                that MEANS the target (belief) and the share whose latest
                relevant action complies (behaviour), from adoption.py's
                per-agent flags; an agent not yet arrived or gone
                (rundir/presence.py) is in no place and no group
  carried       per place and target, the first step at which an agent
                there held it, each such holder, and whether it brought
                the norm: it held it while in another place before (the
                place, since when, and the step it came). Within a slot an
                agent takes up norms as it observes, before it acts: a
                norm first held after the slot it moved in was taken up
                where that slot found it, and so was carried

`is_town` says whether a run has any of this to show: more than one
declared place, or agents in groups. A one-room run's metrics do not
change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from crsec_concordia.rundir import presence
from crsec_concordia.rundir.format import ACTION
from crsec_concordia.rundir.reading import Run

ADOPTION_COLUMNS = ["step", "by", "where", "target", "agents", "belief",
                    "behaviour"]
PLACE, GROUP = "place", "group"
NO_GROUP = ""  # Agents of no group, in the groups' table.
_LEGACY_START = "indoors"


def declared_places(scenario: Mapping[str, Any]) -> list[str]:
  """The place ids a run's scenario declares (none: the legacy two)."""
  return [str(p["id"]) for p in scenario.get("places") or ()
          if isinstance(p, Mapping) and "id" in p]


def groups(run: Run) -> dict[str, str | None]:
  """Agent -> its group (None when it has none)."""
  return {a["name"]: a.get("group") for a in run.scenario.get("agents", [])
          if "name" in a}


def committed(run: Run) -> set[str]:
  """The agents that hold their norms and never revise or drop them."""
  return {a["name"] for a in run.scenario.get("agents", [])
          if "name" in a and a.get("committed")}


def is_town(run: Run) -> bool:
  """Whether the run has places or groups to show (else one room)."""
  return (len(declared_places(run.scenario)) > 1
          or any(g is not None for g in groups(run).values()))


def start_places(run: Run) -> dict[str, str]:
  """Agent -> where it starts: its home, else the default place."""
  places = declared_places(run.scenario)
  default = (run.scenario.get("default_place")
             or (places[0] if places else _LEGACY_START))
  return {a["name"]: a.get("home") or default
          for a in run.scenario.get("agents", []) if "name" in a}


def positions(run: Run, steps: Sequence[int]) -> dict[str, list[str]]:
  """Agent -> its place at each of `steps` (where its action of the step
  was; else where it last was)."""
  at: dict[int, dict[str, str]] = {}
  for record in run.of_kind(ACTION):
    if record.get("actor") and record.get("place"):
      at.setdefault(int(record["step"]), {})[record["actor"]] = str(
          record["place"])
  where = start_places(run)
  for agent in run.agents:
    where.setdefault(agent, _LEGACY_START)
  out: dict[str, list[str]] = {a: [] for a in run.agents}
  for step in steps:
    where.update({a: p for a, p in at.get(step, {}).items() if a in out})
    for agent in out:
      out[agent].append(where[agent])
  return out


def _share(flags: Sequence[bool] | None, members: Sequence[int]
           ) -> float | None:
  if flags is None or not members:
    return None
  return sum(bool(flags[i]) for i in members) / len(members)


def adoption_by_place(run: Run, steps: Sequence[int],
                      belief_flags: Mapping[str, Any],
                      behaviour_flags: Mapping[str, Any],
                      where: Mapping[str, list[str]]) -> pd.DataFrame:
  """Per step, place or group and target: agents there, belief and
  behaviour shares (belief None before the first snapshot and in a
  baseline run). `*_flags` are adoption.py's per-agent flags."""
  agents = run.agents
  group_of = groups(run)
  with_groups = any(g is not None for g in group_of.values())
  # A run of one room (the legacy indoors and outdoors) has groups only.
  with_places = len(declared_places(run.scenario)) > 1
  absent = presence.absence(run, steps)
  rows = []
  for index, step in enumerate(steps):
    sets: dict[tuple[str, str], list[int]] = {}
    for i, agent in enumerate(agents):
      if agent in absent[index]:
        continue
      if with_places:
        sets.setdefault((PLACE, where[agent][index]), []).append(i)
      if with_groups:
        sets.setdefault((GROUP, group_of.get(agent) or NO_GROUP),
                        []).append(i)
    for (by, key), members in sorted(sets.items()):
      for target in belief_flags:
        held = belief_flags[target][index] if belief_flags[target] else None
        done = (behaviour_flags.get(target) or [None] * len(steps))[index]
        rows.append({"step": step, "by": by, "where": key, "target": target,
                     "agents": len(members),
                     "belief": _share(held, members),
                     "behaviour": _share(done, members)})
  frame = pd.DataFrame(rows, columns=ADOPTION_COLUMNS)
  for column in ("belief", "behaviour"):
    frame[column] = frame[column].astype(float)
  return frame


def carried(run: Run, steps: Sequence[int], belief_flags: Mapping[str, Any],
            where: Mapping[str, list[str]]) -> list[dict[str, Any]]:
  """Per place and target, the first holders there and whether each
  brought the norm from another place (see the module's docstring); none
  for a run of one room."""
  if len(declared_places(run.scenario)) < 2:
    return []
  agents = run.agents
  start = start_places(run)
  out = []
  for target, per_step in belief_flags.items():
    first: dict[str, int] = {}  # place -> index of the first step held
    for index, flags in enumerate(per_step):
      if flags is None:
        continue
      for i, agent in enumerate(agents):
        if flags[i]:
          first.setdefault(where[agent][index], index)
    for place, index in sorted(first.items(), key=lambda kv: (kv[1], kv[0])):
      for i, agent in enumerate(agents):
        if per_step[index][i] and where[agent][index] == place:
          held = [bool(f and f[i]) for f in per_step[:index + 1]]
          before = [start.get(agent, _LEGACY_START), *where[agent][:index]]
          out.append({"place": place, "target": target,
                      "step": steps[index], "agent": agent,
                      **_brought(place, held, before, where[agent], steps)})
  return sorted(out, key=lambda r: (r["step"], r["place"], r["target"],
                                    r["agent"]))


def _brought(place: str, held: Sequence[bool], before: Sequence[str],
             after: Sequence[str], steps: Sequence[int]) -> dict[str, Any]:
  """Whether an agent held the norm in another place before it was first
  held in `place`: from where, since which step, and the step it came.

  `held[j]`: it held the norm after step j; `before[j]`, `after[j]`: where
  it was when step j began and ended. Within a slot an agent takes up
  norms (observing) before it acts, so a norm first held after a slot in
  which it moved was taken up where the slot found it.
  """
  elsewhere = [j for j, h in enumerate(held) if h and before[j] != place]
  if not elsewhere:
    return {"carried": False, "from_place": None, "held_since": None,
            "arrived": None}
  last = elsewhere[-1]
  arrived = next(j for j in range(last, len(held)) if after[j] == place)
  return {"carried": True, "from_place": before[last],
          "held_since": steps[held.index(True)], "arrived": steps[arrived]}


def mean(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
  """Several runs' adoption tables as one: per step, place or group and
  target, the mean of the runs' agents and shares (NaN left out)."""
  frame = pd.concat(list(frames), ignore_index=True)
  return frame.groupby(["step", "by", "where", "target"], as_index=False)[
      ["agents", "belief", "behaviour"]].mean()[ADOPTION_COLUMNS]


def final(frame: pd.DataFrame) -> dict[str, dict[str, dict[str, Any]]]:
  """{"place"|"group": {where: {target: {agents, belief, behaviour}}}} at
  the last step."""
  if frame.empty:
    return {}
  last = frame[frame["step"] == frame["step"].max()]
  out: dict[str, dict[str, dict[str, Any]]] = {}
  for row in last.itertuples():
    out.setdefault(row.by, {}).setdefault(row.where, {})[row.target] = {
        "agents": int(row.agents),
        "belief": None if pd.isna(row.belief) else float(row.belief),
        "behaviour": None if pd.isna(row.behaviour) else float(row.behaviour)}
  return out

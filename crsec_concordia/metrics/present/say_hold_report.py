"""The report's say-hold-do section: what report.py hands the template
partial templates/_say_hold_do.html.j2, as plain text.

Per run (a run's page) or arm (a compare's), per target: the occupied
(say, hold, do) cells with their agents (entrepreneurs among them) and
share, the say-do gap with its interval, and each reader's error; on a
run's page also each agent's three readings, entrepreneurs starred.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from crsec_concordia.metrics.measure import run_metrics
from crsec_concordia.metrics.present.templating import Lines, Strong
from crsec_concordia.scenarios import TargetNorm

# Marks an entrepreneur (scenario role) in the per-agent rows.
STAR = "★"


def _pct(value: float | None) -> str:
  return "–" if value is None else f"{100 * value:.0f}%"


def gap_text(gap: Mapping[str, Any]) -> str:
  """"50% [9%, 91%] (1 of 2 sayers with a tagged deed)", or why none."""
  if gap.get("gap") is None:
    return "– (no agent states it and had a tagged deed on it)"
  runs = f", {gap['runs']} runs" if gap.get("runs", 1) > 1 else ""
  return (f"{_pct(gap['gap'])} [{_pct(gap['low'])}, {_pct(gap['high'])}] "
          f"({gap['violating']} of {gap['n']} sayers with a tagged "
          f"deed{runs})")


def _targets(block: Mapping[str, Any], texts: Mapping[str, str]
             ) -> list[dict[str, Any]]:
  out = []
  for tid, t in (block.get("targets") or {}).items():
    out.append({
        "id": tid, "text": texts.get(tid, tid),
        "cells": [[c["say"], c["hold"], c["do"],
                   f"{c['agents']}" + (f" ({c['entrepreneurs']} {STAR})"
                                       if c["entrepreneurs"] else ""),
                   _pct(c["share"])] for c in t["cells"]],
        "gap": gap_text(t["say_do_gap"]),
        "errors": [[reader, Lines(notes)]
                   for reader, notes in t["errors"].items()]})
  return out


def _agents(frame: pd.DataFrame, texts: Mapping[str, str]
            ) -> list[list[Any]]:
  return [[Strong(f"{r.agent} {STAR}") if r.entrepreneur else r.agent,
           texts.get(r.target, r.target), r.say, r.hold, r.do]
          for r in frame.itertuples()]


def shd_section(groups: Sequence[tuple[str, Mapping[str, Any]]],
            texts: Mapping[str, str],
            agents: pd.DataFrame | None = None) -> dict[str, Any] | None:
  """The partial's data: `groups` of (label, summary block); `agents` the
  per-agent table of a single run. None when no run asked its agents."""
  if not groups:
    return None
  return {"definition": groups[0][1]["definition"],
          "groups": [{"label": label, "targets": _targets(block, texts)}
                     for label, block in groups],
          "agents": _agents(agents, texts) if agents is not None else []}


def run_section(m: run_metrics.RunMetrics) -> dict[str, Any] | None:
  """A run page's section (None: the run asked nobody)."""
  block = m.summary.get("say_hold_do")
  return shd_section([(m.run.name, block)] if block else [],
                     {t.id: t.text for t in m.run.targets}, m.say_hold_do)


def compare_section(summary: Mapping[str, Any], targets: Sequence[TargetNorm]
               ) -> dict[str, Any] | None:
  """A compare page's section, one group per arm (None: no run asked)."""
  return shd_section(list((summary.get("say_hold_do") or {}).items()),
                     {t.id: t.text for t in targets})

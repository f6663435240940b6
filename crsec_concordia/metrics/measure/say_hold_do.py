"""Say, hold, do: per agent and target, what it states, holds and does.

The gap between stated attitudes and behaviour is the first thing a social
scientist checks. Three readings of the same agent, each by its own reader:
  SAY   its rules stated after the last slot (stated_belief.csv, "end"
        phase), read by the norm matcher (stated.py): states / does not
        state / unknown (its question failed) / not asked (no table, or the
        agent is not in its end phase);
  HOLD  its final norms snapshot, read as adoption.py reads belief: holds
        (a qualified norm that MEANS the target) / does not hold / no norm
        memory (a run without snapshots: baseline agents);
  DO    the referee's tags on its actions over the whole run, per action as
        adoption.py reads them (an action tagged with both a complying and a
        violating behaviour violates): complies / violates / both / no
        occasion. An agent had an occasion when one of its actions was
        tagged with any of the target's behaviours, or when the game master
        put it a scenario occasion (scenarios/occasions.py) whose behaviours
        include one of the target's; met that way with no tagged deed, it is
        "occasion, no tagged deed".
Each reading carries its reader's measured error (corrected.py): the
matcher's for SAY and HOLD, the referee's for DO where the run's venue and
model were calibrated (referee_quality.py), else "not measured".

The say-do gap of a target is the share of agents who state it and had a
tagged deed on it whose deeds include a violation (docs/metrics.md, "Say,
hold, do"); say_hold_table.py tables it with its interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from crsec_concordia.interviews.stated_table import END
from crsec_concordia.metrics.classifiers import correction, corrected
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.metrics.measure.stated import ENTREPRENEUR, stated_targets
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.format import ACTION, STATED_BELIEF_CSV
from crsec_concordia.rundir.reading import Run
from crsec_concordia.scenarios import TargetNorm

STATES, SILENT, UNKNOWN, NOT_ASKED = ("states", "does not state", "unknown",
                                      "not asked")
HOLDS, NOT_HELD, NO_MEMORY = "holds", "does not hold", "no norm memory"
COMPLIES, VIOLATES, BOTH = "complies", "violates", "both"
UNTAGGED, NO_OCCASION = "occasion, no tagged deed", "no occasion"
SAYS = (STATES, SILENT, UNKNOWN, NOT_ASKED)
HOLDINGS = (HOLDS, NOT_HELD, NO_MEMORY)
DEEDS = (COMPLIES, VIOLATES, BOTH, UNTAGGED, NO_OCCASION)
# The deeds that tell compliance from violation: the gap's denominator.
TAGGED = (COMPLIES, VIOLATES, BOTH)
NOT_MEASURED = "not measured"
# The table's name (.csv, .parquet) in a run's metrics/ and a compare
# directory, written when the runs asked their agents.
SHD_TABLE = "say_hold_do"
COLUMNS = ["agent", "role", "entrepreneur", "target", "say", "hold", "do",
           "compliances", "violations", "say_error", "hold_error",
           "do_error"]


def asked(run: Run) -> bool:
  """Whether the run asked its agents their rules (stated_belief.csv)."""
  return (run.path / STATED_BELIEF_CSV).is_file()


def occasion_behaviours(scenario: Mapping[str, Any]) -> dict[str, set[str]]:
  """{occasion id: the behaviour ids it names} of the scenario's occasions."""
  return {str(o["id"]): set(o.get("behaviours") or ())
          for o in scenario.get("occasions") or () if "id" in o}


def deed_counts(run: Run, targets: list[TargetNorm]
                ) -> dict[str, dict[str, list[int]]]:
  """{target id: {agent: [compliances, violations, occasions met]}} over
  the run's `action` records, agents with none left out."""
  agents = set(run.agents)
  named = occasion_behaviours(run.scenario)
  out: dict[str, dict[str, list[int]]] = {t.id: {} for t in targets}
  for record in run.of_kind(ACTION):
    actor = record.get("actor")
    if actor not in agents:
      continue
    shown = set(record.get("behaviours") or ())
    met = named.get(str(record.get("occasion") or ""), set())
    for t in targets:
      counts = out[t.id].setdefault(actor, [0, 0, 0])
      if shown & set(t.violates):
        counts[1] += 1
      elif shown & set(t.complies):
        counts[0] += 1
      if met & (set(t.complies) | set(t.violates)):
        counts[2] += 1
  return out


def deed(counts: list[int] | None) -> str:
  """The DO reading of [compliances, violations, occasions met]."""
  complied, violated, met = counts or (0, 0, 0)
  if complied and violated:
    return BOTH
  if violated:
    return VIOLATES
  if complied:
    return COMPLIES
  return UNTAGGED if met else NO_OCCASION


def held_at_end(run: Run, matcher: NormMatcher
                ) -> dict[str, frozenset[str]] | None:
  """{agent: the target ids its final snapshot's qualified norms mean};
  None for a run without snapshots (no norm memory)."""
  if not run.snapshots:
    return None
  final = run.snapshots[max(run.snapshots)]
  norms = {agent: [n["content"] for n in reading.qualified(final.get(agent))]
           for agent in run.agents}
  texts = sorted({c for contents in norms.values() for c in contents})
  means = dict(zip(texts, matcher.means_many(texts))) if texts else {}
  return {agent: frozenset().union(*(means[c] for c in contents))
          for agent, contents in norms.items()}


def error_text(rates: correction.Rates | None, note: str) -> str:
  """A reader's measured error in one line, or why it is not measured."""
  if rates is None:
    return f"{NOT_MEASURED}: {note}"
  return (f"sensitivity {rates.sensitivity:.2f}, specificity "
          f"{rates.specificity:.2f} ({rates.source})")


def reader_errors(run: Run, matcher: NormMatcher,
                  rates: Mapping[str, Any] | None = None
                  ) -> dict[str, dict[str, tuple[correction.Rates | None,
                                                 str]]]:
  """{target id: {"say"|"hold"|"do": (rates or None, note)}}: the matcher
  reads SAY and HOLD, the referee DO. `rates`: corrected.measured_rates's,
  when already had."""
  run_rates = rates or corrected.measured_rates(run, matcher)
  reading_error = corrected.matcher_rates(matcher)
  out = {}
  for t in matcher.targets:
    said = reading_error[t.id]
    held = said if run.has_norms else (None, "no norm memory in this run")
    out[t.id] = {"say": said, "hold": held,
                 "do": run_rates[t.id]["behaviour"]}
  return out


def says_at_end(run: Run, matcher: NormMatcher
                ) -> Mapping[str, frozenset[str] | None]:
  """{agent asked at the end: the targets it states, or None (failed)}."""
  return stated_targets(run, matcher).get(END, {})


def agent_table(run: Run, matcher: NormMatcher | None = None,
                rates: Mapping[str, Any] | None = None) -> pd.DataFrame:
  """One row per agent and target (COLUMNS), in the run's agents' and
  targets' order; `rates` as reader_errors takes them."""
  if matcher is None:
    matcher = NormMatcher(run.targets, behaviours=run.behaviours)
  targets = list(matcher.targets)
  said = says_at_end(run, matcher)
  held = held_at_end(run, matcher)
  done = deed_counts(run, targets)
  errors = reader_errors(run, matcher, rates)
  roles = run.roles
  rows = []
  for agent in run.agents:
    for t in targets:
      stated = said.get(agent, ...)
      counts = done[t.id].get(agent)
      rows.append({
          "agent": agent, "role": roles.get(agent, ""),
          "entrepreneur": roles.get(agent) == ENTREPRENEUR,
          "target": t.id,
          "say": (NOT_ASKED if stated is ... else UNKNOWN if stated is None
                  else STATES if t.id in stated else SILENT),
          "hold": (NO_MEMORY if held is None else
                   HOLDS if t.id in held.get(agent, ()) else NOT_HELD),
          "do": deed(counts),
          "compliances": counts[0] if counts else 0,
          "violations": counts[1] if counts else 0,
          **{f"{r}_error": error_text(*errors[t.id][r])
             for r in ("say", "hold", "do")}})
  return pd.DataFrame(rows, columns=COLUMNS)

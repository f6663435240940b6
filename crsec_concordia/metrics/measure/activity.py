"""Counts per step: social conflicts, norm-related conversations and thoughts.

- conflicts: `conflict` records (a normative agent saw a behaviour that
  conflicts with one of its qualified norms: the paper's social conflict).
  Per target: those whose norm or observed behaviour is ABOUT the target.
- conversations: `conversation` records in which something was said (one
  whose first turn failed reached no one: a failure, not a talk);
  norm_conversations: those with a `norm` (started over a conflict) or
  whose topic or behaviour is ABOUT a target. Per target: norm, topic or
  behaviour ABOUT the target.
- thoughts: thought strings in `thought` records; norm_thoughts: those that
  are normative, meaning either (a) the agent's IdentifyNorm drew a
  candidate norm from them (a `candidate` record of origin observation by
  the same agent at the same step whose source_text contains the thought, or
  has no source_text), or (b) the thought is ABOUT a target. Per target: (b).
- llm_calls, prompt_tokens, completion_tokens: per-step differences of the
  cumulative totals in `step` records (NaN when the run has none).

ABOUT is matching.RELATED_THRESHOLD on the target's text and its behaviours'
descriptions: a topic-level relation, looser than MEANS.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.rundir.format import (CANDIDATE, CONFLICT, CONVERSATION,
                                           STEP, THOUGHT)
from crsec_concordia.rundir.reading import Run


def _zeros(steps: Sequence[int]) -> dict[int, float]:
  return {s: 0.0 for s in steps}


Series = dict[str, list[float]]


def counts(run: Run, steps: Sequence[int], matcher: NormMatcher
           ) -> tuple[Series, dict[str, Series]]:
  """(totals {column: [per step]}, per target {column: {id: [per step]}})."""
  ids = [t.id for t in matcher.targets]
  total = {c: _zeros(steps) for c in ("conflicts", "conversations",
                                      "norm_conversations", "thoughts",
                                      "norm_thoughts")}
  per = {c: {i: _zeros(steps) for i in ids}
         for c in ("conflicts", "conversations", "thoughts")}

  def add(column: str, step: int, about: frozenset[str] = frozenset(),
          per_column: str | None = None) -> None:
    if step in total[column]:
      total[column][step] += 1
      for i in about:
        per[per_column or column][i][step] += 1

  conflicts = run.of_kind(CONFLICT)
  about_norm = matcher.about_many([str(r.get("norm") or "") for r in conflicts])
  about_act = matcher.about_many([str(r.get("behaviour") or "")
                                  for r in conflicts])
  for record, a, b in zip(conflicts, about_norm, about_act):
    add("conflicts", int(record["step"]), a | b)

  conversations = [r for r in run.of_kind(CONVERSATION) if r.get("turns")]
  about_norm = matcher.about_many([str(r.get("norm") or "")
                                   for r in conversations])
  about_topic = matcher.about_many([str(r.get("topic") or "")
                                    for r in conversations])
  about_act = matcher.about_many([str(r.get("behaviour") or "")
                                  for r in conversations])
  for record, a, b, c in zip(conversations, about_norm, about_topic,
                             about_act):
    step = int(record["step"])
    add("conversations", step, a | b | c)
    if record.get("norm") or a or b or c:
      add("norm_conversations", step)

  sources: dict[tuple[str, int], list[str]] = {}
  for record in run.of_kind(CANDIDATE):
    if record.get("origin") == "observation":
      sources.setdefault((record.get("agent"), int(record["step"])), []).append(
          str(record.get("source_text") or ""))
  thoughts = run.of_kind(THOUGHT)
  flat = [(r, str(t)) for r in thoughts for t in (r.get("thoughts") or ())]
  abouts = matcher.about_many([t for _, t in flat])
  for (record, text), about in zip(flat, abouts):
    step = int(record["step"])
    add("thoughts", step, about)
    found = sources.get((record.get("agent"), step), [])
    identified = any(not s or text in s or (s and s in text) for s in found)
    if identified or about:
      add("norm_thoughts", step)

  totals = {c: [v[s] for s in steps] for c, v in total.items()}
  per_target = {c: {i: [v[i][s] for s in steps] for i in ids}
                for c, v in per.items()}
  return totals, per_target


def llm_per_step(run: Run, steps: Sequence[int]
                 ) -> dict[str, list[float]]:
  """Per-step LLM calls and tokens from the cumulative `step` records."""
  columns = ("calls", "prompt_tokens", "completion_tokens")
  records = run.of_kind(STEP)
  names = {"calls": "llm_calls", "prompt_tokens": "prompt_tokens",
           "completion_tokens": "completion_tokens"}
  if not records:
    return {names[c]: [math.nan] * len(steps) for c in columns}
  cumulative: dict[int, dict[str, float]] = {}
  for record in records:
    step = int(record["step"])
    row = cumulative.setdefault(step, {c: 0.0 for c in columns})
    for c in columns:
      row[c] = max(row[c], float(record.get(c) or 0))
  out = {names[c]: [] for c in columns}
  last = {c: 0.0 for c in columns}
  for step in steps:
    row = cumulative.get(step)
    for c in columns:
      now = max(last[c], row[c]) if row else last[c]
      out[names[c]].append(now - last[c])
      last[c] = now
  return out

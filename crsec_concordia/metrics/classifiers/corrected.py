"""Belief and behaviour adoption corrected for their classifiers' error.

Beside each raw share (`belief.<t>`, `behaviour.<t>`) the per-step table
gets `<measure>_corrected.<t>` with `_low` and `_high` (correction.py:
Rogan-Gladen, 95% interval carrying the measured error and the agents),
and the summary a `correction` block: per target and measure the counts
used (or why there are none) and the final estimate. Belief uses the
matcher's counts on the TEST half of data/norm_labels.jsonl: the
calibration half is where the thresholds were set, and its figures are
optimistic (intervals built from them cover the truth too seldom;
docs/trials/metrics.md has the simulation). Behaviour uses the referee's
counts on the labelled cases of the calibration of the run's model and
venue (referee_quality.py, crsec_concordia/calibration/); elsewhere its corrected columns are NaN and the
summary says so.

Several runs (a compare arm) are pooled by `pooled`: the runs are the
bootstrap's clusters. An agent absent at a step (not yet arrived, or gone:
its flag None, adoption.py) is left out of that step's estimate, as it is
of the raw share.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from crsec_concordia import embedding
from crsec_concordia.calibration import run_policy
from crsec_concordia.embedding import identity as embedder_identity
from crsec_concordia.metrics.classifiers import correction, measured
from crsec_concordia.metrics.classifiers import judge_quality, referee_quality
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.reading import Run

MEASURES = ("belief", "behaviour")
SUFFIXES = ("corrected", "corrected_low", "corrected_high")
SPLIT = "test"


def columns_of(measure: str, target_id: str) -> tuple[str, str, str]:
  return tuple(f"{measure}_{s}.{target_id}" for s in SUFFIXES)  # type: ignore[return-value]


def matcher_rates(matcher: NormMatcher
                  ) -> dict[str, tuple[correction.Rates | None, str]]:
  """{target id: (the matcher's rates or None, where they come from / why
  not)}: the error of reading a norm's text as a target, whoever holds or
  states it (held belief here, stated belief in stated_shares.py)."""
  out: dict[str, tuple[correction.Rates | None, str]] = {}
  # Only the error measured with the matcher's own embedder corrects it.
  figures = measured.figures_for(matcher.embedder)
  for t in matcher.targets:
    belief: correction.Rates | None = None
    if matcher.judge is None:
      belief = measured.rates(t, matcher.rule.name, SPLIT, figures)
      belief_note = (belief.source if belief else
                     "matcher error not measured for this rule or wording: "
                     "belief not corrected")
      if not figures and matcher.embedder is not None:
        belief_note = measured.not_calibrated_note(
            embedding.identity_for(matcher.embedder).name)
    else:  # The judge's model decides: its calibration's counts.
      belief, belief_note = judge_quality.rates(
          t, matcher.rule.name, matcher.judge_floor,
          getattr(matcher.judge, "identity", None))
    out[t.id] = (belief, belief_note)
  return out


def measured_rates(run: Run, matcher: NormMatcher
                   ) -> dict[str, dict[str, tuple[correction.Rates | None, str]]]:
  """{target id: {measure: (rates or None, where they come from / why not)}}."""
  out: dict[str, dict[str, tuple[correction.Rates | None, str]]] = {}
  reading_error = matcher_rates(matcher)
  # The gate the run's referee applied (one for the whole run).
  floor = referee_quality.run_tag_floor(run.records)
  deed = referee_quality.run_tag_deed(run.records)
  doer = referee_quality.run_tag_doer(run.records)
  look = referee_quality.run_tag_look(run.records)
  model = reading.referee_model(run.run) or None
  policy = run_policy.of_run(run.run)
  # A run on another embedder than the one the referee's error was
  # measured with (run.json's `embedder`): that error does not hold.
  ran_with = embedder_identity.identity_of_run(run.run)
  ran_with = None if embedder_identity.is_measured_default(ran_with) else (
      ran_with)
  for t in matcher.targets:
    belief, belief_note = reading_error[t.id]
    if not run.has_norms:
      belief, belief_note = None, "no norm databases (baseline): no belief"
    referee = referee_quality.rates(
        t, run.scenario, floor=floor, deed=deed, doer=doer, look=look,
        model=model, scenario_path=run.run.get("scenario_path"),
        run_dir=run.path, policy=policy)
    behaviour = (referee.rates, referee.note)
    if ran_with is not None:
      behaviour = (None, f"the run's referee gated with {ran_with.name}, and "
                   "its error was measured with all-MiniLM-L6-v2's gates: "
                   "behaviour not corrected")
    out[t.id] = {"belief": (belief, belief_note), "behaviour": behaviour}
  return out


def _present(f: Sequence[bool | None], k: Sequence[int] | None
             ) -> tuple[list[bool], list[int] | None]:
  """The flags (and counts of norms) of the agents present: an absent
  agent's flag is None."""
  keep = [i for i, x in enumerate(f) if x is not None]
  return ([bool(f[i]) for i in keep],
          None if k is None else [k[i] for i in keep])


def _series(flags: Sequence[Sequence[bool | None] | None],
            norms: Sequence[Sequence[int] | None] | None,
            rates: correction.Rates | None) -> list[correction.Estimate]:
  """One estimate per step; steps whose agents' state did not change reuse
  the previous step's (the bootstrap is seeded, so it would repeat it)."""
  out: list[correction.Estimate] = []
  last_key: Any = object()
  last = correction.NAN_ESTIMATE
  for i, f in enumerate(flags):
    k = norms[i] if norms is not None else None
    if f is None or (norms is not None and k is None):
      out.append(correction.NAN_ESTIMATE)
      continue
    key = (tuple(f), tuple(k) if k is not None else None)
    if key != last_key:
      here, counts = _present(f, k)
      last = correction.estimate(
          np.asarray([here]), rates,
          None if counts is None else np.asarray([counts]))
      last_key = key
    out.append(last)
  return out


def per_step_columns(belief: dict[str, Any], behaviour: dict[str, Any],
                     rates: dict[str, dict[str, tuple[Any, str]]]
                     ) -> dict[str, list[float]]:
  """The corrected columns of the per-step table."""
  columns: dict[str, list[float]] = {}
  for tid, by_measure in rates.items():
    for measure in MEASURES:
      rate, _ = by_measure[measure]
      if measure == "belief":
        series = _series(belief["flags"][tid], belief["norms"], rate)
      else:
        series = _series(behaviour["flags"][tid], None, rate)
      names = columns_of(measure, tid)
      columns[names[0]] = [e.corrected for e in series]
      columns[names[1]] = [e.low for e in series]
      columns[names[2]] = [e.high for e in series]
  return columns


def summary_block(rates: dict[str, dict[str, tuple[Any, str]]],
                  belief: dict[str, Any], behaviour: dict[str, Any]
                  ) -> dict[str, Any]:
  """Per target and measure: the counts, the note, the final estimate."""
  out: dict[str, Any] = {"split": SPLIT, "method": (
      "Rogan-Gladen per agent (k norms each for belief), 95% percentile "
      "interval over Jeffreys draws of sensitivity/specificity and a "
      "bootstrap of agents (runs when pooled)"), "targets": {}}
  for tid, by_measure in rates.items():
    entry = {}
    for measure in MEASURES:
      rate, note = by_measure[measure]
      flags = (belief if measure == "belief" else behaviour)["flags"][tid]
      norms = belief["norms"] if measure == "belief" else None
      final = (_series(flags[-1:], norms[-1:] if norms else None, rate)[0]
               if flags else correction.NAN_ESTIMATE)
      entry[measure] = {"rates": rate.describe() if rate else None,
                        "note": note, "final": final.as_dict()}
    out["targets"][tid] = entry
  return out


def pooled_estimate(flags: Sequence[Sequence[bool | None] | None],
                    norms: Sequence[Sequence[int] | None] | None,
                    rates: correction.Rates | None,
                    confidence: float = correction.CONFIDENCE
                    ) -> correction.Estimate:
  """One estimate over several runs' agents (rows: runs), runs as clusters.
  Runs without a value (None) are left out; runs must have equal agents
  present."""
  keep = [i for i, f in enumerate(flags) if f is not None
          and (norms is None or norms[i] is not None)]
  if not keep:
    return correction.NAN_ESTIMATE
  rows = [_present(flags[i], None if norms is None else norms[i])
          for i in keep]
  sizes = {len(f) for f, _ in rows}
  if len(sizes) != 1:
    return correction.NAN_ESTIMATE
  f = np.asarray([f for f, _ in rows], dtype=bool)
  k = None if norms is None else np.asarray([k for _, k in rows])
  return correction.estimate(f, rates, k, confidence=confidence)


def finite(value: float) -> float | None:
  return None if value is None or math.isnan(value) else float(value)

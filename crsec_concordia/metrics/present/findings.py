"""The paper's findings, each decided from the numbers by a stated rule.

Every finding is `holds`, `does not hold` or `cannot tell`, with the
numbers it was decided on and its rule in words (both go into
docs/results/README.md). All of them are `cannot tell` when there are fewer
than MIN_SEEDS normative runs or a run stopped before its last step: a
finding about the end of day 2 says nothing from a run that never got there.
The rule's verdict on those runs alone is kept then as `reading`, and the
numbers say it.

Shares at the end are pooled over the normative runs (runs as bootstrap
clusters) and corrected for the measured error of the matcher (belief) and
of the referee (behaviour, where it was measured; otherwise the raw share
with its run-bootstrap interval, and the numbers say "raw"). A share
finding holds when the whole 95% interval is at or above its line, does not
hold when the whole interval is below, and cannot be told otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from crsec_concordia.metrics.classifiers import corrected, correction
from crsec_concordia.metrics.classifiers.correction import Estimate
from crsec_concordia.metrics.measure import run_metrics

MIN_SEEDS = 3
HOLDS, FAILS, UNSURE = "holds", "does not hold", "cannot tell"
Runs = dict[str, list[run_metrics.RunMetrics]]


def _pooled(ms: Sequence[run_metrics.RunMetrics], measure: str, tid: str,
            index: int = -1) -> Estimate:
  if not ms:
    return correction.NAN_ESTIMATE
  flags = [m.agent_flags.get(measure, {}).get(tid, [None])[index] for m in ms]
  norms = ([m.agent_flags["norms"][index] for m in ms]
           if measure == "belief" else None)
  rates = ms[0].rates.get(tid, {}).get(measure, (None, ""))[0]
  return corrected.pooled_estimate(flags, norms, rates)


def _interval(e: Estimate) -> tuple[float, float, float, str]:
  """(value, low, high, kind): corrected where measured, else raw."""
  if not math.isnan(e.corrected) and not math.isnan(e.low):
    return e.corrected, e.low, e.high, "corrected"
  return e.raw, e.raw_low, e.raw_high, "raw"


def _against(e: Estimate, line: float) -> str:
  _, low, high, _ = _interval(e)
  if math.isnan(low):
    return UNSURE
  return HOLDS if low >= line else FAILS if high < line else UNSURE


def _show(e: Estimate) -> str:
  value, low, high, kind = _interval(e)
  if math.isnan(value):
    return "not measured"
  return f"{value:.0%} [{low:.0%}, {high:.0%}] {kind}"


def _all(verdicts: Sequence[str]) -> str:
  if not verdicts:
    return UNSURE
  if all(v == HOLDS for v in verdicts):
    return HOLDS
  return FAILS if FAILS in verdicts else UNSURE


def _guard(runs: Runs) -> str | None:
  normative = runs.get("normative", [])
  if len(normative) < MIN_SEEDS:
    return f"{len(normative)} normative run(s), fewer than {MIN_SEEDS}"
  short = [m for ms in runs.values() for m in ms
           if m.run.run.get("completed_steps") != m.run.run.get("max_steps")
           or m.run.run.get("status") != "completed"]
  if short:
    return f"{len(short)} run(s) incomplete"
  return None


def _targets(runs: Runs) -> list[Any]:
  first = next((ms[0] for ms in runs.values() if ms), None)
  return list(first.run.targets) if first else []


def _end(ms: Sequence[run_metrics.RunMetrics]) -> str:
  """When the runs end ("; at Day 1 10:15, the runs' end"), so that a
  verdict "at the end" of a short scenario is not read as the paper's two
  days; empty if unknown."""
  ends = sorted({m.per_step["time"].iloc[-1] for m in ms
                 if not m.per_step.empty and "time" in m.per_step})
  return f"; at {', '.join(ends)}, the runs' end" if ends else ""


def _emerge(runs: Runs) -> dict[str, Any]:
  n = runs.get("normative", [])
  ests = {t.id: _pooled(n, "belief", t.id) for t in _targets(runs)}
  return {"finding": "Target norms emerge (each held by >= 50% at the end)",
          "verdict": _all([_against(e, 0.5) for e in ests.values()]),
          "numbers": "; ".join(f"{t}: {_show(e)}" for t, e in ests.items())
                     + _end(n),
          "rule": "holds when every target's final belief interval is >= "
                  "50%; does not hold when one is wholly below"}


def _injunctive(runs: Runs) -> dict[str, Any]:
  n = runs.get("normative", [])
  targets = [t for t in _targets(runs) if t.type == "injunctive"]
  day = (n[0].per_step["day"].iloc[-1] if n and not n[0].per_step.empty
         else 0)
  verdicts, numbers = [], []
  for t in targets:
    b, a = _pooled(n, "belief", t.id), _pooled(n, "behaviour", t.id)
    verdicts += [_against(b, 0.9), _against(a, 0.9)]
    numbers.append(f"{t.id}: holds {_show(b)}, complies {_show(a)}")
  verdict = _all(verdicts) if day >= 2 else UNSURE
  return {"finding": "Injunctive norms held and complied with by the end of "
                     "day 2 (>= 90%)", "verdict": verdict,
          "numbers": "; ".join(numbers) + (
              "" if day >= 2 else f"; the runs end on day {day}" if n
              else "; no normative run"),
          "rule": "holds when, for every injunctive target, the final "
                  "belief and behaviour (complying, all agents) intervals "
                  "are >= 90% and the runs reach day 2; does not hold when "
                  "one is wholly below"}


def _per_hour_mean(ms: Sequence[run_metrics.RunMetrics], column: str
                   ) -> np.ndarray:
  rows = [m.per_hour[column].to_numpy(float) for m in ms
          if column in m.per_hour]
  if not rows:
    return np.array([])
  width = min(len(r) for r in rows)
  return np.nanmean([r[:width] for r in rows], axis=0)


def _conflicts(runs: Runs) -> dict[str, Any]:
  hours = _per_hour_mean(runs.get("normative", []), "conflicts")
  rule = ("holds when the normative arm's mean conflicts per hour peak "
          "before the last hour and the last hour is <= 25% of the peak; "
          "does not hold when the last hour is >= 75% of the peak or there "
          "are none")
  if len(hours) < 3:
    return {"finding": "Conflicts rise then fall", "verdict": UNSURE,
            "numbers": f"{len(hours)} hour(s)", "rule": rule}
  peak, where, last = float(hours.max()), int(hours.argmax()), float(hours[-1])
  verdict = (FAILS if peak == 0 or last >= 0.75 * peak else
             HOLDS if where < len(hours) - 1 and last <= 0.25 * peak
             else UNSURE)
  return {"finding": "Conflicts rise then fall", "verdict": verdict,
          "numbers": f"per hour {', '.join(f'{h:.1f}' for h in hours)}; "
                     f"peak {peak:.1f} in hour {where + 1}, last {last:.1f}",
          "rule": rule}


def _minutes(m: run_metrics.RunMetrics, tid: str, measure: str) -> float:
  hit = m.summary["targets"][tid]["time_to"][measure]["50%"]
  return float(hit["elapsed_minutes"]) if hit else math.inf


def _descriptive_later(runs: Runs) -> dict[str, Any]:
  n = runs.get("normative", [])
  targets = _targets(runs)
  desc = [t for t in targets if t.type == "descriptive"]
  inj = [t for t in targets if t.type == "injunctive"]
  rule = ("median over normative runs of the minutes to 50% belief (never = "
          "infinite): holds when each descriptive target's is later than "
          "every injunctive one's, does not hold when earlier than all")
  if not desc or not inj or not n:
    return {"finding": "Descriptive norms emerge later", "verdict": UNSURE,
            "numbers": "no descriptive or injunctive target", "rule": rule}
  med = {t.id: float(np.median([_minutes(m, t.id, "belief") for m in n]))
         for t in targets}
  if all(math.isinf(v) for v in med.values()):
    verdict = UNSURE
  else:
    verdict = _all([HOLDS if med[d.id] > max(med[i.id] for i in inj) else
                    FAILS if med[d.id] < min(med[i.id] for i in inj) else
                    UNSURE for d in desc])
  return {"finding": "Descriptive norms emerge later", "verdict": verdict,
          "numbers": "; ".join(f"{k}: {v:.0f} min" if not math.isinf(v)
                               else f"{k}: never" for k, v in med.items()),
          "rule": rule}


def _belief_first(runs: Runs) -> dict[str, Any]:
  n = runs.get("normative", [])
  verdicts, numbers = [], []
  for t in (t for t in _targets(runs) if t.type == "injunctive"):
    lags = [_minutes(m, t.id, "behaviour") - _minutes(m, t.id, "belief")
            for m in n]
    lags = [x for x in lags if not math.isnan(x)]  # inf - inf: neither
    if not lags:
      verdicts.append(UNSURE)
      numbers.append(f"{t.id}: 50% reached by neither")
      continue
    median = float(np.median(lags))
    verdicts.append(HOLDS if median > 0 else FAILS if median < 0 else UNSURE)
    numbers.append(f"{t.id}: median lag {median:.0f} min" if
                   not math.isinf(median) else
                   f"{t.id}: behaviour never reached 50% (belief did)"
                   if median > 0 else f"{t.id}: belief never reached 50%")
  return {"finding": "Belief before behaviour (held before complied with)",
          "verdict": _all(verdicts), "numbers": "; ".join(numbers),
          "rule": "per injunctive target, the median over normative runs of "
                  "(minutes to 50% behaviour - minutes to 50% belief): holds "
                  "when > 0 for all, does not hold when < 0 for one"}


def _unseeded(runs: Runs) -> dict[str, Any]:
  n = runs.get("normative", [])
  found = [any(not e.get("seeded") for e in m.summary["emergent_norms"])
           for m in n]
  share = sum(found) / len(found) if found else math.nan
  verdict = (UNSURE if not found else HOLDS if share >= 0.5
             else FAILS if share == 0 else UNSURE)
  examples = [e["representative"] for m in n for e in m.summary[
      "emergent_norms"] if not e.get("seeded")][:3]
  return {"finding": "Norms nobody seeded emerge", "verdict": verdict,
          "numbers": f"{sum(found)} of {len(found)} normative runs"
                     + (f"; e.g. {'; '.join(examples)}" if examples else "")
                     + _end(n),
          "rule": "an unseeded norm held by >= 2 agents at the end (emergent "
                  "norms): holds in >= half the normative runs, does not "
                  "hold in none"}


def decide_findings(runs: Runs) -> list[dict[str, Any]]:
  """The paper's six findings for one group of runs (by arm)."""
  out = [f(runs) for f in (_emerge, _injunctive, _conflicts,
                           _descriptive_later, _belief_first, _unseeded)]
  guard = _guard(runs)
  if guard:
    for f in out:
      # What the rule says of these runs alone is kept beside the verdict
      # (`reading`): with one seed per arm a reader still wants to know
      # which way the numbers point, but a run's own interval carries only
      # its agents and the measurement, not how another seed would differ.
      f["reading"] = f["verdict"]
      f["verdict"] = UNSURE
      f["numbers"] = (f"{f['numbers']} (cannot tell: {guard}; the rule on "
                      f"these runs alone: {f['reading']})")
  return out


def final_estimates(runs: Runs) -> dict[str, Any]:
  """Per arm, target and measure: the pooled final estimate."""
  return {arm: {t.id: {measure: _pooled(ms, measure, t.id).as_dict()
                       for measure in corrected.MEASURES}
                for t in _targets(runs)}
          for arm, ms in runs.items()}

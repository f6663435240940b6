"""The paper's findings, each decided from the numbers by a stated rule.

Every finding is `holds`, `does not hold` or `cannot tell`, with the
numbers it was decided on and its rule in words (both go into
docs/results/README.md). Each is decided from one number per normative seed
(per target) by a sequential rule (sequential.py): a one-sided test at the
level of the look, so that a compare that adds seeds until its findings
are decided (`crsec compare --until-decided`) says "holds" of a finding that
does not at most sequential.ALPHA of the time; a plain compare is one look.
All of them are `cannot tell` when there are fewer normative runs than the
design's first look or a run stopped before its last step: a finding about
the end of day 2 says nothing from a run that never got there. The rule's
verdict on those runs alone is kept then as `reading`, and the numbers say
it. A finding the venue cannot decide (about day 2 on a venue whose runs
end on day 1, about descriptive norms on a venue with none) says why in
`venue`; one still undecided gives in `seeds_needed` how many seeds the
observed mean and spread would need.

A share finding also needs the shares pooled over the normative runs (runs
as bootstrap clusters) and corrected for the measured error of the matcher
(belief) and of the referee (behaviour, where it was measured; otherwise
the raw share with its run-bootstrap interval, and the numbers say "raw")
to lie on the same side of the line at the look's level: the seeds' test
uses the error's point figures, the pooled interval carries its
uncertainty. The numbers show the pooled estimate with its 95% interval.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from crsec_concordia.metrics.classifiers import corrected, correction
from crsec_concordia.metrics.classifiers.correction import Estimate
from crsec_concordia.metrics.measure import run_metrics
from crsec_concordia.metrics.present import finding_rules as rules
from crsec_concordia.metrics.present import sequential, stated_report
from crsec_concordia.metrics.present.sequential import Design, Part

MIN_SEEDS = sequential.FIRST
HOLDS, FAILS, UNSURE = "holds", "does not hold", "cannot tell"
Runs = dict[str, list[run_metrics.RunMetrics]]


def _pooled(ms: Sequence[run_metrics.RunMetrics], measure: str, tid: str,
            index: int = -1, confidence: float = correction.CONFIDENCE
            ) -> Estimate:
  if not ms:
    return correction.NAN_ESTIMATE
  flags = [m.agent_flags.get(measure, {}).get(tid, [None])[index] for m in ms]
  norms = ([m.agent_flags["norms"][index] for m in ms]
           if measure == "belief" else None)
  rates = ms[0].rates.get(tid, {}).get(measure, (None, ""))[0]
  return corrected.pooled_estimate(flags, norms, rates, confidence)


def _interval(e: Estimate) -> tuple[float, float, float, str]:
  """(value, low, high, kind): corrected where measured, else raw."""
  if not math.isnan(e.corrected) and not math.isnan(e.low):
    return e.corrected, e.low, e.high, "corrected"
  return e.raw, e.raw_low, e.raw_high, "raw"


def _show(e: Estimate) -> str:
  value, low, high, kind = _interval(e)
  if math.isnan(value):
    return "not measured"
  return f"{value:.0%} [{low:.0%}, {high:.0%}] {kind}"


def _verdict(holds: bool, fails: bool) -> str:
  return HOLDS if holds else FAILS if fails else UNSURE


def _guard(runs: Runs, design: Design) -> str | None:
  normative = runs.get("normative", [])
  if len(normative) < design.first:
    return f"{len(normative)} normative run(s), fewer than {design.first}"
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


def _share_part(ms: Sequence[run_metrics.RunMetrics], measure: str,
                tid: str, line: float, design: Design) -> Part:
  """The seeds' final shares against `line` (rules.shares), and the
  pooled corrected interval at the look's level on the same side."""
  seeds = [_pooled([m], measure, tid) for m in ms]
  values = np.array([_interval(e)[0] for e in seeds], dtype=float)
  values = values[np.isfinite(values)]
  if not values.size:
    return Part(False, False, False, None)
  agents = min(e.agents for e in seeds if e.agents)
  level = design.level(len(ms))
  above, below = rules.shares(values[None], line, agents, level)
  part = Part(bool(above), bool(below), float(values.mean()) < line,
              sequential.mean_needed(values, line, rules.share_floor(
                  line, agents), design))
  if not (part.above or part.below):
    return part
  _, low, high, _ = _interval(_pooled(ms, measure, tid,
                                      confidence=1 - 2 * level))
  return dataclasses.replace(part, above=part.above and low >= line,
                             below=part.below and high < line)


def _decided(parts: list[Part]) -> tuple[str, int | None]:
  holds, fails, needed = sequential.combine(parts)
  return _verdict(holds, fails), needed


def _part(values: Any, floor: float, design: Design) -> Part:
  """A difference of minutes against 0, for its seeds needed."""
  v = np.asarray(values, dtype=float)
  return Part(False, False, float(v.mean()) < 0,
              sequential.mean_needed(v, 0.0, floor, design))


def _emerge(runs: Runs, design: Design) -> dict[str, Any]:
  n = runs.get("normative", [])
  targets = _targets(runs)
  verdict, needed = _decided([_share_part(n, "belief", t.id, rules.EMERGE,
                                           design)
                              for t in targets])
  return {"finding": "Target norms emerge (each held by >= 50% at the end)",
          "verdict": verdict, "seeds_needed": needed,
          "numbers": "; ".join(f"{t.id}: {_show(_pooled(n, 'belief', t.id))}"
                               for t in targets) + _end(n),
          "rule": "per target, the seeds' final belief shares: holds when "
                  "every target's mean is shown >= 50%, does not hold when "
                  "one is shown below",
          # Beside it, net of the start and of the baseline: did_*.
          **stated_report.did_finding(runs, design)}


def _injunctive(runs: Runs, design: Design) -> dict[str, Any]:
  n = runs.get("normative", [])
  targets = [t for t in _targets(runs) if t.type == "injunctive"]
  day = (n[0].per_step["day"].iloc[-1] if n and not n[0].per_step.empty
         else 0)
  parts, numbers = [], []
  for t in targets:
    b, a = _pooled(n, "belief", t.id), _pooled(n, "behaviour", t.id)
    parts += [_share_part(n, measure, t.id, rules.INJUNCTIVE, design)
              for measure in ("belief", "behaviour")]
    numbers.append(f"{t.id}: holds {_show(b)}, complies {_show(a)}")
  verdict, needed = _decided(parts)
  venue = (None if day >= 2 else f"the runs end on day {day}" if n
           else "no normative run")
  out = {"finding": "Injunctive norms held and complied with by the end of "
                    "day 2 (>= 90%)",
         "verdict": UNSURE if venue else verdict,
         "seeds_needed": None if venue else needed,
         "numbers": "; ".join(numbers) + (f"; {venue}" if venue else ""),
         "rule": "per injunctive target, the seeds' final belief and "
                 "behaviour (complying, all agents) shares: holds when "
                 "every mean is shown >= 90% and the runs reach day 2; does "
                 "not hold when one is shown below"}
  if venue and n:
    out["venue"] = f"the runs end on day {day}, before day 2"
  return out


def _per_hour_mean(ms: Sequence[run_metrics.RunMetrics], column: str
                   ) -> np.ndarray:
  rows = [m.per_hour[column].to_numpy(float) for m in ms
          if column in m.per_hour]
  if not rows:
    return np.array([])
  width = min(len(r) for r in rows)
  return np.nanmean([r[:width] for r in rows], axis=0)


def _falls(ms: Sequence[run_metrics.RunMetrics]
           ) -> tuple[list[float], list[float]]:
  """Per seed, its last hour's conflicts as a share of its peak hour's (1
  with no conflict: nothing fell), and its peak hour's conflicts."""
  ratios, peaks = [], []
  for m in ms:
    hours = np.nan_to_num(m.per_hour["conflicts"].to_numpy(float)
                          if "conflicts" in m.per_hour else np.array([]))
    peak = float(hours.max()) if hours.size else 0.0
    ratios.append(float(hours[-1]) / peak if peak > 0 else 1.0)
    peaks.append(peak)
  return ratios, peaks


def _conflicts(runs: Runs, design: Design) -> dict[str, Any]:
  n = runs.get("normative", [])
  hours = _per_hour_mean(n, "conflicts")
  rule = ("per seed, the last hour's conflicts as a share of its peak "
          "hour's (1 when there are none): holds when the mean is shown <= "
          "25%, does not hold when shown >= 75% (spread floored at the "
          "Poisson one of the mean peak's count at the line)")
  out = {"finding": "Conflicts rise then fall", "verdict": UNSURE,
         "seeds_needed": None, "rule": rule}
  if len(hours) < 3:
    out["numbers"] = f"{len(hours)} hour(s)"
    if n:
      out["venue"] = f"the runs last {len(hours)} hour(s), fewer than 3"
    return out
  ratios, peaks = _falls(n)
  fell, rose = rules.falls(np.array(ratios), np.array(peaks),
                           design.level(len(n)))
  out["verdict"] = _verdict(bool(fell), bool(rose))
  mean, peak = float(np.mean(ratios)), float(np.mean(peaks))
  if out["verdict"] == UNSURE:
    line = (rules.FALLEN if mean < rules.FALLEN else rules.RISEN
            if mean > rules.RISEN else None)
    out["seeds_needed"] = line and sequential.mean_needed(
        ratios, line, float(rules.fall_floor(line, peak)), design)
  out["numbers"] = (f"mean per hour {', '.join(f'{h:.1f}' for h in hours)}; "
                    f"last hour / peak per seed "
                    f"{', '.join(f'{r:.0%}' for r in ratios)} (mean "
                    f"{mean:.0%})")
  return out


def _minutes(m: run_metrics.RunMetrics, tid: str, measure: str) -> float:
  """Minutes to 50%; never reaching it counts as reaching it a slot after
  the run's end (the least it could be), so that every seed has a number."""
  hit = m.summary["targets"][tid]["time_to"][measure]["50%"]
  if hit:
    return float(hit["elapsed_minutes"])
  return float(m.per_step["elapsed_minutes"].iloc[-1]
               + m.run.clock.minutes_per_step) if not m.per_step.empty else (
                   math.nan)


def _clock_floor(ms: Sequence[run_metrics.RunMetrics]) -> float:
  return rules.clock_floor(max((m.run.clock.minutes_per_step for m in ms),
                               default=1))


def _descriptive_later(runs: Runs, design: Design) -> dict[str, Any]:
  n = runs.get("normative", [])
  targets = _targets(runs)
  desc = [t for t in targets if t.type == "descriptive"]
  inj = [t for t in targets if t.type == "injunctive"]
  rule = ("per seed, the minutes to 50% belief (never: a slot after the "
          "end) of each descriptive target minus the latest (for holds) or "
          "earliest (for does not hold) injunctive one's: holds when every "
          "descriptive target's mean is shown > 0, does not hold when "
          "one's is shown < 0")
  out = {"finding": "Descriptive norms emerge later", "verdict": UNSURE,
         "seeds_needed": None, "rule": rule}
  if not desc or not inj or not n:
    out["numbers"] = "no descriptive or injunctive target"
    if n:
      out["venue"] = "the venue has no descriptive or no injunctive target"
    return out
  times = {t.id: [_minutes(m, t.id, "belief") for m in n] for t in targets}
  latest = np.max([times[i.id] for i in inj], axis=0)
  earliest = np.min([times[i.id] for i in inj], axis=0)
  floor = _clock_floor(n)
  after_latest = np.array([times[d.id] for d in desc]) - latest
  after_earliest = np.array([times[d.id] for d in desc]) - earliest
  holds, fails = rules.later(after_latest, after_earliest, floor,
                             design.level(len(n)))
  out["verdict"] = _verdict(bool(holds), bool(fails))
  if out["verdict"] == UNSURE:
    # Each target toward the side its numbers lean.
    _, _, out["seeds_needed"] = sequential.combine([
        _part(a if a.mean() > 0 else e, floor, design)
        for a, e in zip(after_latest, after_earliest)])
  out["numbers"] = "; ".join(f"{k}: mean {np.mean(v):.0f} min"
                             for k, v in times.items())
  return out


def _belief_first(runs: Runs, design: Design) -> dict[str, Any]:
  n = runs.get("normative", [])
  targets = [t for t in _targets(runs) if t.type == "injunctive"]
  lags = np.array([[_minutes(m, t.id, "behaviour")
                    - _minutes(m, t.id, "belief") for m in n]
                   for t in targets]).reshape(len(targets), len(n))
  floor = _clock_floor(n)
  out = {"finding": "Belief before behaviour (held before complied with)",
         "numbers": "; ".join(f"{t.id}: mean lag {np.mean(v):.0f} min"
                              for t, v in zip(targets, lags) if v.size)
                    or "no injunctive target or run",
         "rule": "per injunctive target and seed, minutes to 50% behaviour "
                 "minus minutes to 50% belief (never: a slot after the end):"
                 " holds when every target's mean is shown > 0, does not "
                 "hold when one's is shown < 0"}
  holds, fails = (rules.lags(lags, floor, design.level(len(n)))
                  if lags.size else (False, False))
  out["verdict"] = _verdict(bool(holds), bool(fails))
  out["seeds_needed"] = sequential.combine(
      [_part(v, floor, design) for v in lags])[2] if lags.size else None
  if not targets and n:
    out["venue"] = "the venue has no injunctive target"
  return out


def _unseeded(runs: Runs, design: Design) -> dict[str, Any]:
  n = runs.get("normative", [])
  found = [any(not e.get("seeded") for e in m.summary["emergent_norms"])
           for m in n]
  holds, fails = (rules.seen(found, design.level(len(found))) if found
                  else (False, False))
  verdict = _verdict(bool(holds), bool(fails))
  needed = (sequential.rate_needed(sum(found), len(found), rules.HALF, design)
            if found else None)
  examples = [e["representative"] for m in n for e in m.summary[
      "emergent_norms"] if not e.get("seeded")][:3]
  return {"finding": "Norms nobody seeded emerge", "verdict": verdict,
          "seeds_needed": needed,
          "numbers": f"{sum(found)} of {len(found)} normative runs"
                     + (f"; e.g. {'; '.join(examples)}" if examples else "")
                     + _end(n),
          "rule": "an unseeded norm held by >= 2 agents at the end (emergent "
                  "norms): holds when the share of seeds with one is shown "
                  ">= half (exact binomial), does not hold when shown below"}


FINDINGS = (_emerge, _injunctive, _conflicts, _descriptive_later,
            _belief_first, _unseeded)


def decide_findings(runs: Runs, design: Design | None = None
                    ) -> list[dict[str, Any]]:
  """The paper's six findings for one group of runs (by arm), at the look
  of `design` their normative seeds make (default: one look at them)."""
  seeds = len(runs.get("normative", []))
  design = design or Design.fixed(max(seeds, MIN_SEEDS))
  guard = _guard(runs, design)
  out = [f(runs, design if not guard else Design.fixed(max(seeds, 1)))
         for f in FINDINGS]
  for f in out:
    if guard:
      # What the rule says of these runs alone is kept beside the verdict
      # (`reading`): with few seeds a reader still wants to know which way
      # the numbers point, but they are too few for the design's first look.
      f["reading"] = f["verdict"]
      f["verdict"] = UNSURE
      if "did_verdict" in f:
        f["did_reading"], f["did_verdict"] = f["did_verdict"], UNSURE
      f["numbers"] = (f"{f['numbers']} (cannot tell: {guard}; the rule on "
                      f"these runs alone: {f['reading']})")
    if f["verdict"] != UNSURE:
      f["seeds_needed"] = None
    elif f.get("seeds_needed") and not f.get("venue"):
      f["numbers"] += (f"; about {f['seeds_needed']} seeds would decide it "
                       "if the mean and spread stayed")
  return out


def undecided(decided: list[dict[str, Any]]) -> list[str]:
  """The findings still to decide: not decided, and not beyond the venue."""
  return [f["finding"] for f in decided
          if f["verdict"] == UNSURE and not f.get("venue")]


def final_estimates(runs: Runs) -> dict[str, Any]:
  """Per arm, target and measure: the pooled final estimate."""
  return {arm: {t.id: {measure: _pooled(ms, measure, t.id).as_dict()
                       for measure in corrected.MEASURES}
                for t in _targets(runs)}
          for arm, ms in runs.items()}

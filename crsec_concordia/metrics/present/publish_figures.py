"""Figures for docs/results/: the paper's Figure 2 analog, small PNGs.

Per target norm, over simulated time: the normative arm's belief and
behaviour (raw mean over runs as lines; corrected pooled estimates with
their 95% interval as a band where the classifier's error was measured)
and the baseline's behaviour; and conflicts per simulated hour, normative
against baseline. A line of one run says "one run". 100 dpi and a few
colours keep each PNG far below 300 KB, small enough to sit in the
repository.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from crsec_concordia.metrics.classifiers import corrected
from crsec_concordia.metrics.measure import run_metrics
from crsec_concordia.metrics.present import figures

Runs = dict[str, list[run_metrics.RunMetrics]]
DPI = 100


def _mean(ms: Sequence[run_metrics.RunMetrics], column: str, width: int
          ) -> np.ndarray:
  rows = [m.per_step[column].to_numpy(float)[:width] for m in ms
          if column in m.per_step]
  if not rows:
    return np.full(width, np.nan)
  with np.errstate(all="ignore"):
    with warnings.catch_warnings():
      warnings.simplefilter("ignore", RuntimeWarning)
      return np.nanmean(rows, axis=0)


def _band(ms: Sequence[run_metrics.RunMetrics], measure: str, tid: str,
          width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Pooled corrected estimate per step (runs as clusters)."""
  rates = ms[0].rates.get(tid, {}).get(measure, (None, ""))[0]
  if rates is None:
    nan = np.full(width, np.nan)
    return nan, nan, nan
  values, cache = [], {}
  for i in range(width):
    flags = [m.agent_flags.get(measure, {}).get(tid, [None] * width)[i]
             for m in ms]
    norms = ([m.agent_flags["norms"][i] for m in ms]
             if measure == "belief" else None)
    key = repr((flags, norms))
    if key not in cache:
      cache[key] = corrected.pooled_estimate(flags, norms, rates)
    values.append(cache[key])
  return (np.array([e.corrected for e in values], float),
          np.array([e.low for e in values], float),
          np.array([e.high for e in values], float))


def adoption_over_seeds(runs: Runs, target, index: int) -> bytes | None:
  normative, baseline = runs.get("normative", []), runs.get("baseline", [])
  base = normative or baseline
  if not base:
    return None
  width = min(len(m.per_step) for ms in runs.values() for m in ms)
  x = base[0].per_step["elapsed_minutes"].to_numpy()[:width]
  fig = figures.canvas(8.0, 3.4)
  ax = fig.add_subplot()
  norm, other = figures.ARM_COLOURS["normative"], figures.ARM_COLOURS["baseline"]
  if normative:
    for measure, style, colour in (("belief", "-", norm),
                                   ("behaviour", "--", "#2ca02c")):
      raw = _mean(normative, f"{measure}.{target.id}", width)
      if np.isfinite(raw).any():
        ax.plot(x, raw, ls=style, color=colour, lw=1.2, alpha=0.6,
                label=f"normative {measure}, raw "
                f"({figures.runs_note(len(normative))})")
      value, low, high = _band(normative, measure, target.id, width)
      if np.isfinite(value).any():
        ax.plot(x, value, ls=style, color=colour, lw=2,
                label=f"normative {measure}, corrected (95% interval)")
        ax.fill_between(x, low, high, color=colour, alpha=0.15, lw=0)
  if baseline:
    raw = _mean(baseline, f"behaviour.{target.id}", width)
    ax.plot(x, raw, ls=":", color=other, lw=1.2, alpha=0.6,
            label=f"baseline behaviour, raw "
            f"({figures.runs_note(len(baseline))})")
    # The same correction as the normative arm's: the referee's false tags
    # (going out tagged as smoking outside) raise both arms' raw shares.
    value, low, high = _band(baseline, "behaviour", target.id, width)
    if np.isfinite(value).any():
      ax.plot(x, value, ls=":", color=other, lw=2,
              label="baseline behaviour, corrected (95% interval)")
      ax.fill_between(x, low, high, color=other, alpha=0.12, lw=0)
  ax.set_title(f"{target.text} ({target.type})", fontsize=10)
  ax.set_ylabel("share of agents")
  figures.share_axis(ax)
  figures.time_axis(ax, base[0].run.clock)
  # Beside the axes, not on them: the end of the last day, where the
  # findings are read, stays in sight.
  ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
  return figures.png(fig, DPI)


def _hourly(m, columns: Sequence[str]) -> np.ndarray | None:
  """The per-hour sum of `columns` in one run (None if it has none)."""
  present = [c for c in columns if c in m.per_hour]
  if not present or not len(m.per_hour):
    return None
  return m.per_hour[present].to_numpy(float).sum(axis=1)


def _hourly_bars(runs: Runs, columns_of, title: str, ylabel: str
                 ) -> bytes | None:
  """Per arm, bars of the per-hour sum of a run's `columns_of(m)` (mean
  over runs, with the sd when there are several)."""
  fig = figures.canvas(8.0, 3.0)
  ax = fig.add_subplot()
  drawn = False
  for offset, (arm, colour) in zip((-0.2, 0.2), figures.ARM_COLOURS.items()):
    rows = [r for r in (_hourly(m, columns_of(m)) for m in runs.get(arm, []))
            if r is not None]
    if not rows:
      continue
    width = min(len(r) for r in rows)
    data = np.array([r[:width] for r in rows])
    mean = data.mean(axis=0)
    spread = data.std(axis=0, ddof=1) if len(rows) > 1 else None
    hours = np.arange(1, width + 1)
    ax.bar(hours + offset, mean, width=0.4, color=colour, yerr=spread,
           capsize=2, label=f"{arm} ({figures.runs_note(len(rows))}"
           + (", ± sd)" if len(rows) > 1 else ")"))
    drawn = True
  if not drawn:
    return None
  ax.set_xlabel("simulated hour of the run")
  ax.set_ylabel(ylabel)
  ax.set_title(title)
  ax.legend(fontsize=8)
  return figures.png(fig, DPI)


def conflicts_over_seeds(runs: Runs) -> bytes | None:
  """Conflicts the agents detected: a baseline agent detects none (it has
  no ConflictDetector), so this is the normative arm's own course."""
  return _hourly_bars(runs, lambda m: ["conflicts"], "Social conflicts per hour",
                      "conflicts per hour")


def violations(runs: Runs) -> bytes | None:
  """Deeds against the target norms in the referee's event record: the
  behaviour both arms can be compared on, hour by hour."""
  return _hourly_bars(
      runs, lambda m: [f"violations.{t.id}" for t in m.run.targets],
      "Deeds against the target norms per hour (referee's record, raw)",
      "violating deeds per hour")


def draw_group(runs: Runs, out: Path, slug: str) -> list[tuple[str, str]]:
  """Writes the group's PNGs; returns (path relative to out's parent,
  caption) pairs."""
  first = next(ms[0] for ms in runs.values() if ms)
  pictures = []
  for i, target in enumerate(first.run.targets):
    data = adoption_over_seeds(runs, target, i)
    if data:
      name = f"{slug}__{target.id}.png"
      (out / name).write_bytes(data)
      pictures.append((f"figures/{name}",
                       f"{target.text}: belief and behaviour adoption"))
  for kind, draw_kind, caption in (
      ("conflicts", conflicts_over_seeds,
       "Conflicts per simulated hour, normative vs baseline (baseline agents "
       "detect none)"),
      ("violations", violations,
       "Deeds against the target norms per simulated hour, normative vs "
       "baseline (the referee's record; a deed that goes on counts in "
       "every slot)")):
    data = draw_kind(runs)
    if data:
      name = f"{slug}__{kind}.png"
      (out / name).write_bytes(data)
      pictures.append((f"figures/{name}", caption))
  return pictures

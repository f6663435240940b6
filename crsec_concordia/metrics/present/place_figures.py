"""Figures of a society of places and groups: how a norm spreads across
them, and the tipping curve of committed agents' norm.

  across      one panel per target norm, one colour per place (or group):
              the share holding the norm (solid) and complying (dashed)
              over simulated time; the diffusion view across places
  tipping     the share of non-committed agents holding and following the
              committed agents' norm at the end (a committed minority's, or
              norm entrepreneurs'), against the committed agents' share,
              with its interval over seeds

Drawn with figures.py's canvas and axes (Agg, no pyplot).
"""

from __future__ import annotations

import re

from collections.abc import Sequence
from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from crsec_concordia.metrics.present import figures
from crsec_concordia.scenarios.loader import Clock


def across(frame: pd.DataFrame, per_step: pd.DataFrame,
           targets: Sequence[Any], clock: Clock, run: str, by: str,
           runs: int = 1) -> Figure | None:
  """Adoption over time per place (`by` "place") or group ("group") of
  one run, or the mean of `runs` runs (`run` then names them); None when
  there are no rows of that kind."""
  rows = frame[frame["by"] == by]
  if rows.empty:
    return None
  minutes = dict(zip(per_step["step"], per_step["elapsed_minutes"]))
  rows = rows.assign(x=rows["step"].map(minutes))
  keys = sorted(set(rows["where"]))
  n = max(1, len(targets))
  fig = figures.canvas(8.0, 2.8 * n)
  for i, t in enumerate(targets):
    ax = fig.add_subplot(n, 1, i + 1)
    mine = rows[rows["target"] == t.id]
    for j, key in enumerate(keys):
      line = mine[mine["where"] == key].sort_values("step")
      colour = figures.target_colour(j)
      label = key or "no group"
      if line["belief"].notna().any():
        ax.plot(line["x"], line["belief"], color=colour, lw=2,
                label=f"{label}: holds")
      ax.plot(line["x"], line["behaviour"], color=colour, lw=1.2, ls="--",
              label=f"{label}: complies")
    ax.set_title(f"{t.text} ({t.type})", fontsize=10)
    ax.set_ylabel(f"share of the {by}'s agents")
    figures.share_axis(ax)
    figures.time_axis(ax, clock)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
  title = (f"Adoption per {by}: holds (solid) and complies (dashed)")
  fig.suptitle(figures.one_run(title, run) if runs == 1 else
               f"{title}\n({run}: {figures.runs_note(runs)})")
  fig.tight_layout()
  return fig


def _series(condition: str) -> str:
  """The line a condition is a point of: its name without the trailing
  share (ring_20 and ring_40 are points of `ring`; share_20 of `share`)."""
  return re.sub(r"_?\d+$", "", str(condition)) or str(condition)


def tipping(curve: pd.DataFrame, title: str) -> Figure:
  """The tipping curve: one line per scenario, endpoint and series of
  conditions (a sweep of two networks draws two), the mean over seeds per
  minority size with its interval as error bars, each seed's value as a
  dot."""
  fig = figures.canvas(6.5, 4.2)
  ax = fig.add_subplot()
  curve = curve.assign(series=[_series(c) for c in curve["condition"]])
  several = curve["series"].nunique() > 1
  for i, ((scenario, endpoint, series), part) in enumerate(
      curve.groupby(["scenario", "endpoint", "series"], sort=True)):
    part = part.sort_values("minority_share")
    colour = figures.target_colour(i)
    x = part["minority_share"].to_numpy(dtype=float)
    mean = part["mean"].to_numpy(dtype=float)
    low = (mean - part["ci_low"].fillna(part["mean"])).to_numpy(dtype=float)
    high = (part["ci_high"].fillna(part["mean"]) - mean).to_numpy(
        dtype=float)
    ax.errorbar(x, mean, yerr=[low, high], color=colour, marker="o",
                capsize=4, lw=2, label=f"{scenario} on {endpoint}"
                + (f", {series}" if several else ""))
    for share, values in zip(x, part["values"]):
      ax.scatter([share] * len(values), values, color=colour, s=12,
                 alpha=0.45, zorder=3)
  ax.set_xlabel("committed agents (share of all agents)")
  ax.set_ylabel("non-committed agents holding and\nfollowing the "
                "committed agents' norm")
  ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
  figures.share_axis(ax)
  ax.grid(alpha=0.3)
  ax.legend(fontsize=8, loc="upper left")
  ax.set_title(title, fontsize=10)
  fig.tight_layout()
  return fig

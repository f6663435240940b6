"""Figures in the spirit of the paper's Figure 2, as matplotlib Figures.

Matplotlib's object API with the Agg canvas (no pyplot, no global backend),
so figures can be drawn from any thread and on machines without a display;
`png` and `save` render them (PNG at print resolution, SVG and PDF with
their text kept as text). The x axis is simulated time (active minutes,
labelled "D1 09:00"), with the night between two simulated days marked by
a rule labelled with the day that begins. A figure of one run says so: a
line of one run is no mean, and its band no interval over runs.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch
from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator
from matplotlib.ticker import PercentFormatter

from crsec_concordia.metrics.measure import timeline
from crsec_concordia.scenarios.loader import Clock

ARM_COLOURS = {"normative": "#1f77b4", "baseline": "#d62728"}
TARGET_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
                  "#e377c2", "#17becf")
OTHER_COLOUR = "#999999"


def target_colour(index: int) -> str:
  return TARGET_COLOURS[index % len(TARGET_COLOURS)]


FORMATS = ("png", "svg", "pdf")
# Print resolution of a PNG; SVG and PDF are vector graphics.
PRINT_DPI = 200
# Text stays text: searchable, editable, and sharp at any size.
_VECTOR_TEXT = {"svg.fonttype": "none", "pdf.fonttype": 42}


def canvas(width: float = 8.0, height: float = 3.6) -> Figure:
  """An empty figure on the Agg canvas."""
  fig = Figure(figsize=(width, height), dpi=100)
  FigureCanvasAgg(fig)
  return fig


# The name crsec_concordia/sweeps/report.py draws with.
_figure = canvas


def render_figure(fig: Figure, fmt: str = "png",
                  dpi: int = PRINT_DPI) -> bytes:
  """The figure as PNG (at `dpi`), SVG or PDF bytes."""
  buffer = io.BytesIO()
  with matplotlib.rc_context(_VECTOR_TEXT):
    fig.savefig(buffer, format=fmt, bbox_inches="tight", dpi=dpi)
  return buffer.getvalue()


def png(fig: Figure, dpi: int = PRINT_DPI) -> bytes:
  return render_figure(fig, "png", dpi)


def save(fig: Figure, stem: Path, formats: Sequence[str]) -> list[Path]:
  """Writes STEM.<format> for each format; returns the paths."""
  paths = []
  for fmt in formats:
    path = stem.with_name(f"{stem.name}.{fmt}")
    path.write_bytes(render_figure(fig, fmt))
    paths.append(path)
  return paths


def runs_note(n: int) -> str:
  """What a line over `n` runs is: "one run" or "mean of n runs"."""
  return "one run" if n == 1 else f"mean of {n} runs"


def time_axis(ax: Any, clock: Clock, span: float | None = None) -> None:
  """Ticks on round simulated times (10 min to 8 h apart): "D1 09:00";
  a rule where a simulated day ends and the next begins."""
  length = timeline.day_length(clock)
  def label(x: float, _pos: int) -> str:
    if x > 0 and round(x) % length == 0:
      # The end of a day's window, not the start of the next day.
      end = timeline.minutes_of(clock.start) + length
      return f"D{round(x) // length} {end // 60:02d}:{end % 60:02d}"
    day, hhmm = timeline.at(clock, x)
    return f"D{day} {hhmm}"
  low, high = ax.get_xlim()
  if span is None:
    span = high - low
  every = next((m for m in (10, 20, 30, 60, 120, 240, 480) if span / m <= 8),
               960)
  ax.xaxis.set_major_locator(MultipleLocator(every))
  ax.xaxis.set_major_formatter(FuncFormatter(label))
  ax.set_xlabel("simulated time")
  ax.grid(alpha=0.3)
  _day_rules(ax, length, low, high)


def _day_rules(ax: Any, length: int, low: float, high: float) -> None:
  """The nights: elapsed minutes skip them, so day 2 would otherwise run on
  from day 1's last minute unmarked."""
  day = 1
  while day * length < high:
    x = day * length
    if x > low:
      ax.axvline(x, color="#555555", lw=0.9, ls="--", zorder=1)
      # Along the rule, halfway up: legends sit in the corners.
      ax.text(x, 0.5, f" Day {day + 1} ", transform=ax.get_xaxis_transform(),
              rotation=90, ha="left", va="center", fontsize=7,
              color="#333333", zorder=6,
              bbox={"facecolor": "white", "alpha": 0.7, "lw": 0, "pad": 1})
    day += 1
  ax.set_xlim(low, high)


def share_axis(ax: Any) -> None:
  ax.set_ylim(-0.03, 1.03)
  ax.yaxis.set_major_formatter(PercentFormatter(1.0))
  for level in (0.5, 0.9):
    ax.axhline(level, color="#bbbbbb", lw=0.8, ls=":")


# -- one run ---------------------------------------------------------------


def one_run(title: str, run: str) -> str:
  """A one-run figure's title: which run, and that it is one."""
  return f"{title}\n({run}: {runs_note(1)})"


def intervention_lines(ax: Any, marks: Sequence[tuple[float, str]]) -> None:
  """A vertical line at each intervention (elapsed minutes), its kind on
  top (metrics/measure/interventions.py: `marks`)."""
  for x, kind in marks:
    ax.axvline(x, color="#8e44ad", lw=1.1, ls=":", zorder=2)
    ax.text(x, 1.0, f" {kind}", transform=ax.get_xaxis_transform(),
            fontsize=7, color="#8e44ad", va="top", ha="left", rotation=90)


def conflicts(per_step: pd.DataFrame, targets: Sequence[Any], clock: Clock,
              run: str, title: str = "Social conflicts",
              marks: Sequence[tuple[float, str]] = ()) -> Figure:
  """Conflicts per step (bars) and per target norm (lines); `marks`: the
  interventions' times, as vertical lines."""
  fig = canvas()
  ax = fig.add_subplot()
  x = per_step["elapsed_minutes"].to_numpy()
  width = clock.minutes_per_step * 0.8
  ax.bar(x, per_step["conflicts"], width=width, color="#cccccc",
         label="all conflicts")
  for i, t in enumerate(targets):
    column = f"conflicts.{t.id}"
    if column in per_step and per_step[column].sum() > 0:
      ax.plot(x, per_step[column], color=target_colour(i), marker=".",
              label=f"about: {t.text}")
  ax.set_ylabel("conflicts per step")
  ax.yaxis.set_major_locator(MaxNLocator(integer=True))
  ax.set_title(one_run(title, run))
  time_axis(ax, clock)
  intervention_lines(ax, marks)
  ax.legend(fontsize=8, loc="upper right")
  return fig


def activity(per_step: pd.DataFrame, clock: Clock, run: str,
             title: str = "Norm-related conversations and thoughts"
             ) -> Figure:
  fig = canvas()
  ax = fig.add_subplot()
  x = per_step["elapsed_minutes"].to_numpy()
  ax.plot(x, per_step["norm_conversations"], marker="o", ms=3,
          label="norm-related conversations")
  ax.plot(x, per_step["norm_thoughts"], marker="s", ms=3,
          label="norm-related thoughts")
  ax.set_ylabel("per step")
  ax.yaxis.set_major_locator(MaxNLocator(integer=True))
  ax.set_title(one_run(title, run))
  time_axis(ax, clock)
  ax.legend(fontsize=8, loc="upper right")
  return fig


def _error_note(ax: Any, notes: Mapping[str, str] | None, target_id: str
                ) -> None:
  """The matcher's measured error on the panel: belief is only as good."""
  if notes and notes.get(target_id):
    ax.text(0.01, 0.97, notes[target_id], transform=ax.transAxes, fontsize=7,
            va="top", ha="left", color="#444444",
            bbox={"facecolor": "white", "alpha": 0.7, "lw": 0})


def adoption(per_step: pd.DataFrame, targets: Sequence[Any], clock: Clock,
             run: str, title: str = "Adoption: belief and behaviour",
             errors: Mapping[str, str] | None = None,
             marks: Sequence[tuple[float, str]] = ()) -> Figure:
  """One panel per target norm: belief, behaviour and plan shares, with
  the matcher's measured error (`errors`, by target id) on each panel and
  the interventions (`marks`) as vertical lines."""
  n = max(1, len(targets))
  fig = canvas(8.0, 2.6 * n)
  x = per_step["elapsed_minutes"].to_numpy()
  for i, t in enumerate(targets):
    ax = fig.add_subplot(n, 1, i + 1)
    colour = target_colour(i)
    series = (("belief", "-", "holds it (belief)"),
              ("behaviour", "--", "complies, all agents (behaviour)"),
              ("behaviour_observed", ":", "complies, observed agents"),
              ("plan", "-.", "plans to comply"))
    for measure, style, label in series:
      column = f"{measure}.{t.id}"
      if column in per_step and per_step[column].notna().any():
        ax.plot(x, per_step[column], ls=style, color=colour,
                alpha=1.0 if measure in ("belief", "behaviour") else 0.6,
                lw=2 if measure in ("belief", "behaviour") else 1.2,
                label=label)
    ax.set_title(f"{t.text} ({t.type})", fontsize=10)
    ax.set_ylabel("share of agents")
    _error_note(ax, errors, t.id)
    share_axis(ax)
    time_axis(ax, clock)
    intervention_lines(ax, marks)
    ax.legend(fontsize=7, loc="lower right")
  fig.suptitle(one_run(title, run))
  fig.tight_layout()
  return fig


def usage(summary_usage: dict[str, Any] | None,
          title: str = "LLM calls per module") -> Figure | None:
  if not summary_usage or not summary_usage.get("by_module"):
    return None
  modules = list(summary_usage["by_module"])
  calls = [summary_usage["by_module"][m]["calls"] for m in modules]
  tokens = [summary_usage["by_module"][m]["prompt_tokens"]
            + summary_usage["by_module"][m]["completion_tokens"]
            for m in modules]
  if not any(calls) and not any(tokens):
    return None  # Every call was cached: empty axes would say nothing.
  fig = canvas(8.0, max(2.2, 0.8 + 0.45 * len(modules)))
  ax1 = fig.add_subplot(1, 2, 1)
  ax1.barh(modules, calls, color="#4c72b0")
  ax1.set_xlabel("calls")
  ax2 = fig.add_subplot(1, 2, 2, sharey=ax1)
  ax2.barh(modules, tokens, color="#dd8452")
  ax2.set_xlabel("tokens (prompt + completion)")
  ax2.tick_params(labelleft=False)
  fig.suptitle(title)
  fig.tight_layout()
  return fig


def diffusion(edges: Sequence[dict[str, Any]], agents: Sequence[str],
              roles: dict[str, str], targets: Sequence[Any],
              title: str = "Norm diffusion (who passed which norm to whom)"
              ) -> Figure:
  """Agents on a circle; an arrow per (source, receiver, target norm).

  Width grows with the number of candidates; solid = the receiver accepted
  at least one, dashed = all rejected; grey = a norm that is no target.
  Entrepreneurs are drawn as squares. Arrows of different norms between the
  same pair bend by different amounts so that none hides another.
  """
  fig = canvas(7.5, 7.0)
  ax = fig.add_subplot()
  ax.set_aspect("equal")
  ax.axis("off")
  names = list(agents)
  for e in edges:
    for name in (e["source"], e["receiver"]):
      if name not in names:
        names.append(name)
  angle = {n: math.pi / 2 - 2 * math.pi * i / max(1, len(names))
           for i, n in enumerate(names)}
  pos = {n: (math.cos(a), math.sin(a)) for n, a in angle.items()}
  colour = {t.id: target_colour(i) for i, t in enumerate(targets)}
  order = {t.id: i for i, t in enumerate(targets)}
  for e in edges:
    start, end = pos[e["source"]], pos[e["receiver"]]
    bend = 0.12 + 0.08 * order.get(e["target"], len(order))
    arrow = FancyArrowPatch(
        start, end, arrowstyle="-|>", mutation_scale=14,
        connectionstyle=f"arc3,rad={bend}",
        color=colour.get(e["target"], OTHER_COLOUR),
        lw=1.0 + 1.2 * math.log2(1 + e["candidates"]),
        ls="-" if e["accepted"] else "--",
        alpha=0.85 if e["origin"] == "conversation" else 0.5,
        shrinkA=16, shrinkB=16)
    ax.add_patch(arrow)
  for name, (x, y) in pos.items():
    entrepreneur = roles.get(name) == "entrepreneur"
    ax.scatter([x], [y], s=420, marker="s" if entrepreneur else "o",
               color="#ffd166" if entrepreneur else "#eeeeee",
               edgecolor="#333333", zorder=3)
    ha = "left" if x > 0.3 else "right" if x < -0.3 else "center"
    va = "bottom" if y > 0.3 else "top" if y < -0.3 else "center"
    ax.annotate(name, (x * 1.13, y * 1.13), ha=ha, va=va, fontsize=9)
  handles = [Line2D([], [], color=colour[t.id], lw=2, label=t.text)
             for t in targets]
  handles.append(Line2D([], [], color=OTHER_COLOUR, lw=2, label="other norm"))
  handles.append(Line2D([], [], color="#333333", lw=1, ls="--",
                        label="all rejected by the receiver"))
  ax.legend(handles=handles, fontsize=8, loc="lower center",
            bbox_to_anchor=(0.5, -0.12), ncol=2)
  ax.set_xlim(-1.9, 1.9)
  ax.set_ylim(-1.4, 1.4)
  ax.set_title(title if edges else title + "\n(no norm passed between agents)")
  return fig


# -- a compare directory ----------------------------------------------------


def _band(ax: Any, data: pd.DataFrame, arm: str, metric: str, *,
          colour: str, style: str = "-", label: str,
          clip: tuple[float, float] = (0.0, math.inf)) -> bool:
  """Mean line and CI band; the band is clipped to the metric's range.
  The label says over how many runs (one run: a line, no band)."""
  rows = data[(data["arm"] == arm) & (data["metric"] == metric)]
  rows = rows[rows["mean"].notna()]
  if rows.empty:
    return False
  x = rows["elapsed_minutes"].to_numpy()
  n = int(rows["n"].max())
  note = runs_note(n) + ("" if n == 1 else ", 95% CI")
  ax.plot(x, rows["mean"], ls=style, color=colour, lw=2,
          label=f"{label} ({note})")
  low = np.clip(rows["ci_low"].to_numpy(float), *clip)
  high = np.clip(rows["ci_high"].to_numpy(float), *clip)
  if np.isfinite(low).any():
    ax.fill_between(x, low, high, color=colour, alpha=0.15, lw=0)
  return True


def compare_conflicts(per_step: pd.DataFrame, clock: Clock) -> Figure:
  fig = canvas()
  ax = fig.add_subplot()
  for arm, colour in ARM_COLOURS.items():
    _band(ax, per_step, arm, "conflicts", colour=colour, label=arm)
  ax.set_ylabel("conflicts per step")
  ax.set_title("Social conflicts: normative vs baseline")
  time_axis(ax, clock)
  ax.legend(fontsize=8, loc="upper right")
  return fig


def compare_activity(per_step: pd.DataFrame, clock: Clock) -> Figure:
  fig = canvas()
  ax = fig.add_subplot()
  for arm, colour in ARM_COLOURS.items():
    _band(ax, per_step, arm, "norm_conversations", colour=colour,
          label=f"{arm}: norm-related conversations")
    _band(ax, per_step, arm, "norm_thoughts", colour=colour, style=":",
          label=f"{arm}: norm-related thoughts")
  ax.set_ylabel("per step")
  ax.set_title("Norm-related conversations and thoughts")
  time_axis(ax, clock)
  ax.legend(fontsize=8, loc="upper right")
  return fig


def compare_adoption(per_step: pd.DataFrame, targets: Sequence[Any],
                     clock: Clock,
                     errors: Mapping[str, str] | None = None) -> Figure:
  n = max(1, len(targets))
  fig = canvas(8.0, 2.7 * n)
  for i, t in enumerate(targets):
    ax = fig.add_subplot(n, 1, i + 1)
    norm, base = ARM_COLOURS["normative"], ARM_COLOURS["baseline"]
    _band(ax, per_step, "normative", f"belief.{t.id}", colour=norm,
          label="normative: holds it (belief)", clip=(0.0, 1.0))
    _band(ax, per_step, "normative", f"behaviour.{t.id}", colour=norm,
          style="--", label="normative: complies (behaviour)",
          clip=(0.0, 1.0))
    _band(ax, per_step, "baseline", f"behaviour.{t.id}", colour=base,
          style="--", label="baseline: complies (behaviour)",
          clip=(0.0, 1.0))
    ax.set_title(f"{t.text} ({t.type})", fontsize=10)
    ax.set_ylabel("share of agents")
    _error_note(ax, errors, t.id)
    share_axis(ax)
    time_axis(ax, clock)
    ax.legend(fontsize=7, loc="lower right")
  fig.suptitle("Adoption per target norm: normative vs baseline")
  fig.tight_layout()
  return fig

"""The conditions of a sweep side by side on the published page.

A sweep that varies its scenario (a posted notice or none, a share of
norm entrepreneurs, a network or another) asks how its conditions
differ, and each condition's own section cannot say that. For every
scenario and endpoint published with more than one condition, a table
sets per target norm each condition's final belief and behaviour (mean
over seeds with the 95% t-interval, `aggregate.mean_ci`), how many runs
reached 50% belief and behaviour and the median minutes they took ("never"
is a result, not a gap: a short run may end before any share gets there),
and the conflicts and talks about the target; a condition whose runs held
interventions also gets the slots before and after each one
(measure/interventions.py), averaged over its runs. Baseline runs are
tabled under their own arm. A figure draws each condition's normative
runs over time (mean over seeds; belief solid, behaviour dashed) with the
interventions marked, so the conditions are read on one axis.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from crsec_concordia.metrics.measure import aggregate, interventions, run_metrics
from crsec_concordia.metrics.present import figures
from crsec_concordia.metrics.present.cells import interval, md_escape, pct

LEVEL = "50%"
WINDOW_MEASURES = ("belief", "behaviour", "conflicts")


def _reached(ms: Sequence[run_metrics.RunMetrics], target: str,
             measure: str) -> dict[str, Any]:
  """How many runs reached LEVEL of `measure`, and the median minutes."""
  minutes = []
  for m in ms:
    hit = (((m.summary["targets"].get(target) or {}).get("time_to") or {})
           .get(measure) or {}).get(LEVEL)
    if hit:
      minutes.append(float(hit["elapsed_minutes"]))
  return {"runs": len(ms), "reached": len(minutes),
          "median_minutes": statistics.median(minutes) if minutes else None}


def _reached_text(r: Mapping[str, Any]) -> str:
  if not r["reached"]:
    return f"never (0 of {r['runs']})"
  return (f"{r['reached']} of {r['runs']}, median "
          f"{r['median_minutes']:.0f} min")


def _final(ms: Sequence[run_metrics.RunMetrics], target: str, measure: str
           ) -> dict[str, Any]:
  values = [((m.summary["targets"].get(target) or {}).get("final") or {})
            .get(measure) for m in ms]
  return aggregate.mean_ci(values, bounds=(0.0, 1.0))


def _mean_of(ms: Sequence[run_metrics.RunMetrics], target: str, key: str
             ) -> float | None:
  values = [(m.summary["targets"].get(target) or {}).get(key) for m in ms]
  return aggregate.mean_ci(values)["mean"]


def _windows(ms: Sequence[run_metrics.RunMetrics]) -> list[dict[str, Any]]:
  """Each intervention's windows, per target, averaged over the runs."""
  by: dict[tuple[int, str, str], list[dict[str, Any]]] = {}
  for m in ms:
    for w in m.summary.get("interventions") or ():
      by.setdefault((w["index"], w["intervention"], w["target"]),
                    []).append(w)
  rows = []
  for (index, kind, target), ws in sorted(by.items()):
    row = {"index": index, "intervention": kind, "target": target,
           "step": ws[0]["step"], "elapsed_minutes": ws[0]["elapsed_minutes"],
           "runs": len(ws)}
    for measure in WINDOW_MEASURES:
      for side in ("before", "after"):
        key = f"{measure}_{side}"
        row[key] = aggregate.mean_ci([w.get(key) for w in ws])["mean"]
    rows.append(row)
  return rows


def _cells(groups: Sequence[Any]) -> dict[tuple[str, str], list[Any]]:
  """The groups by (scenario, endpoint), where more than one condition."""
  by: dict[tuple[str, str], list[Any]] = {}
  for g in groups:
    by.setdefault((g.key[0], g.key[2]), []).append(g)
  return {k: gs for k, gs in by.items()
          if len({g.key[1] for g in gs}) > 1}


def _over_time(gs: Sequence[Any], title: str) -> Any | None:
  """Each condition's normative runs over time, one panel per target;
  None without normative runs."""
  lines = {g.key[1]: g.runs.get("normative") or [] for g in gs}
  lines = {c: ms for c, ms in lines.items() if ms}
  if not lines:
    return None
  first = next(iter(lines.values()))[0]
  targets = first.run.targets
  fig = figures.canvas(8.0, 2.8 * max(1, len(targets)))
  for i, t in enumerate(targets):
    ax = fig.add_subplot(len(targets), 1, i + 1)
    marks: dict[tuple[float, str], None] = {}
    for j, (condition, ms) in enumerate(lines.items()):
      frame = pd.concat([m.per_step for m in ms], ignore_index=True)
      mean = frame.groupby("elapsed_minutes", sort=True).mean(
          numeric_only=True)
      colour = figures.target_colour(j)
      if f"belief.{t.id}" in mean and mean[f"belief.{t.id}"].notna().any():
        ax.plot(mean.index, mean[f"belief.{t.id}"], color=colour, lw=2,
                label=f"{condition}: holds")
      if f"behaviour.{t.id}" in mean:
        ax.plot(mean.index, mean[f"behaviour.{t.id}"], color=colour,
                lw=1.2, ls="--", label=f"{condition}: complies")
      for m in ms:
        marks.update(dict.fromkeys(interventions.marks(m.run, m.per_step)))
    figures.intervention_lines(ax, list(marks))
    ax.set_title(f"{t.text} ({t.type})", fontsize=10)
    ax.set_ylabel("share of all agents")
    figures.share_axis(ax)
    figures.time_axis(ax, first.run.clock)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
  fig.suptitle(f"{title}: each condition, holds (solid) and complies "
               "(dashed)\n(normative runs, mean over seeds)")
  fig.tight_layout()
  return fig


def conditions_section(groups: Sequence[Any], out: Path | None = None
                       ) -> tuple[list[str], list[dict[str, Any]]]:
  """(markdown lines, results.json rows) comparing the conditions of each
  scenario and endpoint (`groups`: anything with `key` = (scenario,
  condition, endpoint) and `runs` = {arm: [RunMetrics]}); empty when no
  scenario was published with more than one condition. With `out` (the
  page's figures folder), each comparison's figure is drawn there; the
  rows' first gives its path (`figure`)."""
  lines: list[str] = []
  rows: list[dict[str, Any]] = []
  for (scenario, endpoint), gs in sorted(_cells(groups).items()):
    title = f"{scenario} ({endpoint})" if endpoint else scenario
    lines += [f"## The conditions compared: {md_escape(title)}", ""]
    drawn = _over_time(gs, title) if out is not None else None
    if drawn is not None:
      name = "__".join(x for x in (scenario, endpoint, "conditions") if x)
      path = out / f"{name.replace('/', '_')}.png"
      path.write_bytes(figures.png(drawn, dpi=100))
      rows.append({"scenario": scenario, "endpoint": endpoint,
                   "figure": f"figures/{path.name}"})
      lines += [f"![The conditions over time](figures/{path.name})", ""]
    lines += [
              "Final shares of all agents, mean over seeds with the 95% "
              "t-interval; the runs that reached 50% and the median minutes "
              "from the start they took; conflicts and talks about the "
              "target, mean per run.", "",
              "| target norm | condition | arm | runs | belief at the end | "
              "behaviour at the end | reached 50% belief | reached 50% "
              "behaviour | conflicts | talks |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    windows: list[str] = []
    first = next(m for g in gs for ms in g.runs.values() for m in ms)
    for t in first.run.targets:
      for g in gs:
        for arm, ms in sorted(g.runs.items()):
          row = {"scenario": scenario, "endpoint": endpoint,
                 "condition": g.key[1], "arm": arm, "target": t.id,
                 "runs": len(ms), "seeds": [m.run.seed for m in ms],
                 "belief_final": _final(ms, t.id, "belief"),
                 "behaviour_final": _final(ms, t.id, "behaviour"),
                 "reached_belief": _reached(ms, t.id, "belief"),
                 "reached_behaviour": _reached(ms, t.id, "behaviour"),
                 "conflicts": _mean_of(ms, t.id, "conflicts"),
                 "conversations": _mean_of(ms, t.id, "conversations")}
          rows.append(row)
          lines.append(
              f"| {md_escape(t.text)} | {md_escape(g.key[1])} | {arm} | "
              f"{len(ms)} | {interval(row['belief_final'])} | "
              f"{interval(row['behaviour_final'])} | "
              f"{_reached_text(row['reached_belief'])} | "
              f"{_reached_text(row['reached_behaviour'])} | "
              f"{_number(row['conflicts'])} | "
              f"{_number(row['conversations'])} |")
    for g in gs:
      for arm, ms in sorted(g.runs.items()):
        for w in _windows(ms):
          texts = {t.id: t.text for t in first.run.targets}
          windows.append(
              f"| {md_escape(g.key[1])} | {arm} | {w['intervention']} "
              f"({_which(w)}step {w['step']}) | "
              f"{md_escape(texts.get(w['target'], w['target']))} | "
              f"{w['runs']} | {pct(w['belief_before'])} → "
              f"{pct(w['belief_after'])} | {pct(w['behaviour_before'])} → "
              f"{pct(w['behaviour_after'])} | "
              f"{_number(w['conflicts_before'])} → "
              f"{_number(w['conflicts_after'])} |")
          rows.append({"scenario": scenario, "endpoint": endpoint,
                       "condition": g.key[1], "arm": arm, "window": w})
    if windows:
      lines += ["", "Around each intervention: belief and behaviour at the "
                "last slot before it and at the last slot of the window "
                "from it on, and the conflicts about the target within each "
                "window (mean over the runs; windows of up to 3 slots each "
                "side, docs/design.md, \"Interventions\").", "",
                "| condition | arm | intervention | target norm | runs | "
                "belief before → after | behaviour before → after | "
                "conflicts before → after |",
                "|---|---|---|---|---|---|---|---|", *windows]
    lines.append("")
  return lines, rows


def _which(w: Mapping[str, Any]) -> str:
  return "" if w["index"] is None else f"#{int(w['index']) + 1}, "


def _number(value: float | None) -> str:
  return "–" if value is None else f"{value:.1f}"

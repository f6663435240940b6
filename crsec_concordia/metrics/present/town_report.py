"""The report's section on places and groups, for runs that have them.

A run of several declared places, or of agents in groups, gets a section
"Places and groups" (the `places_section` macro of templates/
_macros.html.j2, on the run and the compare page): each place's and
group's agents and shares at the end, the norms carried from one place to
another (measure/places.py: the first holder of a target norm in each
place, and whether it brought the norm from elsewhere), and the diffusion
view across places (place_figures.across). For a compare, the shares and
the figure are the mean over its normative runs and the carried norms
are listed per seed. Runs of one room have no such section: `section`
gives None and the page is as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from crsec_concordia.metrics.measure import places, run_metrics
from crsec_concordia.metrics.present import figures, place_figures
from crsec_concordia.metrics.present.templating import Cell, Page


def _pct(value: Any) -> str:
  return "-" if value is None or pd.isna(value) else f"{100 * value:.0f}%"


def _final_rows(last: pd.DataFrame, by: str, targets: Sequence[Any]
                ) -> list[list[Cell]]:
  rows = []
  for where, part in last[last["by"] == by].groupby("where", sort=True):
    shares = part.set_index("target")
    agents = part["agents"].iloc[0]
    row: list[Cell] = [where or "no group",
                       f"{agents:.0f}" if agents == int(agents)
                       else f"{agents:.1f}"]
    for t in targets:
      row.append(f"{_pct(shares.loc[t.id, 'belief'])} / "
                 f"{_pct(shares.loc[t.id, 'behaviour'])}"
                 if t.id in shares.index else "-")
    rows.append(row)
  return rows


def _carried_rows(ms: Sequence[run_metrics.RunMetrics],
                  texts: dict[str, str]) -> list[list[Cell]]:
  """One row per holder who brought a norm, and one per place and target
  naming together those who took it up there (or held it from the
  start)."""
  rows = []
  for m in ms:
    seed = "" if len(ms) == 1 else f" (seed {m.run.seed})"
    mine: list[tuple[Any, list[Cell]]] = []
    stayed: dict[tuple[int, str, str], list[str]] = {}
    for c in m.summary["places"]["carried"]:
      key = (c["step"], c["place"], c["target"])
      if c["carried"]:
        mine.append((key, [
            c["place"], texts.get(c["target"], c["target"]),
            f"step {c['step']} ({c.get('time', '')})", c["agent"] + seed,
            f"brought it from {c['from_place']} (held it since step "
            f"{c['held_since']}, came at step {c['arrived']})"]))
      else:
        stayed.setdefault(key, []).append(c["agent"])
    for (step, place, target), agents in stayed.items():
      time = next(c.get("time", "") for c in m.summary["places"]["carried"]
                  if c["step"] == step)
      mine.append(((step, place, target), [
          place, texts.get(target, target), f"step {step} ({time})",
          ", ".join(agents) + seed,
          "took it up there, or held it there from the start"]))
    rows += [row for _, row in sorted(mine, key=lambda kv: kv[0])]
  return rows


def section(page: Page, ms: Sequence[run_metrics.RunMetrics]
            ) -> dict[str, Any] | None:
  """What the `places_section` macro shows for one run or the mean of
  several; None when none of them has places or groups."""
  ms = [m for m in ms if "places" in m.summary]
  if not ms:
    return None
  first = ms[0]
  targets = first.run.targets
  mean = places.mean([m.places for m in ms])
  last = mean[mean["step"] == mean["step"].max()]
  label = first.run.name if len(ms) == 1 else f"{first.run.arm} runs"
  return {
      "header": ["", "agents"] + [f"{t.text}: holds / complies"
                                  for t in targets],
      "over": "" if len(ms) == 1 else f" ({figures.runs_note(len(ms))})",
      "places": _final_rows(last, "place", targets),
      "groups": _final_rows(last, "group", targets),
      "committed": ", ".join(first.summary["places"]["committed"])
                   if len(ms) == 1 else "",
      "carried": _carried_rows(ms, {t.id: t.text for t in targets}),
      "figures": {
          by: page.figure(
              f"{by}s", place_figures.across(
                  mean, first.per_step, targets, first.run.clock, label, by,
                  runs=len(ms)),
              f"Share of each {by}'s agents holding (solid) and complying "
              "with (dashed) each target norm; an agent is in the place "
              "where its latest action was.")
          for by in ("place", "group")}}

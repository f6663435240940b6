"""The report's section on places and groups, for a run that has them.

A run of several declared places, or of agents in groups, gets a section
"Places and groups" (templates/run.html.j2): each place's and group's
agents and shares at the end, the norms carried from one place to
another (measure/places.py: the first holder of a target norm in each
place, and whether it brought the norm from elsewhere), and the
diffusion view across places (place_figures.across). A one-room run has
no such section: `section` gives None and the page is as before.
"""

from __future__ import annotations

from typing import Any

from crsec_concordia.metrics.measure import run_metrics
from crsec_concordia.metrics.present import place_figures
from crsec_concordia.metrics.present.templating import Cell, Page


def _pct(value: Any) -> str:
  return "-" if value is None else f"{100 * value:.0f}%"


def _final_rows(final: dict[str, dict[str, Any]], targets: list[Any]
                ) -> list[list[Cell]]:
  rows = []
  for where, by_target in sorted(final.items()):
    agents = next(iter(by_target.values()), {}).get("agents", 0)
    row: list[Cell] = [where or "no group", str(agents)]
    for t in targets:
      shares = by_target.get(t.id) or {}
      row.append(f"{_pct(shares.get('belief'))} / "
                 f"{_pct(shares.get('behaviour'))}")
    rows.append(row)
  return rows


def _carried_rows(carried: list[dict[str, Any]], texts: dict[str, str]
                  ) -> list[list[Cell]]:
  rows = []
  for c in carried:
    how = (f"brought it from {c['from_place']} (held it since step "
           f"{c['held_since']}, came at step {c['arrived']})"
           if c["carried"] else "took it up there, or held it there from "
           "the start")
    rows.append([c["place"], texts.get(c["target"], c["target"]),
                 f"step {c['step']} ({c.get('time', '')})", c["agent"], how])
  return rows


def section(page: Page, m: run_metrics.RunMetrics) -> dict[str, Any] | None:
  """What run.html.j2's "Places and groups" shows; None for one room."""
  block = m.summary.get("places")
  if block is None:
    return None
  run = m.run
  targets = run.targets
  texts = {t.id: t.text for t in targets}
  header = ["", "agents"] + [f"{t.text}: holds / complies" for t in targets]
  final = block["final"]
  groups = final.get("group")
  return {
      "header": header,
      "places": _final_rows(final.get("place", {}), targets),
      "groups": _final_rows(groups, targets) if groups else [],
      "committed": ", ".join(block["committed"]),
      "carried": _carried_rows(block["carried"], texts),
      "figures": {
          by: page.figure(
              f"{by}s", place_figures.across(m.places, m.per_step, targets,
                                             run.clock, run.name, by),
              f"Share of each {by}'s agents holding (solid) and complying "
              f"with (dashed) each target norm; an agent is in the place "
              "where its latest action was.")
          for by in ("place", "group")}}

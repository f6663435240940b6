"""What `crsec report --publish` adds for towns and committed minorities.

For a group of runs with several places or with groups (measure/places.py):
each place's and group's share holding and complying with each target norm
at the end, the mean over the group's normative runs, the figure of
adoption per place over time (the mean of those runs), and the norms
carried from one place to another (per run: the place, the first holder
there, from where it brought the norm and when). For runs with committed
agents (a committed minority, or norm entrepreneurs: measure/tipping.py)
at two or more shares: the tipping curve over all the groups given, as a
table and a figure, with its interval over seeds.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


from crsec_concordia.metrics.measure import places, run_metrics, tipping
from crsec_concordia.metrics.present import figures, place_figures
from crsec_concordia.metrics.present.cells import interval as _interval
from crsec_concordia.metrics.present.cells import pct as _pct


def _town_runs(runs: Mapping[str, list[run_metrics.RunMetrics]]
               ) -> list[run_metrics.RunMetrics]:
  """The normative runs that have places or groups (else any arm's)."""
  for arm in ("normative", *sorted(runs)):
    found = [m for m in runs.get(arm, []) if not m.places.empty]
    if found:
      return found
  return []


def places_section(runs: Mapping[str, list[run_metrics.RunMetrics]],
                   out: Path, slug: str, label: str
                   ) -> tuple[list[str], list[str], dict[str, Any] | None]:
  """(markdown lines, figure paths, results.json block) of a group; all
  empty for runs of one room."""
  ms = _town_runs(runs)
  if not ms:
    return [], [], None
  first = ms[0]
  targets = first.run.targets
  mean = places.mean([m.places for m in ms])
  last = mean[mean["step"] == mean["step"].max()]
  lines = ["", f"### Places and groups ({first.run.arm}, "
           f"{figures.runs_note(len(ms))})", "",
           "| | where | agents | " + " | ".join(
               f"{t.text}: holds / complies" for t in targets) + " |",
           "|---|---|---|" + "---|" * len(targets)]
  for (by, where), part in last.groupby(["by", "where"], sort=True):
    shares = part.set_index("target")
    cells = [f"{_pct(shares.loc[t.id, 'belief'])} / "
             f"{_pct(shares.loc[t.id, 'behaviour'])}"
             if t.id in shares.index else "–" for t in targets]
    lines.append(f"| {by} | {where or 'no group'} | "
                 f"{part['agents'].iloc[0]:.1f} | " + " | ".join(cells) + " |")
  carried = [{"seed": m.run.seed, **c} for m in ms
             for c in m.summary["places"]["carried"] if c["carried"]]
  texts = {t.id: t.text for t in targets}
  lines += ["", "Norms carried from one place to another (the first holder "
            "of a target norm in a place who held it before in another "
            "place):", ""]
  if carried:
    lines += ["| seed | place | target norm | first held | by | from | "
              "came at step |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {c['seed']} | {c['place']} | {texts.get(c['target'])} | "
              f"step {c['step']} | {c['agent']} | {c['from_place']} | "
              f"{c['arrived']} |" for c in carried]
  else:
    lines.append("none.")
  pictures = []
  for by in ("place", "group"):
    drawn = place_figures.across(mean, first.per_step, targets,
                                 first.run.clock, label, by, runs=len(ms))
    if drawn is not None:
      path = out / f"{slug}__{by}s.png"
      path.write_bytes(figures.png(drawn, dpi=100))
      pictures.append(f"figures/{path.name}")
      lines += ["", f"![Adoption per {by}](figures/{path.name})"]
  block = {"final": last.to_dict(orient="records"), "carried": carried}
  return lines, pictures, block


def tipping_section(groups: Mapping[tuple[str, str, str], Any], out: Path
                    ) -> tuple[list[str], dict[str, Any] | None]:
  """(markdown lines, results.json block) of the tipping curve over the
  groups given (`groups`: key -> anything with `runs`); empty without
  committed agents at two shares of a scenario."""
  curve = tipping.curve(tipping.points(groups))
  # A curve needs two committed shares of one scenario at least: one share
  # (the posted-rule sweep's conditions) is a point, which the conditions'
  # table shows.
  shares = curve.groupby(["scenario", "endpoint"])["minority_share"].nunique()
  curve = curve[curve.set_index(["scenario", "endpoint"]).index.isin(
      shares[shares > 1].index)].reset_index(drop=True)
  if curve.empty:
    return [], None
  adopted = tipping.adopted(curve)
  path = out / "tipping_curve.png"
  path.write_bytes(figures.png(place_figures.tipping(
      adopted, "The others holding and following the committed agents' "
      f"norm at the end\n(mean over seeds, {tipping.INTERVAL})"), dpi=100))
  lines = ["## The tipping curve: the committed agents' norm among the "
           "others", "",
           f"![The tipping curve](figures/{path.name})", "",
           "Shares of the agents that are not committed at the last step: "
           "holding a qualified norm that means the committed agents' target "
           "norm (a committed minority's convention, or the norm "
           "entrepreneurs speak up for), "
           "following it (their latest relevant action complies) and both; "
           f"mean over seeds with its {tipping.INTERVAL}. With two seeds "
           "a point's interval is its mean ± 12.7 standard errors: it says "
           "little more than the seeds' spread. A norm reaches the others "
           "only through conflicts the model detects and talks it holds, "
           "within the slots played: a low point may mean the committed "
           "agents were seldom seen or heard, not that their norm was heard "
           "and refused (the "
           "runs' conflict and diffusion records tell which).", "",
           "| scenario | condition | endpoint | committed share | adopted (holds "
           "and follows) | holds | follows | seeds |",
           "|---|---|---|---|---|---|---|---|"]
  for keys, part in curve.groupby(["scenario", "condition", "endpoint"],
                                  sort=False):
    by = {r["measure"]: r for r in part.to_dict(orient="records")}
    lines.append(
        f"| {keys[0]} | {keys[1]} | {keys[2]} | "
        f"{100 * by['adopted']['minority_share']:.0f}% | "
        + " | ".join(_interval(by[m]) for m in tipping.TIPPING_MEASURES)
        + f" | {', '.join(str(s) for s in by['adopted']['seeds'])} |")
  return lines + [""], {"interval": tipping.INTERVAL,
                        "curve": curve.to_dict(orient="records"),
                        "figure": f"figures/{path.name}"}

"""The report of a sweep: one figure per metric, conditions side by side.

Each figure shows, per scenario and endpoint (one panel each), a group of
bars per condition (one bar per arm: mean over seeds with its 95%
t-interval as an error bar), so an ablation reads left to right against
the reference condition. A second figure per metric shows the ablation
effects themselves (condition - reference, normative arm, paired by
seed). The page holds the run counts per cell, the tables and links to
the CSV and Parquet files; figures are also saved under report/figures/.
The page is metrics/templates/sweep.html.j2.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsec_concordia.metrics.measure import tipping
from crsec_concordia.metrics.present import figures, place_figures
from crsec_concordia.metrics.present.report import (MatcherFactory, Report,
                                                    _stats)
from crsec_concordia.metrics.present.templating import Cell, Page
from crsec_concordia.rundir.format import LOG_HTML
from crsec_concordia.sweeps import aggregate as sweep_aggregate

_SHARE_PREFIXES = ("belief", "behaviour", "plan")
_LABELS = {
    "conflicts_total": "conflicts (total per run)",
    "norm_conversations_total": "norm-related conversations",
    "llm_calls_total": "LLM calls", "tokens_total": "tokens",
}


def _is_share(metric: str) -> bool:
  return metric.startswith(_SHARE_PREFIXES) and "_final." in metric


def _label(metric: str) -> str:
  if metric in _LABELS:
    return _LABELS[metric]
  measure, _, target = metric.partition(".")
  return f"{measure.replace('_', ' ')}: {target}" if target else metric


def _panels(frame: pd.DataFrame) -> list[tuple[str, str]]:
  return sorted({(r.scenario, r.endpoint) for r in frame.itertuples()})


def _bars(ax: Any, rows: pd.DataFrame, conditions: list[str],
          groups: list[str], key: str, colours: dict[str, str]) -> None:
  width = 0.8 / max(1, len(groups))
  x = np.arange(len(conditions))
  for i, group in enumerate(groups):
    means, low, high = [], [], []
    for condition in conditions:
      hit = rows[(rows["condition"] == condition) & (rows[key] == group)]
      row = hit.iloc[0] if len(hit) else None
      mean = row["mean"] if row is not None else None
      ok = mean is not None and not pd.isna(mean)
      means.append(float(mean) if ok else math.nan)
      has_ci = ok and not pd.isna(row["ci_low"])
      low.append(float(mean) - float(row["ci_low"]) if has_ci else 0.0)
      high.append(float(row["ci_high"]) - float(mean) if has_ci else 0.0)
    ax.bar(x + (i - (len(groups) - 1) / 2) * width, means, width,
           yerr=[low, high], capsize=3, label=group or "effect",
           color=colours.get(group, figures.target_colour(i)), alpha=0.85)
  ax.set_xticks(x, conditions, rotation=20, ha="right")
  ax.grid(axis="y", alpha=0.3)


def metric_figure(summary: pd.DataFrame, metric: str, conditions: list[str]
                  ) -> bytes | None:
  rows = summary[summary["metric"] == metric]
  if rows.empty:
    return None
  panels = _panels(rows)
  fig = figures._figure(max(5.0, 1.4 * len(conditions) + 2),  # pylint: disable=protected-access
                        3.2 * len(panels))
  for i, (scenario, endpoint) in enumerate(panels):
    ax = fig.add_subplot(len(panels), 1, i + 1)
    part = rows[(rows["scenario"] == scenario) & (rows["endpoint"] == endpoint)]
    arms = [a for a in ("normative", "baseline") if a in set(part["arm"])]
    _bars(ax, part, conditions, arms, "arm", figures.ARM_COLOURS)
    ax.set_title(f"{scenario} on {endpoint}", fontsize=10)
    ax.set_ylabel("mean over seeds, 95% CI")
    if _is_share(metric):
      ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
  fig.suptitle(_label(metric))
  fig.tight_layout()
  return figures.png(fig)


def effect_figure(effects: pd.DataFrame, metric: str, conditions: list[str]
                  ) -> bytes | None:
  rows = effects[(effects["metric"] == metric)
                 & (effects["arm"] == "normative")
                 & (effects["comparison"] != sweep_aggregate.TREATMENT)]
  if rows.empty:
    return None
  panels = _panels(rows)
  fig = figures._figure(max(5.0, 1.2 * len(conditions) + 2),  # pylint: disable=protected-access
                        3.0 * len(panels))
  for i, (scenario, endpoint) in enumerate(panels):
    ax = fig.add_subplot(len(panels), 1, i + 1)
    part = rows[(rows["scenario"] == scenario) & (rows["endpoint"] == endpoint)]
    _bars(ax, part.assign(group=""), conditions, [""], "group",
          {"": figures.ARM_COLOURS["normative"]})
    ax.axhline(0, color="#444444", lw=0.8)
    ax.set_title(f"{scenario} on {endpoint}", fontsize=10)
    ax.set_ylabel("condition - reference")
    if ax.get_legend() is not None:
      ax.get_legend().remove()
  fig.suptitle(f"Ablation effect on {_label(metric)} (normative arm, "
               "paired by seed)")
  fig.tight_layout()
  return figures.png(fig)


def _summary_rows(m: sweep_aggregate.SweepMetrics, keys: list[str],
                  conditions: list[str]) -> list[list[Cell]]:
  rows = []
  s = m.summary
  for (scenario, endpoint) in _panels(s):
    for metric in keys:
      for arm in ("normative", "baseline"):
        cells: list[Cell] = [scenario, endpoint, _label(metric), arm]
        found = False
        for condition in conditions:
          hit = s[(s["scenario"] == scenario) & (s["endpoint"] == endpoint)
                  & (s["metric"] == metric) & (s["arm"] == arm)
                  & (s["condition"] == condition)]
          stats = hit.iloc[0].to_dict() if len(hit) else None
          found |= stats is not None
          cells.append(_stats(_clean(stats), _is_share(metric)))
        if found:
          rows.append(cells)
  return rows


def _clean(stats: dict[str, Any] | None) -> dict[str, Any] | None:
  if stats is None:
    return None
  return {k: (None if isinstance(v, float) and math.isnan(v) else v)
          for k, v in stats.items()}


def _effects_rows(m: sweep_aggregate.SweepMetrics, keys: list[str]
                  ) -> list[list[Cell]]:
  e = m.effects
  return [[row.scenario, row.endpoint, row.comparison, row.arm or "-",
           _label(row.metric),
           _stats(_clean(row._asdict()), _is_share(row.metric))]
          for row in e[e["metric"].isin(keys)].itertuples()]


def _tipping_rows(curve: pd.DataFrame) -> list[list[Cell]]:
  """Per scenario, endpoint and condition: the minority's size, then the
  shares adopted, holding and following with their intervals."""
  rows = []
  for keys, part in curve.groupby(["scenario", "endpoint", "condition"],
                                  sort=False):
    by = {r["measure"]: r for r in part.to_dict(orient="records")}
    first = part.iloc[0]
    rows.append([*keys, str(first["target"]),
                 f"{100 * first['minority_share']:.0f}%",
                 *[_stats(_clean(by.get(m)), True)
                   for m in tipping.TIPPING_MEASURES],
                 ", ".join(f"{v:.2f}" for v in by["adopted"]["values"])])
  return rows


def _tipping(page: Page, m: sweep_aggregate.SweepMetrics
             ) -> dict[str, Any] | None:
  """The tipping curve's figure and table; None without a minority."""
  if m.tipping.empty:
    return None
  curve = tipping.adopted(m.tipping)
  return {"figure": page.figure(
      "tipping_curve", figures.png(place_figures.tipping(
          curve, "The others holding and following the committed "
          f"minority's norm at the end\n(mean over seeds, {tipping.INTERVAL})"
          )),
      "The tipping curve: per committed minority size, the share of the "
      "non-committed agents holding the minority's norm and following it "
      f"at the end; mean over seeds with its {tipping.INTERVAL}; dots are "
      "the seeds."),
          "interval": tipping.INTERVAL,
          "rows": _tipping_rows(m.tipping)}


def sweep_report(sweep_dir: str | Path, out_dir: str | Path | None = None, *,
                 matcher_factory: MatcherFactory | None = None) -> Report:
  """Aggregates the sweep, writes its tables, draws and writes the page."""
  m = sweep_aggregate.aggregate_sweep(sweep_dir, matcher_factory)
  sweep_aggregate.write(m)
  out = Path(out_dir) if out_dir else m.path / "report"
  out.mkdir(parents=True, exist_ok=True)
  conditions = [c for c in (m.manifest.get("spec", {}).get("conditions")
                            or {}) if c in set(m.summary["condition"])]
  keys = sweep_aggregate.key_metrics(m)
  page = Page(out)
  pictures = []
  for metric in keys:
    slug = metric.replace(".", "__")
    pictures += [
        page.figure(f"metric_{slug}", metric_figure(m.summary, metric,
                                                    conditions),
                    f"{_label(metric)} per condition and arm."),
        page.figure(f"ablation_{slug}", effect_figure(m.effects, metric,
                                                      conditions),
                    f"{_label(metric)}: condition - {m.reference}, "
                    "normative arm.")]
  index = page.write(
      "sweep.html.j2", name=str(m.manifest.get("name")),
      reference=m.reference,
      links=[page.link(m.path / f"{name}.{ext}", f"{name}.{ext}")
             for name in sweep_aggregate.TABLES for ext in ("csv", "parquet")],
      cells=[[c["scenario"], c["condition"], c["endpoint"],
              ", ".join(f"{a} {n}" for a, n in c["runs"].items()),
              str(c["seeds"]), str(c["failed"])]
             for c in sweep_aggregate.cell_counts(m)],
      failed="; ".join(f"{r['id']}: {r.get('error')}"
                       for r in m.manifest["runs"]
                       if r.get("status") == "failed"),
      conditions=conditions, summary=_summary_rows(m, keys, conditions),
      effects=_effects_rows(m, keys), pictures=pictures,
      tipping=_tipping(page, m),
      runs=[[r["id"], str(r.get("status")),
             page.link(m.path / r["run_dir"] / LOG_HTML, "Concordia log")]
            for r in m.manifest["runs"]])
  return Report(index=index, figures=page.figures, questionnaire=out)

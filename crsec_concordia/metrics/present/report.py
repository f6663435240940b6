"""The HTML report of a run or a compare directory, with its figures.

One self-contained page (figures embedded as base64 PNG, so it can be mailed
or archived alone) at OUT/index.html, the same PNGs under OUT/figures/ (and
SVG or PDF for print, as asked), the metrics exported beside the runs
(metrics/ in each run directory, the compare_* files in a compare
directory: tables.py) and the questionnaire under OUT/questionnaire/.

The pages are templates/run.html.j2 and compare.html.j2; this module
computes what they show, as plain text and data (templating.py).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from crsec_concordia.metrics.classifiers import measured
from crsec_concordia.metrics.measure import aggregate, run_metrics
from crsec_concordia.metrics.measure import interventions
from crsec_concordia.metrics.measure.aggregate import MatcherFactory
from crsec_concordia.metrics.present import (figures, questionnaire,
                                             say_hold_report,
                                             stated_report, tables,
                                             town_report)
from crsec_concordia.metrics.present.gate_lines import gate_lines
from crsec_concordia.metrics.present.templating import (Cell, Lines, Page,
                                                        Stats, Strong)
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.format import (LOG_HTML, METRICS, PER_STEP_CSV,
                                           REPORT, SUMMARY_JSON)
_USAGE_FIELDS = ("calls", "cached_calls", "failed_calls", "prompt_tokens",
                 "completion_tokens")


@dataclasses.dataclass
class Report:
  index: Path
  figures: list[Path]
  questionnaire: Path


def _fmt(value: Any, digits: int = 2) -> str:
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return "–"
  if isinstance(value, float):
    return f"{value:.{digits}f}"
  return str(value)


def _pct(value: Any) -> str:
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return "–"
  return f"{100 * float(value):.0f}%"


def _when(hit: dict[str, Any] | None) -> str:
  if not hit:
    return "never"
  return f"{hit['time']} (step {hit['step']}, +{hit['elapsed_minutes']} min)"


def _short_time(time: str) -> str:
  """"Day 1 09:45" as "D1 09:45": a time-to cell stays narrow."""
  return str(time).replace("Day ", "D", 1)


def time_to_cell(hits: dict[str, dict[str, Any] | None]) -> Lines:
  """The times to each level in at most two lines: the levels reached
  ("50% D1 09:45 (+45 min)"), then those never reached ("90%, 100%:
  never")."""
  reached = [(k, v) for k, v in hits.items() if v]
  reached = ([f"{k} {_short_time(v['time'])} (+{v['elapsed_minutes']} min)"
              for k, v in reached] if len(reached) == 1 else
             [f"{k} {_short_time(v['time'])}" for k, v in reached])
  never = [k for k, v in hits.items() if not v]
  lines = ["; ".join(reached)] if reached else []
  if never:
    lines.append(f"{', '.join(never)}: never" if reached else "never")
  return Lines(lines)


def _targets(summary: dict[str, Any]) -> list[dict[str, Any]]:
  """Per target norm: its text, id and type, and the cells of its row."""
  rows = []
  for tid, t in summary["targets"].items():
    final, tt = t["final"], t["time_to"]
    rows.append({"text": t["text"], "id": tid, "type": t["type"], "cells": [
        _pct(final["belief"]), _pct(final["behaviour"]),
        _pct(final["behaviour_observed"]),
        _pct(final["behaviour_nonviolating"]), _pct(final["plan"]),
        time_to_cell(tt["belief"]), time_to_cell(tt["behaviour"]),
        _fmt(t["behaviour_lag_minutes"].get("50%")),
        str(t["conflicts"]), str(t["violations"])]})
  return rows


def _holders(summary: dict[str, Any]) -> list[dict[str, Any]]:
  """Who holds each target, in their own words: the matches to audit."""
  return [{"text": t["text"],
           "rows": [[agent, Lines(contents)]
                    for agent, contents in sorted(t["holders"].items())]}
          for t in summary["targets"].values()]


def _diffusion_rows(edges: Sequence[dict[str, Any]]) -> list[list[Cell]]:
  return [[e["source"], e["receiver"], e["target"], e["origin"],
           str(e["candidates"]), str(e["accepted"]), str(e["first_time"]),
           "; ".join(str(x) for x in e["examples"])] for e in edges]


def _usage(usage: dict[str, Any] | None) -> dict[str, Any] | None:
  """The per-module rows with their total, and the per-tag rows."""
  if not usage:
    return None
  def rows(data: dict[str, dict[str, int]]) -> list[list[Cell]]:
    return [[k] + [_fmt(v[f]) for f in _USAGE_FIELDS] for k, v in data.items()]
  total = [Strong("total")] + [_fmt(usage["totals"][f]) for f in _USAGE_FIELDS]
  return {"fields": list(_USAGE_FIELDS),
          "modules": rows(usage["by_module"]) + [total],
          "tags": rows(usage["by_tag"])}


def _per_hour(per_hour: pd.DataFrame, targets: Sequence[Any]
              ) -> dict[str, Any] | None:
  if per_hour.empty:
    return None
  columns = ["hour", "conflicts", "norm_conversations", "norm_thoughts"]
  for t in targets:
    columns += [f"belief.{t.id}", f"behaviour.{t.id}"]
  columns = [c for c in columns if c in per_hour]
  rows = [[_short_time(r[c]) if c == "hour" else
           _pct(r[c]) if c.startswith(("belief.", "behaviour."))
           else _fmt(r[c], 0) for c in columns]
          for _, r in per_hour.iterrows()]
  return {"header": [_hour_header(c) for c in columns], "rows": rows}


# The per-hour table's short headers: the CSV keeps the full column names.
_HOUR_HEADERS = {"conflicts": "conflicts", "norm_conversations": "norm talks",
                 "norm_thoughts": "norm thoughts"}


def _hour_header(column: str) -> Lines | str:
  """A per-hour column's header, short: "holds" or "complies" over the
  target's id, so the table fits the page."""
  measure, _, target = column.partition(".")
  if target:
    return Lines([{"belief": "holds", "behaviour": "complies"}[measure],
                  target.replace("_", " ")])
  return _HOUR_HEADERS.get(column, column)


def referee_notes(summary: dict[str, Any], targets: Sequence[Any]
                  ) -> dict[str, str]:
  """Per target id, where the referee's error on its behaviours was
  measured, or why it was not (the summary's `correction` block): the
  behaviour shares are the referee's tags, and on a venue with no recorded
  answers they are raw."""
  block = (summary.get("correction") or {}).get("targets") or {}
  return {t.id: str(((block.get(t.id) or {}).get("behaviour") or {}).get(
      "note") or "referee error not recorded in this summary")
          for t in targets}


def _run_sections(page: Page, m: run_metrics.RunMetrics) -> dict[str, Any]:
  """What run.html.j2 shows below the run's heading."""
  run, summary = m.run, m.summary
  targets, clock = run.targets, run.clock
  totals = summary["totals"]
  notes = measured.report_notes(summary["matcher"], targets)
  marks = interventions.marks(run, m.per_step)
  tokens = (None if totals["prompt_tokens"] is None else
            totals["prompt_tokens"] + totals["completion_tokens"])
  return {
      "targets": _targets(summary),
      "holders": _holders(summary) if run.has_norms else [],
      "target_norms": targets, "matcher_notes": notes,
      "embedder": measured.embedder_note(summary["matcher"]),
      "referee_notes": referee_notes(summary, targets),
      "totals": [_fmt(totals["conflicts"], 0),
                 _fmt(totals["conversations"], 0),
                 _fmt(totals["norm_conversations"], 0),
                 _fmt(totals["thoughts"], 0),
                 _fmt(totals["norm_thoughts"], 0), str(summary["actions"]),
                 str(summary["failures"]), _fmt(totals["llm_calls"], 0),
                 _fmt(tokens, 0)],
      "diffusion": _diffusion_rows(summary["diffusion"]),
      "emergent": summary["emergent_norms"],
      "per_hour": _per_hour(m.per_hour, targets),
      "usage": _usage(summary["usage"]),
      "matcher": summary["matcher"],
      "places": town_report.section(page, [m]),
      "say_hold_do": say_hold_report.run_section(m),
      "stated": stated_report.stated_section(summary.get("stated_belief"), {
          t.id: t.text for t in targets}),
      "figures": {
          "adoption": page.figure(
              "adoption", figures.adoption(m.per_step, targets, clock,
                                           run.name, errors=notes,
                                           marks=marks),
              "Belief (holds), behaviour (complies) and plans per target "
              "norm over simulated time; dotted lines at 50% and 90%."),
          "conflicts": page.figure(
              "conflicts", figures.conflicts(m.per_step, targets, clock,
                                             run.name, marks=marks),
              "Conflicts detected per step, and those about each target "
              "norm."),
          "activity": page.figure(
              "activity", figures.activity(m.per_step, clock, run.name),
              "Norm-related conversations and thoughts per step."),
          "diffusion": page.figure(
              "diffusion", figures.diffusion(
                  summary["diffusion"], run.agents, run.roles, targets,
                  figures.one_run("Norm diffusion (who passed which norm "
                                  "to whom)", run.name)),
              "Who passed which norm to whom: candidates with a source "
              "agent; squares are norm entrepreneurs."),
          "usage": page.figure(
              "usage", figures.usage(summary["usage"], figures.one_run(
                  "LLM calls per module", run.name)),
              "LLM calls and tokens per CRSEC module (usage.json).")},
      "all_cached": _all_cached(summary["usage"])}


def _all_cached(usage: dict[str, Any] | None) -> bool:
  """Whether every call of the run came from the response cache."""
  totals = (usage or {}).get("totals") or {}
  return (not totals.get("calls") and bool(totals.get("cached_calls")))


def _referee_policy(info: dict) -> str:
  """Which of the referee's structures the run applied (run.json's
  `referee_policy`; none recorded: every one, calibration/run_policy.py)."""
  policy = info.get("referee_policy")
  batched = info.get("referee_batched")
  judged = ("a place's slot" if batched and batched["on"]
            else "each action")
  how = (f"; {judged} judged in one call ({batched['source']})"
         if batched else "")
  if not policy:
    return "every one" + how
  return (f"{', '.join(policy.get('structures') or ()) or 'none'} "
          f"({policy.get('source')})" + how)


def run_report(run_dir: str | Path, out_dir: str | Path | None = None, *,
               matcher_factory: MatcherFactory | None = None,
               per_op: int = 20, seed: int = 0,
               figure_formats: Sequence[str] = ()) -> Report:
  """RUN_DIR/metrics/ and the report page, its figures also in
  `figure_formats` ("svg", "pdf")."""
  run = reading.read_run(run_dir)
  out = Path(out_dir) if out_dir else run.path / REPORT
  out.mkdir(parents=True, exist_ok=True)
  m = run_metrics.compute(run, matcher_factory(run) if matcher_factory
                          else None)
  metrics_dir = tables.write_run(m)
  qdir = questionnaire.write([run], out / "questionnaire", per_op=per_op,
                             seed=seed)
  page = Page(out, figure_formats)
  info = run.run
  index = page.write(
      "run.html.j2", name=run.name,
      scenario=str(run.scenario.get("name")), has_norms=run.has_norms,
      info=[run.arm, str(run.seed), str(info.get("status")),
            f"{_fmt(info.get('completed_steps'))} / "
            f"{_fmt(info.get('max_steps'))}",
            str((info.get("model") or {}).get("model", "")),
            _referee_policy(info),
            _fmt(info.get("wall_seconds"), 0) + " s"],
      links=[page.link(run.path / LOG_HTML, "Concordia log"),
             page.link(metrics_dir / PER_STEP_CSV, "per-step CSV"),
             page.link(metrics_dir / tables.PER_HOUR_CSV, "per-hour CSV"),
             page.link(metrics_dir / SUMMARY_JSON, SUMMARY_JSON),
             page.link(qdir / "index.html", "human evaluation kit")],
      gates=gate_lines(run.gates, m.summary["matcher"]),
      **_run_sections(page, m))
  return Report(index=index, figures=page.figures, questionnaire=qdir)


def _stats(stats: dict[str, Any] | None, percent: bool) -> Stats:
  if not stats or stats.get("mean") is None:
    return Stats("–")
  f = _pct if percent else (lambda v: _fmt(v, 1))
  text = f(stats["mean"])
  if stats.get("ci_low") is not None:
    text += f" [{f(stats['ci_low'])}, {f(stats['ci_high'])}]"
  return Stats(text, stats["n"])


def _key_metrics(targets: Sequence[Any]) -> list[tuple[str, str, bool]]:
  keys = [("conflicts_total", "conflicts (total)", False),
          ("norm_conversations_total", "norm-related conversations", False),
          ("norm_thoughts_total", "norm-related thoughts", False)]
  for t in targets:
    keys += [
        (f"belief_final.{t.id}", f"{t.text}: holds at the end", True),
        (f"behaviour_final.{t.id}", f"{t.text}: complies at the end (all)",
         True),
        (f"behaviour_observed_final.{t.id}",
         f"{t.text}: complies at the end (observed)", True),
        (f"behaviour_nonviolating_final.{t.id}",
         f"{t.text}: not violating at the end", True),
        (f"behaviour_mean.{t.id}", f"{t.text}: mean compliance over the run",
         True),
        (f"violations.{t.id}", f"{t.text}: violations", False),
        (f"minutes_to_50_belief.{t.id}",
         f"{t.text}: minutes to 50% belief", False),
        (f"minutes_to_50_behaviour.{t.id}",
         f"{t.text}: minutes to 50% behaviour", False)]
  keys += [("emergent_norms", "emergent norms", False),
           ("llm_calls_total", "LLM calls", False),
           ("tokens_total", "tokens", False)]
  return keys


def _merged_diffusion(normative: Sequence[run_metrics.RunMetrics]
                      ) -> list[dict[str, Any]]:
  """The diffusion edges of all seeds, candidates and acceptances summed."""
  merged: dict[tuple[str, str, str, str], dict[str, Any]] = {}
  for m in normative:
    for e in m.summary["diffusion"]:
      key = (e["source"], e["receiver"], e["target"], e["origin"])
      edge = merged.setdefault(key, {**e, "candidates": 0, "accepted": 0})
      edge["candidates"] += e["candidates"]
      edge["accepted"] += e["accepted"]
  return list(merged.values())


def compare_report(compare_dir: str | Path, out_dir: str | Path | None = None,
                   *, matcher_factory: MatcherFactory | None = None,
                   per_op: int = 20, seed: int = 0,
                   figure_formats: Sequence[str] = ()) -> Report:
  """The compare directory's tables (and each run's) and its page, its
  figures also in `figure_formats` ("svg", "pdf")."""
  cm = aggregate.aggregate(compare_dir, matcher_factory)
  tables.write_compare(cm)
  out = Path(out_dir) if out_dir else cm.path / REPORT
  out.mkdir(parents=True, exist_ok=True)
  first = next(m for ms in cm.runs.values() for m in ms)
  targets, clock = first.run.targets, first.run.clock
  summary = cm.summary
  page = Page(out, figure_formats)
  arms = summary["arms"]
  metrics = []
  for key, label, percent in _key_metrics(targets):
    metrics.append([label] + [
        _stats((arms.get(arm) or {}).get("metrics", {}).get(key), percent)
        for arm in ("normative", "baseline")]
                   + [_stats(summary["effects"].get(key), percent)])
  notes = measured.report_notes(first.summary["matcher"], targets)
  normative = cm.runs.get("normative", [])
  figs = {
      "adoption": page.figure("compare_adoption", figures.compare_adoption(
          cm.per_step, targets, clock, errors=notes),
                              "Belief and behaviour per target norm: "
                              "mean over seeds with 95% CI bands."),
      "conflicts": page.figure(
          "compare_conflicts", figures.compare_conflicts(cm.per_step, clock),
          "Conflicts per step, mean over seeds with 95% CI bands."),
      "activity": page.figure(
          "compare_activity", figures.compare_activity(cm.per_step, clock),
          "Norm-related conversations and thoughts per step."),
      "diffusion": page.figure("diffusion", figures.diffusion(
          _merged_diffusion(normative), first.run.agents, first.run.roles,
          targets), "Who passed which norm to whom, summed over seeds.")
                   if normative else None}
  runs = [[arm, str(m.run.seed), str(m.run.run.get("status")),
           page.link(m.run.path / LOG_HTML, "Concordia log"),
           page.link(m.run.path / METRICS / SUMMARY_JSON, "metrics"),
           _fmt(m.summary["totals"]["conflicts"], 0)]
          for arm, ms in cm.runs.items() for m in ms]
  qruns = [m.run for m in normative] or [m.run for ms in cm.runs.values()
                                         for m in ms]
  qdir = questionnaire.write(qruns, out / "questionnaire", per_op=per_op,
                             seed=seed)
  index = page.write(
      "compare.html.j2", scenario=str(summary.get("scenario")),
      seeds=str(summary.get("seeds")),
      links=[page.link(cm.path / name, name)
             for name in (tables.COMPARE_SUMMARY_JSON,
                          tables.COMPARE_SUMMARY_CSV,
                          tables.COMPARE_PER_STEP_CSV)],
      failed="; ".join(f"{f['arm']} seed {f['seed']}: {f['error']}"
                       for f in summary.get("failed") or ()),
      metrics=metrics, target_norms=targets, matcher_notes=notes,
      embedder=measured.embedder_note(first.summary["matcher"]),
      referee_notes=referee_notes(first.summary, targets),
      figures=figs, has_normative=bool(normative),
      emergent=[dict(e, seed=m.run.seed) for m in normative
                for e in m.summary["emergent_norms"]],
      places=town_report.section(page, normative),
      say_hold_do=say_hold_report.compare_section(summary, targets),
      stated=stated_report.stated_section(summary.get("stated_belief"), {
          t.id: t.text for t in targets}),
      runs=runs, questionnaire=page.link(qdir / "index.html",
                                         "Human evaluation kit"))
  return Report(index=index, figures=page.figures, questionnaire=qdir)

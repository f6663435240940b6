"""The HTML report of a run or a compare directory, with its figures.

One self-contained page (figures embedded as base64 PNG, so it can be mailed
or archived alone) at OUT/index.html, the same PNGs under OUT/figures/, the
metrics exported beside the runs (metrics/ in each run directory, the
compare_* files in a compare directory) and the questionnaire under
OUT/questionnaire/.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from crsec_concordia.metrics import aggregate, figures, matcher_quality
from crsec_concordia.metrics import questionnaire, rundir, run_metrics
from crsec_concordia.metrics.matching import NormMatcher

esc = html.escape
MatcherFactory = Callable[[rundir.RunData], NormMatcher]

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
td,th{border-bottom:1px solid #e4e4e4;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4}
img{max-width:100%;border:1px solid #eee;margin:.4em 0}
h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
.note{color:#666;font-size:.9em}
"""


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
  return esc(str(value))


def _pct(value: Any) -> str:
  if value is None or (isinstance(value, float) and math.isnan(value)):
    return "–"
  return f"{100 * float(value):.0f}%"


def _when(hit: dict[str, Any] | None) -> str:
  if not hit:
    return "never"
  return (f"{esc(hit['time'])} (step {hit['step']}, "
          f"+{hit['elapsed_minutes']} min)")


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
  head = "".join(f"<th>{h}</th>" for h in header)
  body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
                 for row in rows)
  return f"<table><tr>{head}</tr>{body}</table>"


class _Page:
  """Collects sections and figures; figures are saved and embedded."""

  def __init__(self, out: Path, title: str):
    self.out = out
    self.title = title
    self.parts: list[str] = []
    self.figures: list[Path] = []
    (out / "figures").mkdir(parents=True, exist_ok=True)

  def add(self, text: str) -> None:
    self.parts.append(text)

  def figure(self, name: str, data: bytes | None, caption: str) -> None:
    if data is None:
      return
    path = self.out / "figures" / f"{name}.png"
    path.write_bytes(data)
    self.figures.append(path)
    encoded = base64.b64encode(data).decode("ascii")
    self.add(f"<figure><img alt='{esc(caption)}' src='data:image/png;base64,"
             f"{encoded}'><figcaption class='note'>{esc(caption)}"
             f"</figcaption></figure>")

  def link(self, target: Path, text: str) -> str:
    if not target.exists():
      return f"{esc(text)} <span class='note'>(not written)</span>"
    return f"<a href='{esc(os.path.relpath(target, self.out))}'>{esc(text)}</a>"

  def write(self) -> Path:
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>"
            f"{esc(self.title)}</title><style>{_STYLE}</style></head><body>"
            + "\n".join(self.parts) + "</body></html>")
    index = self.out / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


def _targets_table(summary: dict[str, Any]) -> str:
  rows = []
  for tid, t in summary["targets"].items():
    final = t["final"]
    tt = t["time_to"]
    rows.append([
        f"<b>{esc(t['text'])}</b><br><span class='note'>{esc(tid)}, "
        f"{esc(t['type'])}</span>",
        _pct(final["belief"]), _pct(final["behaviour"]),
        _pct(final["behaviour_observed"]),
        _pct(final["behaviour_nonviolating"]),
        _pct(final["plan"]),
        "<br>".join(f"{k}: {_when(v)}" for k, v in tt["belief"].items()),
        "<br>".join(f"{k}: {_when(v)}" for k, v in tt["behaviour"].items()),
        _fmt(t["behaviour_lag_minutes"].get("50%")),
        str(t["conflicts"]), str(t["violations"])])
  return _table(["target norm", "holds (belief)", "complies (all)",
                 "complies (observed)", "not violating", "plans",
                 "time to belief", "time to behaviour",
                 "lag at 50% (min)", "conflicts about it", "violations"],
                rows)


def _holders(summary: dict[str, Any]) -> str:
  """Who holds each target, in their own words: the matches to audit."""
  parts = []
  for t in summary["targets"].values():
    rows = [[esc(agent), "<br>".join(esc(c) for c in contents)]
            for agent, contents in sorted(t["holders"].items())]
    parts.append(f"<details><summary>{esc(t['text'])}: {len(rows)} "
                 f"holder{'s' if len(rows) != 1 else ''} at the end"
                 f"</summary>" + (_table(["agent", "matched norm"], rows)
                                  if rows else "<p>nobody</p>")
                 + "</details>")
  return "".join(parts)


def _emergent_table(emergent: Sequence[dict[str, Any]]) -> str:
  if not emergent:
    return "<p>No norm outside the targets is held by two or more agents.</p>"
  rows = [[esc(e["representative"]), str(e["n_agents"]),
           esc(", ".join(e["agents"])), "yes" if e["seeded"] else "no",
           "<br>".join(f"{esc(m['agent'])}: {esc(m['content'])} "
                       f"<span class='note'>({esc(str(m['origin']))})</span>"
                       for m in e["members"])] for e in emergent]
  return _table(["norm (cluster representative)", "agents", "who",
                 "seeded by an entrepreneur", "members"], rows)


def _diffusion_table(edges: Sequence[dict[str, Any]]) -> str:
  if not edges:
    return "<p>No candidate norm names a source agent.</p>"
  rows = [[esc(e["source"]), esc(e["receiver"]), esc(e["target"]),
           esc(e["origin"]), str(e["candidates"]), str(e["accepted"]),
           esc(str(e["first_time"])),
           esc("; ".join(str(x) for x in e["examples"]))] for e in edges]
  return _table(["from", "to", "target norm", "origin", "candidates",
                 "accepted", "first", "wording"], rows)


def _usage_tables(usage: dict[str, Any] | None) -> str:
  if not usage:
    return "<p>The run has no usage.json.</p>"
  fields = ("calls", "cached_calls", "failed_calls", "prompt_tokens",
            "completion_tokens")
  def rows(data: dict[str, dict[str, int]]) -> list[list[str]]:
    return [[esc(k)] + [_fmt(v[f]) for f in fields] for k, v in data.items()]
  return (_table(["module"] + list(fields),
                 rows(usage["by_module"]) + [["<b>total</b>"] + [
                     _fmt(usage["totals"][f]) for f in fields]])
          + "<details><summary>per tag</summary>"
          + _table(["tag"] + list(fields), rows(usage["by_tag"]))
          + "</details>")


def _per_hour_table(per_hour: pd.DataFrame, targets: Sequence[Any]) -> str:
  if per_hour.empty:
    return "<p>No steps.</p>"
  columns = ["hour", "conflicts", "norm_conversations", "norm_thoughts"]
  for t in targets:
    columns += [f"belief.{t.id}", f"behaviour.{t.id}"]
  columns = [c for c in columns if c in per_hour]
  rows = []
  for _, r in per_hour.iterrows():
    rows.append([esc(str(r[c])) if c == "hour" else
                 _pct(r[c]) if c.startswith(("belief.", "behaviour."))
                 else _fmt(r[c], 0) for c in columns])
  return _table([esc(c) for c in columns], rows)


def _run_sections(page: _Page, m: run_metrics.RunMetrics) -> None:
  run, summary = m.run, m.summary
  targets = run.targets
  clock = run.clock
  totals = summary["totals"]
  page.add("<h2>Adoption of the target norms</h2>" + _targets_table(summary)
           + "<p class='note'>holds = share of all agents holding a qualified "
           "norm that means the target; complies (all) = share of all agents "
           "whose latest relevant action complies; (observed) = among agents "
           "with a relevant action; not violating = 1 - share whose latest "
           "relevant action violates. See docs/metrics.md.</p>"
           + (_holders(summary) if run.has_norms else ""))
  notes = matcher_quality.report_notes(summary["matcher"], targets)
  page.figure("adoption", figures.adoption(m.per_step, targets, clock,
                                           errors=notes),
              "Belief (holds), behaviour (complies) and plans per target norm "
              "over simulated time; dotted lines at 50% and 90%.")
  page.add(_matcher_error_list(notes, targets))
  page.add("<h2>Social conflicts</h2>" + _table(
      ["conflicts", "conversations", "norm-related conversations",
       "thoughts", "norm-related thoughts", "actions", "failed operations",
       "LLM calls", "tokens"],
      [[_fmt(totals["conflicts"], 0), _fmt(totals["conversations"], 0),
        _fmt(totals["norm_conversations"], 0), _fmt(totals["thoughts"], 0),
        _fmt(totals["norm_thoughts"], 0), str(summary["actions"]),
        str(summary["failures"]), _fmt(totals["llm_calls"], 0),
        _fmt(None if totals["prompt_tokens"] is None else
             totals["prompt_tokens"] + totals["completion_tokens"], 0)]]))
  page.figure("conflicts", figures.conflicts(m.per_step, targets, clock),
              "Conflicts detected per step, and those about each target norm.")
  page.figure("activity", figures.activity(m.per_step, clock),
              "Norm-related conversations and thoughts per step.")
  page.add("<h2>Norm diffusion</h2>")
  page.figure("diffusion", figures.diffusion(
      summary["diffusion"], run.agents, run.roles, targets),
              "Who passed which norm to whom: candidates with a source agent; "
              "squares are norm entrepreneurs.")
  page.add(_diffusion_table(summary["diffusion"]))
  page.add("<h2>Emergent norms</h2>" + _emergent_table(
      summary["emergent_norms"]))
  page.add("<h2>Per simulated hour</h2>" + _per_hour_table(m.per_hour,
                                                           targets))
  page.add("<h2>LLM calls per module</h2>")
  page.figure("usage", figures.usage(summary["usage"]),
              "LLM calls and tokens per CRSEC module (usage.json).")
  page.add(_usage_tables(summary["usage"]))
  matcher = summary["matcher"]
  page.add(f"<p class='note'>Matcher: {esc(matcher['rule'])}, threshold "
           f"{matcher['threshold']}, LLM judge "
           f"{'on' if matcher['judge'] else 'off'}.</p>")


def _matcher_error_list(notes: dict[str, str], targets: Sequence[Any]) -> str:
  return ("<p class='note'>Belief is counted by the norm matcher; its error "
          "on labelled norms (the test half of "
          "crsec_concordia/metrics/data/norm_labels.jsonl): "
          + "; ".join(f"<i>{esc(t.text)}</i>: {esc(notes[t.id])}"
                      for t in targets) + ".</p>")


def run_report(run_dir: str | Path, out_dir: str | Path | None = None, *,
               matcher_factory: MatcherFactory | None = None,
               per_op: int = 20, seed: int = 0) -> Report:
  run = rundir.load_run(run_dir)
  out = Path(out_dir) if out_dir else run.path / "report"
  out.mkdir(parents=True, exist_ok=True)
  m = run_metrics.compute(run, matcher_factory(run) if matcher_factory
                          else None)
  metrics_dir = run_metrics.write(m)
  qdir = questionnaire.write([run], out / "questionnaire", per_op=per_op,
                             seed=seed)
  page = _Page(out, f"CRSEC report: {run.name}")
  info = run.run
  page.add(f"<h1>{esc(str(run.scenario.get('name')))}: {esc(run.name)}</h1>"
           + _table(["arm", "seed", "status", "steps", "model", "wall time"],
                    [[esc(run.arm), esc(str(run.seed)),
                      esc(str(info.get('status'))),
                      f"{_fmt(info.get('completed_steps'))} / "
                      f"{_fmt(info.get('max_steps'))}",
                      esc(str((info.get('model') or {}).get('model', ''))),
                      _fmt(info.get('wall_seconds'), 0) + " s"]])
           + "<p>" + " · ".join([
               page.link(run.path / "log.html", "Concordia log"),
               page.link(metrics_dir / "per_step.csv", "per-step CSV"),
               page.link(metrics_dir / "per_hour.csv", "per-hour CSV"),
               page.link(metrics_dir / "summary.json", "summary.json"),
               page.link(qdir / "index.html",
                         "human evaluation kit")]) + "</p>")
  if not run.has_norms:
    page.add("<p class='note'>A baseline run: agents keep no norm "
             "database, so belief is not measured; behaviour and conflicts "
             "come from the events.</p>")
  _run_sections(page, m)
  return Report(index=page.write(), figures=page.figures, questionnaire=qdir)


def _stats(stats: dict[str, Any] | None, percent: bool) -> str:
  if not stats or stats.get("mean") is None:
    return "–"
  f = _pct if percent else (lambda v: _fmt(v, 1))
  text = f(stats["mean"])
  if stats.get("ci_low") is not None:
    text += f" [{f(stats['ci_low'])}, {f(stats['ci_high'])}]"
  return text + f" <span class='note'>n={stats['n']}</span>"


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


def compare_report(compare_dir: str | Path, out_dir: str | Path | None = None,
                   *, matcher_factory: MatcherFactory | None = None,
                   per_op: int = 20, seed: int = 0) -> Report:
  cm = aggregate.aggregate(compare_dir, matcher_factory)
  aggregate.write(cm)
  out = Path(out_dir) if out_dir else cm.path / "report"
  out.mkdir(parents=True, exist_ok=True)
  first = next(m for ms in cm.runs.values() for m in ms)
  targets, clock = first.run.targets, first.run.clock
  summary = cm.summary
  page = _Page(out, f"CRSEC compare: {summary.get('scenario')}")
  arms = summary["arms"]
  page.add(f"<h1>{esc(str(summary.get('scenario')))}: normative vs baseline"
           f"</h1><p>Seeds {esc(str(summary.get('seeds')))}; means over seeds "
           "with 95% t-intervals; effect = normative - baseline, paired by "
           "seed. " + " · ".join([
               page.link(cm.path / "compare_summary.json",
                         "compare_summary.json"),
               page.link(cm.path / "compare_summary.csv",
                         "compare_summary.csv"),
               page.link(cm.path / "compare_per_step.csv",
                         "compare_per_step.csv")]) + "</p>")
  if summary.get("failed"):
    page.add("<p><b>Failed runs:</b> " + esc("; ".join(
        f"{f['arm']} seed {f['seed']}: {f['error']}"
        for f in summary["failed"])) + "</p>")
  rows = []
  for key, label, percent in _key_metrics(targets):
    cells = [esc(label)]
    for arm in ("normative", "baseline"):
      cells.append(_stats((arms.get(arm) or {}).get("metrics", {}).get(key),
                          percent))
    cells.append(_stats(summary["effects"].get(key), percent))
    rows.append(cells)
  page.add("<h2>Normative vs baseline</h2>" + _table(
      ["metric", "normative", "baseline", "effect (normative - baseline)"],
      rows))
  notes = matcher_quality.report_notes(first.summary["matcher"],
                                       targets)
  page.figure("compare_adoption", figures.compare_adoption(
      cm.per_step, targets, clock, errors=notes),
              "Belief and behaviour per target norm: "
              "mean over seeds with 95% CI bands.")
  page.add(_matcher_error_list(notes, targets))
  page.figure("compare_conflicts", figures.compare_conflicts(cm.per_step,
                                                             clock),
              "Conflicts per step, mean over seeds with 95% CI bands.")
  page.figure("compare_activity", figures.compare_activity(cm.per_step,
                                                           clock),
              "Norm-related conversations and thoughts per step.")
  normative = cm.runs.get("normative", [])
  merged: dict[tuple[str, str, str, str], dict[str, Any]] = {}
  for m in normative:
    for e in m.summary["diffusion"]:
      key = (e["source"], e["receiver"], e["target"], e["origin"])
      edge = merged.setdefault(key, {**e, "candidates": 0, "accepted": 0})
      edge["candidates"] += e["candidates"]
      edge["accepted"] += e["accepted"]
  if normative:
    page.add("<h2>Norm diffusion (normative arm, all seeds)</h2>")
    page.figure("diffusion", figures.diffusion(
        list(merged.values()), first.run.agents, first.run.roles, targets),
                "Who passed which norm to whom, summed over seeds.")
    emergent = [dict(e, seed=m.run.seed) for m in normative
                for e in m.summary["emergent_norms"]]
    page.add("<h2>Emergent norms (normative arm)</h2>"
             + _emergent_table(emergent))
  page.add("<h2>Runs</h2>")
  run_rows = []
  for arm, ms in cm.runs.items():
    for m in ms:
      run_rows.append([
          esc(arm), esc(str(m.run.seed)), esc(str(m.run.run.get("status"))),
          page.link(m.run.path / "log.html", "Concordia log"),
          page.link(m.run.path / "metrics" / "summary.json", "metrics"),
          _fmt(m.summary["totals"]["conflicts"], 0)])
  page.add(_table(["arm", "seed", "status", "log", "metrics", "conflicts"],
                  run_rows))
  qruns = [m.run for m in normative] or [m.run for ms in cm.runs.values()
                                         for m in ms]
  qdir = questionnaire.write(qruns, out / "questionnaire", per_op=per_op,
                             seed=seed)
  page.add("<p>" + page.link(qdir / "index.html", "Human evaluation kit")
           + " (items pooled from the normative runs).</p>")
  return Report(index=page.write(), figures=page.figures, questionnaire=qdir)

"""`crsec report`: metrics, figures, an HTML page and a questionnaire.

Given a run directory, writes RUN_DIR/metrics/ (per-step and per-hour CSV,
the long table and the events as CSV and, with the `parquet` extra,
Parquet; summary.json) and RUN_DIR/report/ (index.html with embedded
figures, figures/*.png, or also .svg or .pdf with --figure-format,
questionnaire/). Given a compare directory, aggregates its
runs over seeds first (compare_summary.json and CSVs) and draws normative
vs baseline with confidence bands. Given a sweep directory, aggregates
per condition (crsec_concordia/sweeps/aggregate.py: CSV and Parquet
tables) and draws one figure per metric, conditions side by side.
With --publish DIR and any number of those directories, writes results a
reader needs nothing to run for (metrics/present/publish.py).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from crsec_concordia import outputs
from crsec_concordia.embedding import user as user_embedder
from crsec_concordia.commands.flags import (add_embedder_flag,
                                            add_endpoint_flags,
                                            add_progress_flag, embedder_from,
                                            endpoint_for_run, endpoint_from,
                                            progress_printer)
from crsec_concordia.errors import UserError
from crsec_concordia.judgement_prompts import identity_of
from crsec_concordia.metrics.classifiers.judge import LLMJudge
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.metrics.present import publish, report
from crsec_concordia.models import make_model
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.format import RUN_JSON
from crsec_concordia.sweeps.report import sweep_report


def add_parser(sub) -> None:
  p = sub.add_parser("report", help="metrics, figures, an HTML report and a "
                     "human-evaluation kit for a run, compare or sweep "
                     "directory")
  p.add_argument("path", metavar="RUN_COMPARE_OR_SWEEP_DIR", type=Path,
                 nargs="+", help="one directory; with --publish, several")
  p.add_argument("--publish", type=Path, metavar="DIR",
                 help="write DIR/README.md, DIR/results.json and "
                 "DIR/figures/ (results readable without running anything) "
                 "from all the directories given")
  p.add_argument("--notes", type=Path, metavar="FILE",
                 help="with --publish: a Markdown file of your own reading "
                 "of the runs (what the model can and cannot show, what to "
                 "doubt), put on the page after the model paragraph; keep "
                 "it beside the page to publish again")
  p.add_argument("--out", type=Path,
                 help="report directory (default DIR/report)")
  p.add_argument("--samples", type=int, default=20,
                 help="questionnaire items per agent and operation "
                 "(default 20)")
  p.add_argument("--sample-seed", type=int, default=0,
                 help="seed of the questionnaire sampling (default 0)")
  p.add_argument("--figure-format", choices=("png", "svg", "pdf"),
                 default="png",
                 help="also save the figures as SVG or PDF, for print "
                 "(PNG, at 200 dpi, is always saved and embedded; run and "
                 "compare reports)")
  p.add_argument("--llm-judge", action="store_true",
                 help="confirm each semantic norm match with a yes/no from "
                 "the model endpoint (off by default: embeddings only)")
  add_progress_flag(p)
  add_embedder_flag(p)
  add_endpoint_flags(p)
  p.set_defaults(func=run)


def _matcher_factory(args: argparse.Namespace):
  """How each run's matcher is built: with --embedder's function, else
  the embedder the run used (its run.json's; none named: the default),
  and the --llm-judge where given (with no model flag, a run directory's
  model factory)."""
  given = embedder_from(args)
  judge = None
  if args.llm_judge:
    path = args.path[0]
    endpoint = (endpoint_for_run(args, _run_json(path))
                if reading.is_run_dir(path) else endpoint_from(args))
    judge = LLMJudge(make_model(endpoint, seed=0,
                                progress=progress_printer(args)),
                     identity=identity_of(endpoint))
  used: dict[str, Any] = {}  # The runs' embedders, each imported once.

  def matcher(run) -> NormMatcher | None:
    name = json.dumps(run.run.get("embedder"), sort_keys=True)
    if name not in used:
      used[name] = user_embedder.used_by_run(run.run, given)
    if used[name] is None and judge is None:
      return None  # The default matcher.
    return NormMatcher(run.targets, behaviours=run.behaviours, judge=judge,
                       embedder=used[name])
  return matcher


def _run_json(path: Path) -> dict[str, Any]:
  return json.loads((path / RUN_JSON).read_text(encoding="utf-8"))


def _writable(path: Path, out: Path | None) -> Path:
  """The report directory, and the directory itself (its metrics and
  tables are written beside its runs), checked before anything is computed."""
  outputs.writable_dir(path, "RUN_COMPARE_OR_SWEEP_DIR",
                       fix="copy it somewhere you can write to and report "
                       "on the copy")
  return outputs.writable_dir(out or path / "report",
                              "--out" if out else "the report directory")


def run(args: argparse.Namespace) -> int:
  # A bad --embedder, or a run's that cannot be imported, stops before
  # anything is written.
  given = embedder_from(args)
  for path in args.path:
    if reading.is_run_dir(path):
      user_embedder.used_by_run(_run_json(path), given)
  if args.publish is not None:
    return _publish(args)
  if args.notes is not None:
    raise UserError("--notes goes with --publish DIR: the notes are put on "
                    "the published page")
  if len(args.path) != 1:
    raise UserError("give one directory (several only with --publish DIR)")
  path: Path = args.path[0]
  if args.samples < 1:
    raise UserError("--samples must be at least 1")
  if not path.is_dir():
    raise UserError(f"{path} is not a directory; pass a run directory "
                    "(with run.json) or a compare directory (with "
                    "compare.json)")
  if not (reading.is_sweep_dir(path) or reading.is_compare_dir(path)
          or reading.is_run_dir(path)):
    raise UserError(f"{path} is neither a run directory (no run.json), a "
                    "compare directory (no compare.json) nor a sweep "
                    "directory (no sweep.json); pass one written by `crsec "
                    "run`, `crsec compare` or `crsec sweep`")
  if reading.is_sweep_dir(path) and args.figure_format != "png":
    raise UserError(f"--figure-format {args.figure_format}: a sweep's "
                    "report draws PNG only; report its runs or a compare "
                    "directory for SVG or PDF")
  out = _writable(path, args.out)
  with outputs.writing(path, out):
    return _report(args, path)


def _report(args: argparse.Namespace, path: Path) -> int:
  if reading.is_sweep_dir(path):
    result = sweep_report(path, args.out,
                          matcher_factory=_matcher_factory(args))
    print(f"report: {result.index} ({len(result.figures)} figures; tables "
          f"in {path})")
    return 0
  draw = report.compare_report if reading.is_compare_dir(path) else (
      report.run_report)
  result = draw(path, args.out, matcher_factory=_matcher_factory(args),
                per_op=args.samples, seed=args.sample_seed,
                figure_formats=[args.figure_format])
  print(f"report: {result.index} ({len(result.figures)} figures; "
        f"questionnaire in {result.questionnaire})")
  if reading.is_run_dir(path):
    _say_models(path)
  return 0


def _say_models(run_dir: Path) -> None:
  """One line per model of a run with models by role (metrics/by_model.csv
  has the table): its share of the calls, and how to calibrate it."""
  summary = run_dir / "metrics" / "summary.json"
  rows = (json.loads(summary.read_text(encoding="utf-8")).get("by_model")
          if summary.is_file() else None) or []
  for r in rows:
    n = r["agents"]
    who = " and ".join(
        (["the game master"] if r["game_master"] else [])
        + ([f"{n} agent{'' if n == 1 else 's'}"] if n else []))
    print(f"model {r['model']} ({r['name']}, {who}): {r['calls']} calls, "
          f"{r['failures']} failures, {r['conflicts']} conflicts; "
          + ("calibrated" if r["calibrated"] else
             f"not calibrated: {r['calibrate_with']}"))


def _notes(path: Path | None) -> str | None:
  """The text of --notes, read before anything is written."""
  if path is None:
    return None
  try:
    return path.read_text(encoding="utf-8").strip()
  except (OSError, UnicodeDecodeError) as e:
    why = getattr(e, "strerror", None) or "not UTF-8 text"
    raise UserError(f"--notes {path}: cannot be read ({why}); pass a "
                    "Markdown file") from None


def _publish(args: argparse.Namespace) -> int:
  for path in args.path:
    if not path.is_dir():
      raise UserError(f"{path} is not a directory; pass run, compare or "
                      "sweep directories")
  notes = _notes(args.notes)
  out = outputs.writable_dir(args.publish, "--publish")
  with outputs.writing(out):
    readme = publish.publish(args.path, out,
                             matcher_factory=_matcher_factory(args),
                             notes=notes)
  print(f"published: {readme} (results.json and figures/ beside it)")
  return 0

"""`crsec calibrate`: a model's judgement error measured, for corrected shares.

Its forms (crsec_concordia/calibration/):

  crsec calibrate [SCENARIO ...] [--base-url URL --model NAME] [--out PATH]
      the labelled cases of the venues named (default: every shipped venue
      with a probe file; a held-out venue by the path of its .yaml, its
      .probes.yaml beside it) and the matcher's labelled norms, on the
      model, with a progress bar and the cost; written as the model's
      calibration (the user's data directory, or --out).
  crsec calibrate --sheet RUN_DIR [--out SHEET.csv]
      a labelling sheet of the run's actions and conflicts, for a venue
      with no labelled cases.
  crsec calibrate --labels SHEET.csv [--out PATH]
      the filled sheet read back into the run's model's calibration for
      that venue (no model is asked).
  crsec calibrate --thresholds [--embedder module:function] [--out DIR]
      every similarity threshold of the embedder derived from labelled
      cases (no model is asked) and stored under its name, where runs
      with it find them (docs/calibration.md).
  crsec calibrate [SCENARIO ...] --batch-sizes M [L ...] [--out PATH]
      the venues' referee and DetectConflict cases asked one at a time
      and in batches of each size on the model: the figures, the rules'
      verdicts, kept in batching.json in the user's data directory (or
      under --out), which `--referee-batched` and `--conflicts-batched`
      read when neither is given. Only that: the ordinary calibration is
      the first form.

`crsec report`, `compare` and `publish` then correct behaviour with the
calibration of the runs' own model and venue, and name it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from crsec_concordia import outputs
from crsec_concordia.calibration import probes, run_policy, sheet, store
from crsec_concordia import embedding
from crsec_concordia.commands import calibrate_batched
from crsec_concordia.commands.flags import (add_embedder_flag,
                                            add_endpoint_flags,
                                            add_progress_flag,
                                            embedder_for_run, embedder_from,
                                            endpoint_for_run, endpoint_from,
                                            positive, progress_printer)
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.embedding.records import save_similarity
from crsec_concordia.errors import UserError
from crsec_concordia.judgement_prompts import identity_of
from crsec_concordia.metrics.classifiers import judgement_error as calibrate_lib
from crsec_concordia.metrics.classifiers import probe_run
from crsec_concordia.metrics.classifiers import similarity_calibration
from crsec_concordia.models import make_model
from crsec_concordia.rundir.format import RUN_JSON
from crsec_concordia.runs import model_roles

SHEET_NAME = "labelling_sheet.csv"


def _record_embedder(path: Path, embedder) -> None:
  """The calibration file names the embedder it was measured with (none
  named: MiniLM)."""
  found = embedding.of(embedder).recorded()
  if found:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(found)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n",
                    encoding="utf-8")


def add_parser(sub) -> None:
  p = sub.add_parser(
      "calibrate", help="measure a model's judgement error on labelled cases "
      "(or write and read a labelling sheet) for corrected shares",
      description=__doc__.split("\n", 2)[2],
      formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("scenario", metavar="SCENARIO", nargs="*",
                 help="a shipped scenario's name or a scenario .yaml with "
                 "its .probes.yaml beside it (default: every shipped venue "
                 "with labelled cases)")
  p.add_argument("--out", type=Path, metavar="PATH",
                 help="the calibration file or directory (default: the "
                 "user's data directory); with --sheet, the sheet (default "
                 f"RUN_DIR/{SHEET_NAME})")
  p.add_argument("--sheet", type=Path, metavar="RUN_DIR",
                 help="write a labelling sheet of this run's actions")
  p.add_argument("--labels", type=Path, metavar="SHEET",
                 help="read a filled labelling sheet into its run's model's "
                 "calibration")
  p.add_argument("--for-run", type=Path, metavar="RUN_DIR",
                 help="calibrate each model the run used (its game "
                 "master's and its agents') on the run's venue; the run's "
                 "own model is the one the endpoint flags name, else the "
                 "model factory the run used, and the embedder --embedder's,"
                 " else the run's")
  p.add_argument("--jobs", type=positive("--jobs"), default=probe_run.JOBS,
                 help=f"cases asked at once (default {probe_run.JOBS})")
  p.add_argument("--thresholds", action="store_true",
                 help="derive the embedder's similarity thresholds from "
                 "labelled cases (no model is asked)")
  p.add_argument("--no-norms", action="store_true",
                 help="leave out the matcher's labelled norms")
  p.add_argument("--batch-sizes", type=positive("--batch-sizes"), nargs="+",
                 metavar="N",
                 help="only compare the referee's and DetectConflict's "
                 "cases asked one at a time and in batches of N at one "
                 "place (e.g. a run's median and largest place-slot sizes), "
                 "and keep the verdicts where runs' --referee-batched and "
                 "--conflicts-batched `auto` read them: batching.json in "
                 "the user's data directory, or under --out (no ordinary "
                 "calibration is written)")
  add_progress_flag(p)
  add_embedder_flag(p)
  add_endpoint_flags(p)
  p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
  if args.batch_sizes:
    # Looked up when called, as the other forms look them up (tests put a
    # scripted model and an embedder in their place).
    return calibrate_batched.measure_batching(
        args, lambda *a, **k: make_model(*a, **k),
        lambda: shared_embedder())
  if args.sheet and args.labels:
    raise UserError("--sheet writes a sheet and --labels reads one: give "
                    "one of them")
  if (args.sheet or args.labels) and args.scenario:
    raise UserError("--sheet and --labels take the venue from the run: "
                    "give no SCENARIO with them")
  if args.sheet:
    return _write_sheet(args.sheet, args.out)
  if args.labels:
    return _read_labels(args.labels, args.out)
  if args.thresholds:
    return _derive_thresholds(args)
  if args.for_run:
    return _for_run(args)
  return _calibrate(args)


def _for_run(args: argparse.Namespace) -> int:
  """`crsec calibrate --for-run RUN_DIR`: every model of a run, on its venue."""
  if args.scenario:
    raise UserError("--for-run takes the venue from the run: give no "
                    "SCENARIO with it")
  info_path = args.for_run / RUN_JSON
  if not info_path.is_file():
    raise UserError(f"{args.for_run} is not a run directory (no run.json): "
                    "give the directory `crsec run` printed")
  info = json.loads(info_path.read_text(encoding="utf-8"))
  endpoints = model_roles.run_endpoints(info, endpoint_for_run(args, info))
  embedder = _embedder(args, embedder_for_run(args, info))
  if args.out is not None and args.out.suffix == ".json" and len(
      endpoints) > 1:
    raise UserError("--out FILE.json holds one model's calibration: give a "
                    "directory with --for-run")
  path = info.get("scenario_path")
  venue = (path if path and probes.probes_path_of(Path(path)).is_file()
           else str(info.get("scenario")))
  # The run's own referee policy where it named one, so the venue is
  # scored as that run's referee judged it.
  named = run_policy.of_run(info)
  choice = (run_policy.Chosen(named, "the run's") if named is not None
            else run_policy.AUTO)
  for i, endpoint in endpoints.items():
    if endpoint is None:
      print(f"calibrate: model {i} was handed over by a program: calibrate "
            "it from Python (calibration.md)")
      continue
    print(f"calibrate: model {i} of {args.for_run}")
    _calibrate(args, endpoint=endpoint, names=[venue], embedder=embedder,
               choice=choice)
  return 0


def _derive_thresholds(args: argparse.Namespace) -> int:
  """The embedder's record of thresholds, derived and stored."""
  if args.scenario:
    raise UserError("--thresholds derives from every shipped venue's "
                    "labelled cases: give no SCENARIO with it")
  embedder = embedder_from(args) or shared_embedder()
  if args.out is not None:
    _checked_out(args.out)
  record = similarity_calibration.derive(embedder)
  path = save_similarity(record, args.out)
  for key, value in record.to_dict().items():
    print(f"  {key}: {value}")
  print(f"thresholds: {path}")
  return 0


def _checked_out(path: Path) -> Path:
  """--out checked writable before any model is asked."""
  outputs.writable_dir(path.parent if path.suffix == ".json" else path,
                       "--out", fix="pass a directory you can write to")
  return path


def _embedder(args: argparse.Namespace, embedder=None):
  """`embedder` (a run's), else --embedder's function, else the default.
  A calibration with another embedder is of the pair (model, embedder):
  it goes to the --out FILE.json named, never to the model's own file,
  which runs with MiniLM read."""
  embedder = embedder or embedder_from(args)
  if embedder is None:
    return shared_embedder()
  if args.out is None or args.out.suffix != ".json":
    raise UserError(f"the embedder {embedding.identity_for(embedder).name}: "
                    "give --out FILE.json too (a calibration with your "
                    "embedder is kept apart from the model's own)")
  return embedder


def _calibrate(args: argparse.Namespace, endpoint=None, names=None,
               embedder=None,
               choice: str | run_policy.Chosen = run_policy.AUTO) -> int:
  """The venues' labelled cases on the model, each scored under the
  settings a run of it applies (`choice`: its policy, by default `auto`:
  calibration/run_policy.py)."""
  embedder = embedder or _embedder(args)
  venues = calibrate_lib.venues_named(args.scenario if names is None
                                      else names)
  endpoint = endpoint or endpoint_from(args)
  identity = identity_of(endpoint)
  path = _checked_out(store.target_path(identity, args.out))
  cases = calibrate_lib.case_count(venues)
  print(f"calibrate: {identity}, judgement prompts {identity.prompts}: "
        f"{cases} labelled cases in {len(venues)} venues"
        + ("" if args.no_norms else ", and the matcher's labelled norms"),
        flush=True)
  model = make_model(endpoint, seed=1, progress=progress_printer(args))
  bar = tqdm(total=cases + (0 if args.no_norms else 2), unit="case",
             file=sys.stderr, dynamic_ncols=True, disable=args.no_progress)
  done: dict[str, int] = {}

  def progress(what: str, count: int, of: int) -> None:
    if what.startswith("norms of"):  # The judge's pairs of one venue.
      bar.set_description(f"{what}: {count}/{of} pairs")
      return
    bar.set_description(what)
    bar.update(count - done.get(what, 0))
    done[what] = count
  try:
    result = calibrate_lib.measure(model, identity, venues,
                                   embedder=embedder, jobs=args.jobs,
                                   norms=not args.no_norms, progress=progress,
                                   choice=choice)
  finally:
    bar.close()
  written = calibrate_lib.write(result, path)
  _record_embedder(written, embedder)
  print("\n".join(calibrate_lib.summary_lines(result)))
  print(calibrate_batched.cost_line(result.cost, endpoint))
  print(f"calibration: {written}")
  return 0


def _write_sheet(run_dir: Path, out: Path | None) -> int:
  path, done, rows = sheet.write(run_dir, out or run_dir / SHEET_NAME)
  print(f"sheet: {path} ({rows} rows of {done.scenario.get('name')})")
  print("fill true_tags with the behaviour ids each action shows (several "
        f"separated by spaces, or {sheet.NO_TAG}):")
  for i, description in done.behaviours.items():
    print(f"  {i}: {description}")
  print("and breaks_norm of each conflict with yes or no; rows left empty "
        f"are not counted. Then: crsec calibrate --labels {path}")
  return 0


def _read_labels(path: Path, out: Path | None) -> int:
  identity, entry = sheet.read(path)
  target = store.target_path(identity, out)
  old = None
  if target.is_file():
    old = store.read(target)["venues"].get(entry["scenario"])
  written = store.write(target, identity,
                        {entry["scenario"]: sheet.merged(old, entry)})
  ref = entry["summary"]["referee"]
  con = entry["summary"]["conflicts_detected"]
  print(f"labels: {ref['n']} actions of {entry['scenario']} labelled: the "
        f"run's referee P {ref['p']:.2f} R {ref['r']:.2f}; conflicts "
        f"detected that break their norm: {con['breaches']} of "
        f"{con['labelled']} labelled")
  print(f"calibration: {written} ({identity})")
  return 0

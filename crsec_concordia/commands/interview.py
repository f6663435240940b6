"""`crsec interview`: ask a run's agents questions, as they were after a
slot, without changing them or the run (crsec_concordia/interviews/)."""

from __future__ import annotations

import argparse
from pathlib import Path

from crsec_concordia import outputs
from crsec_concordia.commands.flags import (add_embedder_flag,
                                            add_endpoint_flags,
                                            add_progress_flag,
                                            embedder_for_run, endpoint_for_run,
                                            positive)
from crsec_concordia.errors import UserError
from crsec_concordia.interviews import load_questions
from crsec_concordia.interviews.interview import (default_out, interview,
                                                  interview_scheduled,
                                                  scheduled)
from crsec_concordia.interviews.restore import checkpoint_for
from crsec_concordia.rundir import writing as rundir


def add_parser(sub) -> None:
  p = sub.add_parser(
      "interview", help="ask a run's agents questions",
      description="Ask every agent of a run, restored from its checkpoint "
      "after a slot, the questions of a file; the answers, beside the norms "
      "each agent held, go to a CSV. The agents' memories and the run's "
      "files stay as they were. In a run with several models, each agent "
      "is asked with the one it played with (the endpoint flags give the "
      "run's own; the others are read from its run.json, each key from "
      "its api_key_env), and each answer names it. With no model flag, a "
      "run whose model came from --model-factory is asked with that "
      "factory, and with no --embedder, the agents' memories are read "
      "with the embedder the run used (both named in its run.json).")
  p.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                 help="the directory `crsec run` printed")
  p.add_argument("--questions", metavar="FILE",
                 help="a questions .yaml file, or a shipped one by name "
                 "(rules: what rules people here follow, and why); "
                 "without it, the interviews the run's scenario schedules")
  p.add_argument("--at", type=positive("--at"), metavar="SLOT",
                 help="the slot after which to ask (default: the latest "
                 "with a checkpoint)")
  p.add_argument("--out", type=Path, metavar="CSV",
                 help="where to write the answers (default: "
                 "RUN_DIR/interviews/NAME.csv)")
  add_progress_flag(p)
  add_embedder_flag(p)
  add_endpoint_flags(p)
  p.set_defaults(func=run)


def _used(args: argparse.Namespace) -> dict:
  """The model and embedder to ask with: the flags', else the run's
  (run.json), resolved before anything is written."""
  info = rundir.read_json(args.run_dir / rundir.RUN_JSON)
  return {"endpoint": endpoint_for_run(args, info),
          "embedder": embedder_for_run(args, info)}


def _scheduled(args: argparse.Namespace) -> int:
  if args.at is not None or args.out is not None:
    raise UserError("--at and --out go with --questions; without it, the "
                    "scenario's scheduled interviews are held, each at its "
                    "slots")
  if not scheduled(args.run_dir):
    raise UserError(f"{args.run_dir}: its scenario schedules no interviews; "
                    "give --questions FILE (e.g. --questions rules)")
  used = _used(args)
  with outputs.writing(args.run_dir, then="make room there, then interview "
                       "again"):
    results = interview_scheduled(args.run_dir, progress=not args.no_progress,
                                  **used)
  for result in results:
    _say(result, ", ".join(map(str, sorted(set(result.answers["slot"])))))
  return 0


def _say(result, slots: str) -> None:
  failed = int((result.answers["error"] != "").sum())
  print(f"{len(result.answers)} answers from "
        f"{result.answers['agent'].nunique()} agents after slot {slots}"
        + (f" ({failed} failed; see the error column)" if failed else "")
        + f": {result.path}")


def run(args: argparse.Namespace) -> int:
  if args.questions is None:
    return _scheduled(args)
  # Every input is checked before the model starts.
  step, _ = checkpoint_for(args.run_dir, args.at)
  questionnaire = load_questions(args.questions)
  out = args.out or default_out(args.run_dir, questionnaire)
  used = _used(args)  # A bad embedder stops before the folder is made.
  outputs.writable_dir(out.parent, "--out",
                       fix="give --out a path you can write to")
  with outputs.writing(out.parent, then="make room there, then interview "
                       "again"):
    result = interview(args.run_dir, args.questions, at=step, out=out,
                       progress=not args.no_progress, **used)
  _say(result, str(step))
  return 0

"""`crsec sweep`: a grid of scenarios, conditions, endpoints, arms and seeds
on Ray.

The sweep file is validated whole before anything is created
(crsec_concordia/sweeps/spec.py); the grid is expanded to runs with stable
ids (sweeps/grid.py) and recorded in OUT/sweep.json; runs already
completed in OUT are left as they are, interrupted ones resumed, the rest
run as Ray tasks (sweeps/ray_backend.py) on a local instance or, with
--address, on a cluster. A failed run is recorded with its error and the
others go on. At the end the metrics are aggregated per condition, with
ablation effects against the reference condition (sweeps/aggregate.py);
`crsec report OUT` draws them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from crsec_concordia import outputs
from crsec_concordia.calibration import run_policy
from crsec_concordia.commands.flags import (add_batched_flag,
                                            add_budget_flags,
                                            add_embedder_flag,
                                            add_endpoint_flags,
                                            add_estimate_flags,
                                            add_policy_flag, add_progress_flag,
                                            add_stated_belief_flag,
                                            budget_from, embedder_from,
                                            endpoint_from, matchers_for,
                                            positive)
from crsec_concordia.endings import BUDGET, ENDPOINT_UNREACHABLE
from crsec_concordia.errors import UserError
from crsec_concordia.judgement_prompts import identity_of
from crsec_concordia.models import EndpointConfig
from crsec_concordia.rundir.format import COMPARE_JSON, RUN_JSON
from crsec_concordia.runs import estimate
from crsec_concordia.sweeps import aggregate, driver, grid
from crsec_concordia.sweeps import spec as spec_lib
from crsec_concordia.sweeps import validate
from crsec_concordia.sweeps.progress import Progress
from crsec_concordia.sweeps.ray_backend import RayBackend
from crsec_concordia.sweeps.runjob import RunJob


def add_parser(sub) -> None:
  p = sub.add_parser(
      "sweep", help="run a grid of scenarios, conditions (ablations), "
      "endpoints, arms and seeds as Ray tasks; resumable",
      description="Run every run of a sweep file as a Ray task, on a local "
      "Ray instance or a cluster (--address). Rerunning the same sweep "
      "skips completed runs and resumes interrupted ones.")
  p.add_argument("sweep_file", metavar="SWEEP.yaml", type=Path,
                 help="the sweep file (see examples/sweeps/)")
  p.add_argument("--out", type=Path,
                 help="sweep directory (default runs/sweep-NAME)")
  p.add_argument("--address",
                 help="join the Ray cluster at this address (e.g. "
                 "head:6379, as `ray start --head` prints it; 'auto' for the "
                 "one this machine belongs to); default: a new local Ray "
                 "instance")
  p.add_argument("--num-cpus", type=positive("--num-cpus"),
                 help="CPUs of the local Ray instance: runs at once = this "
                 "/ resources.num_cpus (default: all of this machine's)")
  p.add_argument("--steps", type=positive("--steps"),
                 help="steps per run, instead of the file's `steps`")
  p.add_argument("--no-cache", action="store_true",
                 help="do not replay model answers from the response cache "
                 "(instead of the file's `cache`)")
  p.add_argument("--no-aggregate", action="store_true",
                 help="do not aggregate the metrics at the end")
  add_policy_flag(p, None, also=" (for the endpoints whose entry in the "
                  "file names none)")
  add_progress_flag(p)
  add_stated_belief_flag(p)
  add_batched_flag(p)
  add_embedder_flag(p)
  add_endpoint_flags(p)
  add_budget_flags(p, total=True)
  add_estimate_flags(p)
  p.set_defaults(func=run)


def _out_dir(args: argparse.Namespace, name: str) -> Path:
  """The sweep directory, made and test-written before Ray starts."""
  out: Path = args.out or Path("runs") / f"sweep-{name}"
  if out.exists() and not out.is_dir():
    raise UserError(f"--out {out} is a file; pass a directory")
  for marker, what in ((RUN_JSON, "a run"), (COMPARE_JSON, "a compare")):
    if (out / marker).exists():
      raise UserError(f"--out {out} is {what} directory; pass a new or a "
                      "sweep directory")
  return outputs.writable_dir(out, "--out")


def _policies(spec: spec_lib.SweepFile, endpoints: dict[str, EndpointConfig],
              scenarios: list[str], default: str | None
              ) -> dict[tuple[str, str], run_policy.Chosen | None]:
  """The referee's policy per (endpoint, scenario), resolved here before
  any run starts (a missing calibration is one line, exit 2)."""
  return {(name, scenario): run_policy.resolve(
      spec.endpoints[name].referee_policy or default,
      identity_of(config), scenario)
          for name, config in endpoints.items() for scenario in scenarios}


def run(args: argparse.Namespace) -> int:
  embedder_from(args)  # A bad --embedder stops before anything runs.
  overrides = {"steps": args.steps} if args.steps else {}
  spec, scenarios = validate.load_sweep(args.sweep_file, overrides)
  endpoints = grid.endpoint_configs(spec, lambda: endpoint_from(args))
  name = spec.name or args.sweep_file.stem
  by_name = {s.name: s for s in scenarios}
  built = {(s.name, c): spec_lib.apply(s, condition)
           for s in scenarios for c, condition in spec.conditions.items()}
  runs = grid.expand_grid(spec, list(by_name))
  if args.estimate:
    each = [estimate.of_scenario(built[(r.scenario, r.condition)], r.arm,
                              r.steps) for r in runs]
    for line in estimate.lines(
        [estimate.total(f"{name}, {len(runs)} runs", each)], args.price_in,
        args.price_out):
      print(line)
    return 0
  policies = _policies(spec, endpoints, list(by_name), args.referee_policy)
  out = _out_dir(args, name)
  with outputs.writing(out, then="make room there, then the same `crsec "
                       "sweep` continues"):
    with driver.Lock(out):
      data = grid.manifest(
          name, str(args.sweep_file), spec,
          {n: str(s.source_path) if s.source_path else None
           for n, s in by_name.items()}, endpoints, runs,
          previous=grid.read_manifest(out))
      book = driver.StatusBook(out, data)
      jobs, done, other = driver.prepare(
          out, runs, lambda r: built[(r.scenario, r.condition)], endpoints,
          cache=spec.cache and not args.no_cache, policies=policies,
          models={c: k.models for c, k in spec.conditions.items()
                  if k.models},
          stated_belief=args.stated_belief)
      budget = budget_from(args, tuple((out / r.run_dir).resolve()
                                       for r in runs))
      for job in jobs:
        job.embedder, job.embedder_dir = args.embedder, os.getcwd()
        job.budget, job.outage_wait = budget, args.outage_wait
        job.referee_batched = args.referee_batched
        job.conflicts_batched = args.conflicts_batched
      progress = _start(book, runs, jobs, done, other, out)
      progress.shown = not args.no_progress
      if jobs and _play(args, spec, out, jobs, book, progress) == 130:
        return 130
      progress.show(force=True)
      progress.close()
      book.data["wall_seconds"] = round(time.monotonic() - progress.start, 1)
      completed, failed = driver.finish(book)
      stopped = sum(r["status"] in ("stopped", "interrupted")
                    for r in book.data["runs"])
      ending = (BUDGET if any(r["status"] == "stopped"
                              for r in book.data["runs"])
                else ENDPOINT_UNREACHABLE)
    minutes, seconds = divmod(int(book.data["wall_seconds"]), 60)
    print(f"sweep: {completed}/{len(runs)} runs completed, {failed} failed, "
          + (f"{stopped} stopped (run the same `crsec sweep` again, with "
             "higher caps for a budget, to continue them), " if stopped
             else "")
          + f"in {minutes}m{seconds:02d}s; status in {out / grid.SWEEP_JSON}")
    if completed and not args.no_aggregate:
      result = aggregate.aggregate_sweep(out, matchers_for(embedder_from(args)))
      aggregate.write(result)
      for line in aggregate.headline(result):
        print(f"  {line}")
      print(f"sweep: wrote {out / aggregate.SWEEP_SUMMARY_JSON}; `crsec "
            f"report {out}` draws it")
  if not completed and not stopped:
    raise UserError(f"every run failed; see the errors in "
                    f"{out / grid.SWEEP_JSON} and rerun with -v")
  return 1 if failed else ending.exit_code if stopped else 0


def _start(book: driver.StatusBook, runs: list[grid.RunSpec],
           jobs: list[RunJob], done: list[str], other: dict[str, str],
           out: Path) -> Progress:
  """sweep.json as the sweep starts, and the progress line."""
  for run_id in done:  # Completed before this driver started (or by a
    # worker that outlived a killed driver): kept as they are.
    book.mark(run_id, status="completed", action="reused", error=None)
  for run_id, why in other.items():
    book.mark(run_id, status="failed", action="none", error=why)
  for job in jobs:  # Whatever a previous driver left them as.
    book.mark(job.id, status="pending")
  book.save()
  progress = Progress(len(runs), reused=len(done))
  progress.failed = len(other)
  for why in other.values():
    progress.say(f"sweep: FAILED: {why}")
  progress.read((out / r.run_dir) for r in runs if r.id in done)
  progress.say(f"sweep: {len(runs)} runs in {out} ({len(done)} already "
               f"completed, {len(jobs)} to run)")
  return progress


def _play(args: argparse.Namespace, spec: spec_lib.SweepFile, out: Path,
          jobs: list[RunJob], book: driver.StatusBook, progress: Progress) -> int:
  """Runs the jobs as Ray tasks; 130 when interrupted, else 0."""
  backend = RayBackend(
      address=args.address, num_cpus=args.num_cpus or os.cpu_count(),
      resources=spec.resources, retries=spec.retries,
      embedded=any(job.endpoint.embedded for job in jobs),
      verbose=bool(getattr(args, "verbose", False)))
  try:
    if args.address:
      backend.check_shared_directory(out / grid.SWEEP_JSON)
    driver.run(jobs, backend, book, progress, limits={
        n: e.max_concurrent_runs for n, e in spec.endpoints.items()})
  except KeyboardInterrupt:
    progress.close()
    print("crsec: sweep interrupted; run the same `crsec sweep` again "
          "to continue (completed runs are kept)", file=sys.stderr,
          flush=True)
    return 130
  finally:
    backend.close()
  return 0

"""`crsec compare`: the normative and baseline arms on the same seeds.

The two-arm case of a sweep (crsec_concordia/sweeps/): one scenario, one
condition, one endpoint, both arms over the seeds; `--models FILE` (or
`--gm-base-url`) puts both arms' runs on the same models by role
(runs/model_roles.py), as `crsec run` takes them. The grid, the
skip-or-resume logic and the scheduler are the sweep's; the runs go to
OUT/normative/seed_N and OUT/baseline/seed_N, up to --jobs at a time in
threads (or as Ray tasks with --ray or --address); OUT/compare.json is
written before the runs (status running) and after, then the metrics are
aggregated over seeds (crsec_concordia.metrics.measure.aggregate) into
compare_summary.json and CSVs.

A run already in place for the same arm, seed and steps is reused when it
completed and resumed (`runner.resume_episode`) when it was interrupted, so
an interrupted compare continues where it stopped. With `--until-decided`
the compare adds one seed pair at a time until the paper's findings are
decided (compare_looks.py).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path
from typing import Any

from crsec_concordia import outputs
from crsec_concordia.calibration import run_policy
from crsec_concordia.commands import compare_looks
from crsec_concordia.commands.flags import (add_batched_flag,
                                            add_budget_flags,
                                            add_embedder_flag,
                                            add_endpoint_flags,
                                            add_estimate_flags,
                                            add_models_flags, add_policy_flag,
                                            add_progress_flag,
                                            add_stated_belief_flag,
                                            budget_from,
                                            embedder_from, endpoint_from,
                                            matchers_for, models_spec_from,
                                            positive)
from crsec_concordia.endings import BUDGET, ENDPOINT_UNREACHABLE
from crsec_concordia.errors import UserError
from crsec_concordia.judgement_prompts import identity_of
from crsec_concordia.metrics.measure import aggregate
from crsec_concordia.metrics.present import sequential, tables
from crsec_concordia.models import EndpointConfig
from crsec_concordia.rundir import writing
from crsec_concordia.rundir.format import ARMS, COMPARE_JSON, RUN_JSON
from crsec_concordia.runs import estimate, model_roles
from crsec_concordia.scenarios import Scenario, ScenarioError, load_scenario
from crsec_concordia.sweeps import driver, execute, grid, runjob
from crsec_concordia.sweeps.ray_backend import RayBackend
from crsec_concordia.sweeps.spec import Resources, SweepFile, parse_seeds

__all__ = ["ARMS", "add_parser", "parse_seeds", "run"]


def add_parser(sub) -> None:
  p = sub.add_parser(
      "compare", help="run the normative and baseline arms on the same seeds "
      "and aggregate their metrics with 95%% confidence intervals")
  p.add_argument("scenario", metavar="SCENARIO",
                 help="scenario name or YAML path")
  p.add_argument("--seeds", default="1-3",
                 help="seeds: a range 1-5, a list 1,3,7 or one seed 4 "
                 "(default 1-3)")
  p.add_argument("--steps", type=positive("--steps"),
                 help="steps per run (default: the scenario's max_steps)")
  p.add_argument("--out", type=Path,
                 help="compare directory (default runs/compare-SCENARIO-TIME)")
  p.add_argument("--jobs", type=positive("--jobs"), default=2,
                 help="runs at a time, in threads (default 2; with --ray, "
                 "the CPUs of the local Ray instance)")
  p.add_argument("--ray", action="store_true",
                 help="run as Ray tasks on a local Ray instance (as `crsec "
                 "sweep`), not in threads")
  p.add_argument("--address",
                 help="run as Ray tasks on the Ray cluster at this address")
  # Sequential compare (compare_looks.py): seed pairs until decided.
  p.add_argument("--until-decided", action="store_true",
                 help="after the --seeds (at least 3), add one seed pair at "
                 "a time until every finding the venue allows is decided "
                 "(a group-sequential rule; docs/metrics.md)")
  p.add_argument("--max-seeds", type=positive("--max-seeds"),
                 help="with --until-decided: the most seeds (default "
                 f"{sequential.MOST})")
  add_progress_flag(p)
  add_stated_belief_flag(p)
  add_batched_flag(p)
  add_policy_flag(p, run_policy.DEFAULT)
  add_embedder_flag(p)
  add_endpoint_flags(p)
  add_models_flags(p)
  add_budget_flags(p, total=True)
  add_estimate_flags(p)
  p.set_defaults(func=run)


def _load_scenario(name: str) -> Scenario:
  try:
    return load_scenario(name)
  except ScenarioError as e:  # Its first problem, as one line.
    raise UserError(str(e).splitlines()[0]) from None


def _write_manifest(out: Path, manifest: dict[str, Any]) -> None:
  writing.write_json(out / COMPARE_JSON, manifest)


def _backend(args: argparse.Namespace, embedded: bool):
  """Threads by default; Ray tasks with --ray or --address."""
  if not (args.ray or args.address):
    return execute.ThreadBackend(args.jobs)
  return RayBackend(address=args.address, num_cpus=args.jobs,
                    resources=Resources(), retries=1, embedded=embedded,
                    verbose=bool(getattr(args, "verbose", False)))


def _out_dir(args: argparse.Namespace, name: str) -> Path:
  """The compare directory, made and test-written before any run starts."""
  stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
  out: Path = args.out or Path("runs") / f"compare-{name}-{stamp}"
  if out.exists() and not out.is_dir():
    raise UserError(f"--out {out} is a file; pass a directory")
  if (out / RUN_JSON).exists():
    raise UserError(f"--out {out} is a run directory; pass a new or a "
                    "compare directory")
  return outputs.writable_dir(out, "--out")


def _estimate(args: argparse.Namespace, scenario: Scenario,
              seeds: list[int]) -> int:
  """--estimate: both arms over the seeds, and their total."""
  arms = [estimate.of_scenario(scenario, arm, args.steps) for arm in ARMS]
  runs = [estimate.RunEstimate(f"{e.label}, {len(seeds)} seed(s)",
                            e.agent_hours * len(seeds), e.calls * len(seeds),
                            e.tokens * len(seeds), e.rates) for e in arms]
  for line in estimate.lines(
      [*runs, estimate.total(f"{scenario.name}, both arms", runs)],
      args.price_in, args.price_out):
    print(line)
  return 0


def run(args: argparse.Namespace) -> int:
  seeds = parse_seeds(args.seeds)
  if args.until_decided:
    compare_looks.design_from(args, len(seeds))
  elif args.max_seeds:
    raise UserError("--max-seeds is for --until-decided; pass both, or "
                    "--seeds alone")
  if args.estimate:
    return _estimate(args, _load_scenario(args.scenario), seeds)
  endpoint = endpoint_from(args)
  embedder_from(args)  # A bad --embedder stops before anything runs.
  models = models_spec_from(args)
  scenario = _load_scenario(args.scenario)
  # Both arms' runs play the same models by role: the flags' spec, else
  # the scenario's block (checked here, before anything runs).
  spec = model_roles.spec_of(models, scenario)
  model_roles.check_spec(spec, scenario)
  # The referee's policy is the game master's model's (as `crsec run`).
  gm_endpoint, _ = model_roles.game_master_endpoint(spec)
  policy = run_policy.resolve(args.referee_policy, identity_of(
      gm_endpoint or endpoint), scenario)
  out = _out_dir(args, scenario.name)
  with outputs.writing(out, then="make room there, then the same `crsec "
                       "compare` continues"):
    if args.until_decided:
      return compare_looks.until_decided(
          args, out, seeds, lambda s, looks: _compare(
              args, out, scenario, s, endpoint, policy, models, looks))
    return _compare(args, out, scenario, seeds, endpoint, policy, models)


def _compare(args: argparse.Namespace, out: Path, scenario: Scenario,
             seeds: list[int], endpoint: EndpointConfig,
             policy: run_policy.Chosen | None = None,
             models: dict[str, Any] | None = None,
             looks: compare_looks.Looks | None = None) -> int:
  """Runs what is not done yet, records it in compare.json, aggregates
  (`policy`: the referee's, `models`: the models spec the flags give, for
  every run; `looks`: --until-decided's, deciding the findings)."""
  name = scenario.name
  # The sweep of this comparison: one scenario, condition and endpoint.
  spec = SweepFile.model_validate({"scenarios": [name], "seeds": seeds,
                                   "arms": list(ARMS), "steps": args.steps})
  runs = grid.expand_grid(spec, [name],
                          layout=lambda r: f"{r.arm}/seed_{r.seed}")
  jobs, reused, _ = driver.prepare(
      out, runs, lambda r: scenario, {n: endpoint for n in spec.endpoints},
      progress=(args.jobs == 1 and not (args.ray or args.address)
                and not args.no_progress),
      policies={(n, name): policy for n in spec.endpoints},
      models={c: models for c in spec.conditions} if models else None,
      stated_belief=args.stated_belief)
  budget = budget_from(args, tuple((out / r.run_dir).resolve() for r in runs))
  for job in jobs:
    job.embedder, job.embedder_dir = args.embedder, os.getcwd()
    job.budget, job.outage_wait = budget, args.outage_wait
    job.referee_batched = args.referee_batched
    job.conflicts_batched = args.conflicts_batched
  manifest: dict[str, Any] = {
      "scenario": name, "scenario_path": str(args.scenario), "seeds": seeds,
      "steps": args.steps, "jobs": args.jobs,
      "model": endpoint.describe(), "status": "running",
      "started": datetime.datetime.now().isoformat(timespec="seconds"),
      "arms": {arm: [] for arm in ARMS}, "failed": [],
      **({compare_looks.BLOCK: looks.block} if looks else {})}
  _write_manifest(out, manifest)
  by_id = {r.id: r for r in runs}
  for run_id in reused:
    r = by_id[run_id]
    print(f"compare: {r.arm} seed {r.seed}: reusing {out / r.run_dir}",
          flush=True)
  start = time.monotonic()
  outcomes, failed, person_errors = _play(args, out, by_id, jobs,
                                          endpoint.embedded)
  done = set(reused) | {i for i, o in outcomes.items()
                        if o.status == "completed"}
  for r in runs:
    if r.id in done:
      manifest["arms"][r.arm].append(r.run_dir)
  stopped = [{"arm": by_id[i].arm, "seed": by_id[i].seed, "status": o.error}
             for i, o in outcomes.items()
             if o.status in ("stopped", "interrupted")]
  # How the compare ends when no run failed but some stopped
  # (endings.py): at a budget, or with the endpoint down.
  ending = (None if failed or not stopped else
            BUDGET if any(o.status == "stopped" for o in outcomes.values())
            else ENDPOINT_UNREACHABLE)
  manifest["failed"], manifest["stopped"] = failed, stopped
  manifest["status"] = ("partial" if failed else
                        ending.status if ending else "completed")
  manifest["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
  manifest["wall_seconds"] = round(time.monotonic() - start, 1)
  _write_manifest(out, manifest)
  if ending is not None:
    print(f"compare: {len(stopped)} run(s) {ending.status}; run the same "
          "`crsec compare` again" + (" with higher caps" if ending is BUDGET
                                     else "") + " to continue them",
          file=sys.stderr, flush=True)
  if not done:
    if ending is not None:
      return ending.exit_code
    if person_errors:
      raise UserError(person_errors[0])
    raise UserError(f"every run failed (first: {failed[0]['error']}); see "
                    f"{out} and rerun with -v")
  metrics = aggregate.aggregate(out, matchers_for(embedder_from(args)))
  tables.write_compare(metrics)
  if looks is not None and not failed:
    looks.decide(metrics)
    _write_manifest(out, manifest)
  _print_effects(metrics.summary)
  print(f"compare: wrote {out / tables.COMPARE_SUMMARY_JSON}; "
        f"`crsec report {out}` draws it")
  return 1 if failed else ending.exit_code if ending else 0


def _play(args: argparse.Namespace, out: Path, by_id: dict[str, grid.RunSpec],
          jobs: list[runjob.RunJob], embedded: bool
          ) -> tuple[dict[str, runjob.Outcome], list[dict[str, Any]],
                     list[str]]:
  """Runs the jobs, saying each start and end: (outcomes by run id, the
  failed runs as compare.json lists them, the person's errors among them)."""
  failed: list[dict[str, Any]] = []
  person_errors: list[str] = []

  def on_start(job: runjob.RunJob) -> None:
    if args.no_progress:
      return
    found = runjob.state(job.run_dir, job.arm, job.seed, job.steps)
    what = (f"resuming {out / by_id[job.id].run_dir}"
            if found == "interrupted" else "running")
    print(f"compare: {job.arm} seed {job.seed}: {what}", flush=True)

  def on_done(job: runjob.RunJob, outcome: runjob.Outcome) -> None:
    if outcome.status == "completed":
      print(f"compare: {job.arm} seed {job.seed}: done", flush=True)
      return
    if outcome.status in ("stopped", "interrupted"):
      print(f"compare: {job.arm} seed {job.seed}: {outcome.error}",
            file=sys.stderr, flush=True)
      return
    if outcome.error_kind in runjob.PERSON_ERRORS:
      person_errors.append(outcome.error or "")
    failed.append({"arm": job.arm, "seed": job.seed, "error": outcome.error})
    print(f"compare: {job.arm} seed {job.seed}: FAILED: {outcome.error}",
          file=sys.stderr, flush=True)

  if not jobs:
    return {}, failed, person_errors
  backend = _backend(args, embedded)
  try:
    outcomes = execute.schedule_jobs(jobs, backend, on_start=on_start,
                                     on_done=on_done, poll=0.5)
  finally:
    backend.close()
  return outcomes, failed, person_errors


def _print_effects(summary: dict[str, Any]) -> None:
  def fmt(stats: dict[str, Any] | None) -> str:
    if not stats or stats.get("mean") is None:
      return "n/a"
    if stats.get("ci_low") is None:
      return f"{stats['mean']:.2f} (n={stats['n']})"
    return (f"{stats['mean']:.2f} [{stats['ci_low']:.2f}, "
            f"{stats['ci_high']:.2f}] (n={stats['n']})")
  effects = summary.get("effects", {})
  keys = ["conflicts_total"] + sorted(k for k in effects
                                      if k.startswith("behaviour_final."))
  for key in keys:
    if key in effects:
      print(f"  effect normative - baseline {key}: {fmt(effects[key])}")

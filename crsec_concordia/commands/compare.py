"""`crsec compare`: the normative and baseline arms on the same seeds.

Runs every (arm, seed) through `crsec_concordia.runner.run_episode`, up to
--jobs at a time in threads, into OUT/normative/seed_N and
OUT/baseline/seed_N; writes OUT/compare.json (before the runs, with status
running, and after), then aggregates the metrics over seeds
(crsec_concordia.metrics.aggregate) into compare_summary.json and CSVs.

A run already in place for the same arm, seed and steps is reused when it
completed and resumed (`runner.resume_episode`) when it was interrupted, so
an interrupted compare continues where it stopped.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import importlib
import json
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

from crsec_concordia.errors import UserError

_LOG = logging.getLogger(__name__)
ARMS = ("normative", "baseline")
_SEEDS_HELP = "use a range like 1-5, a list like 1,3,7 or one seed like 4"


def parse_seeds(text: str) -> list[int]:
  """"1-5" -> 1..5, "1,3,7" -> [1, 3, 7], "4" -> [4]; mixed "1-3,7" too."""
  seeds: list[int] = []
  parts = [p.strip() for p in str(text).split(",")]
  if not parts or any(not p for p in parts):
    raise UserError(f"--seeds {text!r} is not understood: {_SEEDS_HELP}")
  for part in parts:
    match = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
    if not match:
      raise UserError(f"--seeds {text!r} is not understood: {_SEEDS_HELP}")
    low = int(match.group(1))
    high = int(match.group(2)) if match.group(2) else low
    if high < low:
      raise UserError(f"--seeds {text!r} has a range that runs backwards "
                      f"({part}): write it low-high, e.g. {high}-{low}")
    seeds.extend(range(low, high + 1))
  if len(set(seeds)) != len(seeds):
    raise UserError(f"--seeds {text!r} names a seed twice: {_SEEDS_HELP}")
  return seeds


def _positive(name: str):
  def convert(text: str) -> int:
    try:
      value = int(text)
    except ValueError:
      raise argparse.ArgumentTypeError(
          f"{name} must be a whole number, not {text!r}") from None
    if value < 1:
      raise argparse.ArgumentTypeError(f"{name} must be at least 1")
    return value
  return convert


def add_parser(sub) -> None:
  from crsec_concordia.cli import add_endpoint_flags  # pylint: disable=import-outside-toplevel
  p = sub.add_parser(
      "compare", help="run the normative and baseline arms on the same seeds "
      "and aggregate their metrics with 95%% confidence intervals")
  p.add_argument("scenario", metavar="SCENARIO",
                 help="scenario name or YAML path")
  p.add_argument("--seeds", default="1-3",
                 help="seeds: a range 1-5, a list 1,3,7 or one seed 4 "
                 "(default 1-3)")
  p.add_argument("--steps", type=_positive("--steps"),
                 help="steps per run (default: the scenario's max_steps)")
  p.add_argument("--out", type=Path,
                 help="compare directory (default runs/compare-SCENARIO-TIME)")
  p.add_argument("--jobs", type=_positive("--jobs"), default=2,
                 help="runs at a time, in threads (default 2)")
  add_endpoint_flags(p)
  p.set_defaults(func=run)


def _import(module: str, what: str) -> Any:
  try:
    return importlib.import_module(module)
  except ModuleNotFoundError as e:
    if e.name and module.startswith(e.name):
      raise UserError(f"{module} is not installed, so `crsec compare` cannot "
                      f"{what}; update the package (`make setup`)") from None
    raise


def _load_scenario(name: str) -> Any:
  scenarios = _import("crsec_concordia.scenarios", "load the scenario")
  try:
    return scenarios.load_scenario(name)
  except UserError:
    raise
  except Exception as e:  # ScenarioError and friends: a person's problem.
    if type(e).__name__ == "ScenarioError":
      raise UserError(str(e).splitlines()[0]) from None
    raise


def _existing(run_dir: Path, arm: str, seed: int, steps: int | None) -> str:
  """"completed" or "interrupted" for the same run already there, else ""."""
  try:
    info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
  except (OSError, json.JSONDecodeError):
    return ""
  if (info.get("arm") != arm or info.get("seed") != seed
      or (steps is not None and info.get("max_steps") != steps)):
    return ""
  return "completed" if info.get("status") == "completed" else "interrupted"


def _write_manifest(out: Path, manifest: dict[str, Any]) -> None:
  (out / "compare.json").write_text(json.dumps(manifest, indent=2),
                                    encoding="utf-8")


def run(args: argparse.Namespace) -> int:
  seeds = parse_seeds(args.seeds)
  from crsec_concordia.models import EndpointConfig  # pylint: disable=import-outside-toplevel
  endpoint = EndpointConfig.resolve(args.base_url, args.api_key, args.model,
                                    args.schema_mode, args.timeout)
  scenario = _load_scenario(args.scenario)
  runner = _import("crsec_concordia.runner", "run episodes")
  name = str(getattr(scenario, "name", None) or Path(args.scenario).stem)
  stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
  out: Path = args.out or Path("runs") / f"compare-{name}-{stamp}"
  if out.exists() and not out.is_dir():
    raise UserError(f"--out {out} is a file; pass a directory")
  if (out / "run.json").exists():
    raise UserError(f"--out {out} is a run directory; pass a new or a "
                    "compare directory")
  out.mkdir(parents=True, exist_ok=True)

  manifest: dict[str, Any] = {
      "scenario": name, "scenario_path": str(args.scenario), "seeds": seeds,
      "steps": args.steps, "jobs": args.jobs,
      "model": endpoint.describe(), "status": "running",
      "started": datetime.datetime.now().isoformat(timespec="seconds"),
      "arms": {arm: [] for arm in ARMS}, "failed": []}
  _write_manifest(out, manifest)
  jobs = [(arm, seed) for seed in seeds for arm in ARMS]
  done: dict[tuple[str, int], Path] = {}
  failed: list[dict[str, Any]] = []
  person_errors: list[Exception] = []
  start = time.monotonic()

  def one(arm: str, seed: int) -> Path:
    target = out / arm / f"seed_{seed}"
    existing = _existing(target, arm, seed, args.steps)
    if existing == "completed":
      print(f"compare: {arm} seed {seed}: reusing {target}", flush=True)
      return target
    if existing == "interrupted":
      print(f"compare: {arm} seed {seed}: resuming {target}", flush=True)
      return Path(runner.resume_episode(target, endpoint=endpoint,
                                        progress=args.jobs == 1))
    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"compare: {arm} seed {seed}: running", flush=True)
    return Path(runner.run_episode(scenario, arm=arm, seed=seed,
                                   out_dir=target, endpoint=endpoint,
                                   steps=args.steps,
                                   progress=args.jobs == 1))

  with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
    futures = {pool.submit(one, arm, seed): (arm, seed) for arm, seed in jobs}
    for future in concurrent.futures.as_completed(futures):
      arm, seed = futures[future]
      try:
        done[(arm, seed)] = future.result()
        print(f"compare: {arm} seed {seed}: done", flush=True)
      except Exception as e:  # pylint: disable=broad-except
        if type(e).__name__ in ("UserError", "EndpointError",
                                "ModelFileError"):
          person_errors.append(e)
        _LOG.debug("run failed", exc_info=True)
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        failed.append({"arm": arm, "seed": seed, "error": message})
        print(f"compare: {arm} seed {seed}: FAILED: {message}",
              file=sys.stderr, flush=True)

  for arm, seed in jobs:
    if (arm, seed) in done:
      path = done[(arm, seed)]
      try:
        path = path.resolve().relative_to(out.resolve())
      except ValueError:
        pass
      manifest["arms"][arm].append(str(path))
  manifest["failed"] = failed
  manifest["status"] = "completed" if not failed else "partial"
  manifest["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
  manifest["wall_seconds"] = round(time.monotonic() - start, 1)
  _write_manifest(out, manifest)
  if not done:
    if person_errors:
      raise person_errors[0]
    raise UserError(f"every run failed (first: {failed[0]['error']}); see "
                    f"{out} and rerun with -v")

  from crsec_concordia.metrics import aggregate  # pylint: disable=import-outside-toplevel
  metrics = aggregate.aggregate(out)
  aggregate.write(metrics)
  _print_effects(metrics.summary)
  print(f"compare: wrote {out / 'compare_summary.json'}; "
        f"`crsec report {out}` draws it")
  return 1 if failed else 0


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

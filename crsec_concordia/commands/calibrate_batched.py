"""`crsec calibrate --batch-sizes M [L ...]`: a model measured batched.

A run asks a place's slot's referee and DetectConflict questions together
(`--referee-batched`, `--conflicts-batched`) by default only where the
model's answers were measured to hold so (calibration/batching.py); the
package ships the embedded model's measurement, and this form measures
any other: the venues' labelled referee and conflict cases asked one at a
time and in batches of each size, as a run asks them
(metrics/classifiers/batch_probe_run.py), each venue's figures and the
rules' verdicts printed, and both operations' verdicts kept in the
person's calibration directory (`batching.json`, which runs read before the
package's) or under --out. It does only the batching comparison: the
ordinary calibration is `crsec calibrate` without --batch-sizes.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from crsec_concordia import embedding, outputs
from crsec_concordia.calibration import batching, run_policy
from crsec_concordia.errors import UserError
from crsec_concordia.judgement_prompts import identity_of
from crsec_concordia.metrics.classifiers import batch_probe_run as asking
from crsec_concordia.metrics.classifiers import judgement_error
from crsec_concordia.models import EndpointConfig
from crsec_concordia.commands.flags import endpoint_from, progress_printer

# The flags --batch-sizes does not go with: the other forms, each its own
# measurement, and another embedder (runs read the verdicts by model).
OTHER_FORMS = ("sheet", "labels", "thresholds", "for_run", "embedder")


def batching_path(out: Path | None) -> Path:
  """Where the verdicts go: --out itself if it names a .json file, else
  batching.json in --out or in the person's calibration directory."""
  if out is None:
    return batching.user_record()
  return out if out.suffix == ".json" else out / batching.RECORD.name


def checked(args: argparse.Namespace) -> Path:
  """The flags checked, each problem one line (UserError) before any model
  is asked; the file the verdicts go to."""
  given = [f"--{f.replace('_', '-')}" for f in OTHER_FORMS
           if getattr(args, f, None)]
  if given:
    raise UserError(f"--batch-sizes measures the model batched on labelled "
                    f"cases: give it without {' or '.join(given)}")
  path = batching_path(args.out)
  outputs.writable_dir(path.parent, "--out",
                       fix="pass a directory you can write to")
  batching.read(path)  # One that cannot be read is said now, not after.
  return path


def cost_line(cost: dict, endpoint: EndpointConfig) -> str:
  """The calls and tokens a calibration took, as the terminal shows them."""
  estimated = endpoint.describe().get("tokens")
  return (f"cost: {cost.get('calls', 0)} calls (+"
          f"{cost.get('cached_calls', 0)} cached, "
          f"{cost.get('failed_calls', 0)} failed), "
          f"{cost.get('prompt_tokens', 0)} prompt + "
          f"{cost.get('completion_tokens', 0)} completion tokens"
          + (f" ({estimated})" if estimated else "")
          + f", {cost['seconds']:.0f} s")


def measure_batching(args: argparse.Namespace, make_model,
                     embedder_of: Callable[[], object]) -> int:
  """The comparison on the venues named (default every shipped venue with
  labelled cases) on the model `make_model` makes of the endpoint flags,
  printed and recorded."""
  path = checked(args)
  sizes = sorted(set(args.batch_sizes))
  venues = judgement_error.venues_named(args.scenario)
  endpoint = endpoint_from(args)
  identity = identity_of(endpoint)
  cases = asking.batched_case_count(venues, sizes)
  print(f"calibrate: {identity}, batched against one at a time in batches "
        f"of {', '.join(map(str, sizes))}: {cases} questions from "
        f"{len(venues)} venue{'' if len(venues) == 1 else 's'}", flush=True)
  model = make_model(endpoint, seed=1, progress=progress_printer(args))
  embedder = embedder_of()
  floors = embedding.thresholds_of(embedder)
  bar = tqdm(total=cases, unit="case", file=sys.stderr, dynamic_ncols=True,
             disable=args.no_progress)
  done: dict[str, int] = {}

  def progress(what: str, count: int, of: int) -> None:
    del of
    bar.set_description(what)
    bar.update(count - done.get(what, 0))
    done[what] = count
  before, start = judgement_error.usage_of(model), time.monotonic()
  try:
    found = asking.measure_batched(
        model, embedder, venues, sizes,
        lambda scenario: run_policy.for_venue(scenario, identity, floors),
        bar.write, args.jobs, progress)
  finally:
    bar.close()
  for op, results in found.items():
    for line in asking.pooled_lines(op, results):
      print(line)
  asking.record_verdicts(path, identity, found, sizes, print)
  after = judgement_error.usage_of(model)
  cost = {k: after.get(k, 0) - before.get(k, 0) for k in after}
  cost["seconds"] = time.monotonic() - start
  print(cost_line(cost, endpoint))
  return 0

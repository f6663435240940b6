"""How well the model judges: the referee, an occasion's check and DetectConflict.

Labelled cases of a venue (scenarios/<name>.probes.yaml for the shipped
venues; bench/heldout/<name>.probes.yaml beside <name>.yaml for venues no
code or prompt was written for) go through the calls a run makes, every
structure's inputs recorded
(crsec_concordia/metrics/classifiers/probe_run.py), and
are scored under the referee's settings (which structures apply,
crsec_concordia/calibration/policy.py, with the embedder's thresholds and
near tie): by default exactly those a run of the venue by this model
applies (calibration/run_policy.py, `for_venue`), or `--policy all_on` or
`trusting` with the embedder's thresholds. Prints the referee's precision and recall
over behaviour tags (bench/probe_scores.py), the places right, each check's
misses and every right answer a structure refused, DetectConflict's hits
and false alarms (intentions apart), one summary line per venue, and the
policy `choose` would pick from these answers. Any endpoint: set
CRSEC_BASE_URL and CRSEC_MODEL (or OPENAI_*); by default the embedded
model. Cases are asked four at a time (--jobs), as a run's slot asks them;
the embedded server then batches them, and a borderline answer can differ
from one repeat to the next. --cache FILE keeps the model's answers in a
response cache, so a replay asks only the prompts a change made new.
--record [DIR] writes the answers into the model's calibration
(crsec_concordia/calibration/store.py), as `crsec calibrate --out DIR`
does; by default into the package's, where the embedded model's ships.

--oracle answers every judgement as the labels say, with no language model
(tests/judgement_oracle.py; --noise R flips labels at rate R): the whole
pipeline's ceiling, per venue and judgement, under trusting() (what an
uncalibrated model gets) and all_on() (the structures' cost to a perfect
model), with the matcher's LLM judge on the labelled norms, every case a
structure refused, and a last line `oracle ceiling: worst P X.XX R X.XX`
(trusting). `--oracle --all` takes the held-out venues too.

--batch-sizes N ... asks each venue's referee cases per action and in
batches of N cases at one place (a place's slot judged together,
game_masters/referee/batch.py; N: a run's place-slot sizes,
bench/place_slot_sizes.py) and compares them case by case
(bench/batch_probe.py): P and R per mode with intervals, the paired
difference, and every case whose tags differ. It asks each venue's
DetectConflict cases one at a time and in batches of N cases seen at one
place too (a slot's questions of a place asked together, the agents'
`conflicts_batched` param; bench/conflict_batch_probe.py): hits and false
alarms per mode with intervals, the paired difference and the rule's
verdict, every case whose verdict differs, and the venues pooled
(`--only conflicts` asks those alone).
Usage: .venv/bin/python bench/judgement_probe.py [--scenario NAME_OR_PATH]
       [--probes FILE] | [--all] [--heldout]
       [--only referee|occasion|conflicts ...] [--policy run|all_on|trusting]
       [--jobs N] [--record [DIR]] [--cache FILE]
       [--oracle [--noise R] [--noise-seed N]] [--batch-sizes N ...]
"""

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from crsec_concordia import embedding, models  # noqa: E402
from crsec_concordia.calibration import batching  # noqa: E402
from crsec_concordia.calibration import policy as policy_lib  # noqa: E402
from crsec_concordia.calibration import probes, store  # noqa: E402
from crsec_concordia.calibration import run_policy  # noqa: E402
from crsec_concordia.calibration.policy import RefereePolicy  # noqa: E402
from crsec_concordia.calibration.probes import (Probes,  # noqa: E402
                                                load_probes, probes_path)
from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.errors import UserError  # noqa: E402
from crsec_concordia.calibration import (  # noqa: E402
    conflict_batch_compare as conflict_rules)
from crsec_concordia.judgement_prompts import identity_of  # noqa: E402
from crsec_concordia.metrics.classifiers import (  # noqa: E402
    judgement_error as calibrate_lib)
from crsec_concordia.metrics.classifiers import batch_probe_run as asking  # noqa: E402
from crsec_concordia.metrics.classifiers import probe_run  # noqa: E402
from crsec_concordia.scenarios import Scenario, load_scenario  # noqa: E402
import batch_probe  # noqa: E402  (bench/, beside this file)
import conflict_batch_probe  # noqa: E402  (bench/, beside this file)
import oracle_ceiling  # noqa: E402  (bench/, beside this file)
import probe_scores  # noqa: E402

# Venues kept out of scenarios/ and of all tuning (<name>.yaml beside its
# <name>.probes.yaml).
HELDOUT = HERE / "heldout"
# Where --record writes the model's calibration by default: the package's
# (the embedded model's ships there; crsec_concordia/calibration/store.py).
RECORD = store.SHIPPED
DEFAULT_SCENARIO = "hobbs_cafe_mini"
SECTIONS = probes.SECTIONS
JOBS = probe_run.JOBS
# --policy: `run`, the settings a run of the venue applies, or one of these.
RUN = "run"
POLICIES = {"all_on": RefereePolicy.all_on, "trusting": RefereePolicy.trusting}


def heldout_venues() -> list[tuple[Path, Path]]:
  """The held-out venues: (scenario file, probe file), by name."""
  return probes.venues_in(HELDOUT)


def _said(case: dict) -> str:
  """What the model answered on a referee case, for its miss line."""
  if case.get("failed"):
    return f" failed: {case['error']}"
  answer = case["answer"]
  said = (f" (evidence {answer['evidence']!r})" if case["supported"] else
          f" (claimed {case['named']}, evidence {answer['evidence']!r})")
  if case["given"]:
    said += (f" (cosines {case['scores']}, without the place words "
             f"{case['deed_scores']}, who does it: {case['doers']})")
  look = case.get("look") or {}
  if look and not case["given"]:
    said += (f" (second look: {look.get('behaviour')} of "
             f"{look['candidates']}, reversed {look.get('reversed')}, "
             f"doer {look.get('doer')!r})")
  return said


def print_venue(scenario: Scenario, calibration: dict,
                policy: RefereePolicy) -> str:
  """One venue's figures and misses under `policy`; its summary line."""
  name = probe_scores.policy_name(policy)
  floors = calibration["floors"]
  tags = places = occasion = conflicts = None
  if calibration["referee"]:
    tags = probe_scores.referee_counts(calibration, policy)
    print(f"referee ({name}): {tags.line()}; {tags.detail()}")
    unsaid = scenario.default_place or "indoors"
    placed = []
    for case in calibration["referee"]:
      got, _ = policy_lib.referee_tags(case, policy, floors,
                                       calibration["sides"])
      if sorted(got) != case["truth"]:
        print(f"   miss: want {case['truth']} got {sorted(got)}"
              f"{_said(case)} | {case['actor']}: {case['action']}")
      if case["truth_place"] and not case.get("failed"):
        spared = policy.spare_far_actions and case["spared"]
        placed.append((unsaid if spared else case["place"])
                      == case["truth_place"])
    places = (sum(placed), len(placed)) if placed else None
  if calibration["occasion"]:
    right = 0
    for case in calibration["occasion"]:
      got = policy_lib.occasion_tags(case, policy, floors)
      right += got == case["truth"]
      if got != case["truth"]:
        check = case["check"]
        print(f"   occasion miss: want {case['truth']} got {got} "
              f"({check['behaviour']}, similarity {check['similarity']})"
              f" | {case['action']}")
    occasion = ("occasion", right, len(calibration["occasion"]))
  if calibration["conflicts"]:
    print(probe_scores.conflict_line(calibration["summary"]))
    for case in calibration["conflicts"]:
      if case["said"] is not case["breaks"]:
        said = ("failed" if case["failed"] else
                f"said {'breach' if case['said'] else 'none'}, quoted "
                f"{case['evidence']!r}")
        kind = " (intention)" if case["intention"] else ""
        print(f"   conflict miss{kind}: {case['norm']} | want "
              f"{'breach' if case['breaks'] else 'none'}, {said} | "
              f"{case['action']}")
    right = sum(c["said"] is c["breaks"] for c in calibration["conflicts"])
    conflicts = (right, len(calibration["conflicts"]))
  for line in probe_scores.refused_lines(calibration, policy):
    print(line)
  return probe_scores.summary_line(scenario.name, tags, places, conflicts,
                                   occasion)


def _venues(args: argparse.Namespace) -> list[tuple[Scenario, Probes]]:
  """The venues the arguments name, each with its cases (only the sections
  asked for); `--oracle --all` takes the held-out venues too."""
  if not (args.all or args.heldout):
    scenario = load_scenario(args.scenario or DEFAULT_SCENARIO)
    return [(scenario, load_probes(args.probes or probes_path(scenario),
                                   scenario).only(args.only))]
  # Every shipped venue with labelled cases, as `crsec calibrate` takes them.
  venues = [(scenario, cases.only(args.only)) for scenario, cases
            in (calibrate_lib.venues_named([]) if args.all else [])]
  if args.heldout or (args.all and args.oracle):
    for path, cases in heldout_venues():
      scenario = load_scenario(str(path))
      venues.append((scenario, load_probes(cases, scenario).only(args.only)))
  return venues


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--scenario", default=None,
                      help="a built-in scenario name or a .yaml path "
                           f"(default {DEFAULT_SCENARIO})")
  parser.add_argument("--probes", type=Path, default=None,
                      help="the labelled cases (default: <name>.probes.yaml "
                           "beside the scenario)")
  parser.add_argument("--all", action="store_true",
                      help="every shipped scenario that has a probe file "
                           "(with --oracle, the held-out venues too)")
  parser.add_argument("--heldout", action="store_true",
                      help="the held-out venues (bench/heldout/): venues no "
                           "code or prompt was written for")
  parser.add_argument(
      "--record", nargs="?", type=Path, const=RECORD, default=None,
      metavar="DIR",
      help="write the answers on the labelled cases into the model's "
           "calibration, for the corrected behaviour estimates (as `crsec "
           "calibrate --out DIR` does; default DIR: the package's, "
           "crsec_concordia/calibration/data)")
  parser.add_argument("--only", nargs="+", choices=SECTIONS, default=None,
                      help="probe only these judgements")
  parser.add_argument("--policy", choices=[RUN, *sorted(POLICIES)],
                      default=RUN,
                      help="the referee's structures the figures apply "
                           "(default run: exactly those a run of the venue "
                           "by this model applies, its near tie among them)")
  parser.add_argument("--jobs", type=int, default=JOBS, metavar="N",
                      help=f"cases asked at once (default {JOBS}, as in a "
                           "run; 1 asks one at a time)")
  parser.add_argument("--cache", type=Path, default=None, metavar="FILE",
                      help="answer from (and add to) this response cache: "
                           "a replay asks the model only new prompts")
  parser.add_argument("--oracle", action="store_true",
                      help="answer as the labels say, with no language "
                           "model: the pipeline's ceiling")
  parser.add_argument("--noise", type=float, default=0.0, metavar="RATE",
                      help="with --oracle: flip the labels at this rate")
  parser.add_argument("--noise-seed", type=int, default=0, metavar="N",
                      help="with --noise: the draw's seed (default 0)")
  parser.add_argument("--batch-sizes", type=int, nargs="+", default=None,
                      metavar="N",
                      help="compare the referee's and DetectConflict's "
                           "cases asked one at a time and in batches of N "
                           "at one place (e.g. a run's median and largest "
                           "place-slot sizes)")
  parser.add_argument("--record-batching", type=Path, nargs="?",
                      const=batching.RECORD, default=None, metavar="FILE",
                      help="with --batch-sizes: keep the referee's rule's "
                      "verdicts per venue and pooled where runs read them, "
                      "for --referee-batched's auto (default FILE: the "
                      "package's, crsec_concordia/calibration/data/"
                      f"{batching.RECORD.name}); give --all --heldout so "
                      "the pooled verdict covers every venue")
  return parser


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
  """Flags that do not go together, each told on its own (exit 2)."""
  if args.record and args.only and "referee" not in args.only:
    parser.error("--record records the referee's answers: --only must "
                 "include referee")
  if args.jobs < 1:
    parser.error("--jobs must be 1 or more")
  if (args.all or args.heldout) and (args.scenario or args.probes):
    parser.error("--all and --heldout run their venues' own probe files: "
                 "give them without --scenario or --probes")
  if args.heldout and args.record:
    parser.error("--record writes the shipped venues' decisions for the "
                 "corrected estimates: not with --heldout")
  if args.oracle and (args.record or args.cache):
    parser.error("--oracle asks no model: nothing to --record or --cache")
  if not 0.0 <= args.noise <= 1.0:
    parser.error("--noise must be a rate between 0 and 1")
  if args.noise and not args.oracle:
    parser.error("--noise flips the oracle's labels: give --oracle")
  if args.batch_sizes is not None and (args.oracle or args.record):
    parser.error("--batch-sizes compares the model's answers: not with "
                 "--oracle or --record")
  if args.record_batching is not None and args.batch_sizes is None:
    parser.error("--record-batching keeps the batched comparison: give "
                 "--batch-sizes")
  if args.batch_sizes is not None and min(args.batch_sizes) < 1:
    parser.error("--batch-sizes must each be 1 or more")


def _batch_verdicts(args: argparse.Namespace, compared: list,
                    conflicts: list) -> int:
  """The rules' verdicts (docs/calibration.md), printed, and with
  --record-batching kept where runs read them (calibration/batching.py):
  `compared`, the referee's (venue, VenueResult); `conflicts`,
  DetectConflict's."""
  asking.record_verdicts(
      args.record_batching, identity_of(models.EndpointConfig.resolve()),
      {batching.REFEREE: compared, batching.CONFLICTS: conflicts},
      args.batch_sizes, print)
  return 0


def main(argv: list[str] | None = None) -> int:
  parser = _parser()
  args = parser.parse_args(argv)
  _check(parser, args)
  try:
    venues = _venues(args)
  except UserError as e:
    print(f"judgement_probe: {e}", file=sys.stderr)
    return 2
  if args.oracle:
    return oracle_ceiling.run(venues, noise=args.noise, seed=args.noise_seed,
                              jobs=args.jobs, norms_too=not args.only)
  endpoint = models.EndpointConfig.resolve()
  model = models.make_model(endpoint, seed=1, cache_path=args.cache)
  identity = identity_of(endpoint)
  embedder = shared_embedder()
  floors = embedding.thresholds_of(embedder)
  lines, measured, compared, conflicts = [], [], [], []
  pooled: dict[str, list] = {}  # DetectConflict's outcome rows, by mode.
  for scenario, cases in venues:
    settings = (run_policy.for_venue(scenario, identity, floors)
                if args.policy == RUN else
                run_policy.settings(POLICIES[args.policy](), floors))
    policy = settings.policy
    print(f"scenario {scenario.name}: {probe_scores.policy_name(policy)}, "
          f"near tie {settings.tie}", flush=True)
    if args.batch_sizes is not None:
      if cases.referee:
        compared.append((scenario.name, batch_probe.run_venue(
            model, embedder, scenario, cases, settings, args.batch_sizes)))
        lines += compared[-1][1].lines
      if cases.conflicts:
        found, rows = conflict_batch_probe.run_venue(
            model, embedder, scenario, cases, settings, args.batch_sizes)
        lines += found
        conflicts.append((scenario.name, asking.VenueResult(found, rows)))
        for mode, mode_rows in rows.items():
          pooled.setdefault(mode, []).append(mode_rows)
      continue
    calibration = probe_run.measure_venue(model, embedder, scenario, cases,
                                          jobs=args.jobs, settings=settings)
    measured.append(calibration)
    line = print_venue(scenario, calibration, policy)
    if args.record is not None and calibration["referee"]:
      path = store.write(
          store.target_path(identity, args.record), identity,
          {scenario.name: store.probe_entry(calibration, identity.prompts)})
      print(f"recorded: {path}")
    tags = probe_scores.referee_counts(calibration, policy)
    below = calibration["referee"] and not tags.meets_target()
    lines.append(line + ("  [below target]" if below else ""))
    print(line, end="\n\n", flush=True)
  if args.batch_sizes is not None:
    if len(venues) > 1 and pooled:
      lines += conflict_rules.verdict_lines(
          "all venues", {m: np.concatenate(r) for m, r in pooled.items()})
    print("summary, per action against batched, policy " + args.policy)
    print("\n".join(lines))
    return _batch_verdicts(args, compared, conflicts)
  print(f"summary, policy {args.policy} (target: referee P >= "
        f"{probe_scores.TARGET_PRECISION} and R >= "
        f"{probe_scores.TARGET_RECALL})")
  print("\n".join(lines))
  chosen = policy_lib.choose(measured)
  print(f"chosen from these answers: {probe_scores.policy_name(chosen)}")
  for calibration in measured:
    figures = policy_lib.evaluate(calibration, chosen)
    print(f"  {calibration['venue']}: " + "; ".join(
        f"{k} P {p:.2f} R {r:.2f} (n={n})" for k, (p, r, n)
        in figures.items() if n))
  return 0


if __name__ == "__main__":
  sys.exit(main())

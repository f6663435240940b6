"""The referee's default policy for a venue nobody labelled, by leave-one-venue-out.

Each shipped venue with labelled cases (scenarios/*.probes.yaml) is held
out in turn; the policy is chosen on the others' recorded answers of the
embedded model among the policies with a structure and among those
without it, and both are scored on the venue held out
(crsec_concordia/calibration/held_out.py). A structure is on by default
only if the F1 summed over the held-out folds is higher with it; versions
of one venue (the same setting: the café and the mini café) are one fold;
the held-out venues of bench/heldout/ take no part in the choice. Prints
the table (markdown, as docs/calibration.md shows it), the default, and
each venue's figures under every structure and under the default.

The answers: by default the embedded model's shipped calibrations
(crsec_concordia/calibration/data/), each venue's newest; those recorded
before the second look's inputs were kept hold only its accepted tag, so
the look's own checks cannot be varied on them (their rows say "not told
apart"), and the spared actions are found again from the embedder. With
--probe, the model is asked every labelled case anew (the embedded model,
or CRSEC_BASE_URL and CRSEC_MODEL; --cache FILE keeps its answers, --save
DIR writes them whole) and the table is made from those full answers;
--answers DIR reads answers saved so. --write puts the default where runs
read it (crsec_concordia/calibration/data/default_policy.json).
Usage: .venv/bin/python bench/referee_heldout.py [--probe [--cache FILE]
       [--save DIR] | --answers DIR] [--write]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from crsec_concordia import embedding, models  # noqa: E402
from crsec_concordia.calibration import held_out, probes  # noqa: E402
from crsec_concordia.calibration import policy as policy_lib  # noqa: E402
from crsec_concordia.calibration import run_policy, store  # noqa: E402
from crsec_concordia.calibration.identity import EMBEDDED  # noqa: E402
from crsec_concordia.calibration.policy import RefereePolicy  # noqa: E402
from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.game_masters.action_text import (  # noqa: E402
    tells_of_actor)
from crsec_concordia.game_masters.referee import (  # noqa: E402
    second_look, similarity_of, tag_gate)
from crsec_concordia.judgement_prompts import identity_of  # noqa: E402
from crsec_concordia.metrics.classifiers import probe_run  # noqa: E402
from crsec_concordia.scenarios import Scenario, load_scenario  # noqa: E402
import judgement_probe  # noqa: E402  (bench/, beside this file)
import probe_scores  # noqa: E402


def _shipped_venues() -> list[tuple[Scenario, probes.Probes]]:
  return [(scenario, probes.load_probes(probes.probes_path(scenario),
                                         scenario))
          for scenario in map(load_scenario, probes.probed_venues())]


def _recorded_entries() -> dict[str, dict[str, Any]]:
  """The embedded model's newest recorded answers per venue: a file with
  the current judgement prompts before one without."""
  found: dict[str, dict[str, Any]] = {}
  for entry in store.entries([store.SHIPPED]):
    if entry["model"].get("endpoint") != EMBEDDED:
      continue
    old = found.get(entry["scenario"])
    if old is None or (entry.get("prompts") and not old.get("prompts")):
      found[entry["scenario"]] = entry
  return found


def _look_of(case: dict[str, Any]) -> dict[str, Any] | None:
  """A recorded case's second look: its record, or for one recorded
  before those were kept, its accepted tag as a proposal every check
  passed (a refused proposal was not kept: nothing to vary)."""
  if "look" in case:
    return case["look"]
  if not case.get("looked"):
    return None
  tag = case["looked"][0]
  return {"candidates": {tag: 1.0}, "nearest": tag, "behaviour": tag,
          "quoted": True, "reversed": tag, "by_actor": True}


def from_record(scenario: Scenario, cases: probes.Probes,
                entry: dict[str, Any], embedder,
                settings: run_policy.RefereeSettings) -> dict[str, Any]:
  """A recorded calibration entry as a probe run's calibration, the
  spared actions found again from the embedder where not recorded."""
  similarity = similarity_of(embedder)
  described = {b.id: b.description for b in scenario.behaviours}
  words = tag_gate.place_words(scenario.setting)
  referee = []
  for case, recorded in zip(cases.referee, entry["cases"], strict=True):
    near = tag_gate.near_scores(case.action, described, similarity, words)
    spared = tells_of_actor(case.actor, case.action) and (
        not near or max(near.values()) < settings.floors.spare_far)
    referee.append({**recorded, "actor": case.actor, "near": near,
                    "spared": recorded.get("spared", spared),
                    "failed": recorded.get("failed", False),
                    "look": _look_of(recorded)})
  sides = second_look.other_sides(scenario.target_norms)
  return {"venue": scenario.name, "floors": settings.recorded(),
          "sides": {i: sorted(o) for i, o in sides.items()},
          "referee": referee, "occasion": [], "conflicts": []}


def _answers(args: argparse.Namespace, venues, embedder, floors
             ) -> dict[str, dict[str, Any]]:
  """Each venue's answers, by name, from where the arguments say."""
  if args.answers:
    return {s.name: json.loads((args.answers / f"{s.name}.json").read_text(
        encoding="utf-8")) for s, _ in venues
        if (args.answers / f"{s.name}.json").is_file()}
  if args.probe:
    endpoint = models.EndpointConfig.resolve()
    model = models.make_model(endpoint, seed=1, cache_path=args.cache)
    identity = identity_of(endpoint)
    out = {}
    for scenario, cases in venues:
      print(f"probing {scenario.name}", file=sys.stderr, flush=True)
      out[scenario.name] = probe_run.measure_venue(
          model, embedder, scenario, cases,
          settings=run_policy.for_venue(scenario, identity, floors))
      if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
        (args.save / f"{scenario.name}.json").write_text(
            json.dumps(out[scenario.name], indent=1), encoding="utf-8")
    return out
  recorded = _recorded_entries()
  settings = run_policy.settings(RefereePolicy.all_on(), floors)
  return {s.name: from_record(s, c, recorded[s.name], embedder, settings)
          for s, c in venues if s.name in recorded}


def _markdown(rows: list[held_out.Row], folds: list[str]) -> list[str]:
  head = ("| structure | " + " | ".join(
      f"{f} with / without" for f in folds) + " | sum with / without | "
          "default |")
  lines = [head, "|" + "---|" * (len(folds) + 3)]
  for row in rows:
    cells = [f"{row.with_it[f]:.3f} / {row.without[f]:.3f}" for f in folds]
    lines.append(f"| {row.structure} | " + " | ".join(cells) + (
        f" | {sum(row.with_it.values()):.3f} / "
        f"{sum(row.without.values()):.3f} | {row.verdict} |"))
  return lines


def _figures(calibration: dict[str, Any], policy: RefereePolicy) -> str:
  p, r, n = policy_lib.evaluate(calibration, policy)["referee"]
  return f"P {p:.2f} R {r:.2f} (n={n})"


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  source = parser.add_mutually_exclusive_group()
  source.add_argument("--probe", action="store_true",
                      help="ask the model every labelled case anew")
  source.add_argument("--answers", type=Path, metavar="DIR",
                      help="answers saved by --probe --save DIR")
  parser.add_argument("--cache", type=Path, metavar="FILE",
                      help="with --probe: the model's response cache")
  parser.add_argument("--save", type=Path, metavar="DIR",
                      help="with --probe: write each venue's answers there")
  parser.add_argument("--write", action="store_true",
                      help="write the default where runs read it "
                           f"({run_policy.DEFAULT_POLICY})")
  args = parser.parse_args(argv)
  if (args.cache or args.save) and not args.probe:
    parser.error("--cache and --save go with --probe")
  embedder = shared_embedder()
  floors = embedding.thresholds_of(embedder)
  venues = _shipped_venues()
  answers = _answers(args, venues, embedder, floors)
  missing = [s.name for s, _ in venues if s.name not in answers]
  folds = held_out.folds_of([(s.setting, answers[s.name])
                             for s, _ in venues if s.name in answers])
  if len(folds) < 2:
    print("referee_heldout: fewer than two venues have answers; run with "
          "--probe", file=sys.stderr)
    return 2
  rows = held_out.held_out_table(folds)
  print(f"folds: " + "; ".join(
      f"{name} ({', '.join(c['venue'] for c in cals)})"
      for name, cals in folds.items())
        + (f"; no answers for {', '.join(missing)}" if missing else ""))
  print("\n".join(_markdown(rows, list(folds))))
  chosen = held_out.default_policy(rows)
  print(f"default: {probe_scores.policy_name(chosen)}")
  for name in answers:
    print(f"  {name}: all_on {_figures(answers[name], RefereePolicy.all_on())}"
          f"; default {_figures(answers[name], chosen)}")
  for path, _ in judgement_probe.heldout_venues():
    if path.stem in answers:
      continue
    held = args.answers / f"{path.stem}.json" if args.answers else None
    if held is not None and held.is_file():
      data = json.loads(held.read_text(encoding="utf-8"))
      print(f"  held out {path.stem} (no part in the choice): all_on "
            f"{_figures(data, RefereePolicy.all_on())}; default "
            f"{_figures(data, chosen)}")
  if args.write:
    run_policy.DEFAULT_POLICY.write_text(json.dumps({
        "policy": chosen.to_dict(),
        "rule": "leave-one-venue-out (calibration/held_out.py)",
        "answers": "--probe" if args.probe else (
            str(args.answers) if args.answers else "shipped calibrations"),
        "folds": {name: [c["venue"] for c in cals]
                  for name, cals in folds.items()},
        "table": {row.structure: {"with": row.with_it,
                                  "without": row.without,
                                  "verdict": row.verdict} for row in rows},
    }, indent=1) + "\n", encoding="utf-8")
    print(f"written: {run_policy.DEFAULT_POLICY}")
  return 0


if __name__ == "__main__":
  sys.exit(main())

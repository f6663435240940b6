"""A model's calibration: its judgements measured on every labelled case.

`crsec calibrate` and bench/judgement_probe.py share this: the venues
named (a shipped scenario by name, or a scenario file with its
`<name>.probes.yaml` beside it; by default every shipped venue that has
one) each go through the probe runner (metrics/classifiers/probe_run.py) on the
model, and the matcher's LLM judge is put to the test half of the labelled
norms (metrics/data/norm_labels.jsonl) as `crsec report --llm-judge` asks
it: every (norm, target) pair at or above the judge floor. What the model
answered is written per venue into its identity's calibration
(calibration/store.py), with the figures under the settings a run of that
venue by the model applies (its policy, the embedder's thresholds and near
tie: calibration/run_policy.py) and what it cost. Measuring runs the matcher and its judge, so it sits here,
above the calibration package it writes to.
"""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from crsec_concordia import embedding
from crsec_concordia.calibration import policy as policy_lib
from crsec_concordia.calibration import probes, run_policy, store
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.calibration.probes import Probes
from crsec_concordia.errors import UserError
from crsec_concordia.metrics.classifiers import labels as labels_lib
from crsec_concordia.metrics.classifiers import probe_run
# The labelled norms' half the matcher's figures are on.
from crsec_concordia.metrics.classifiers.corrected import SPLIT
from crsec_concordia.metrics.classifiers.judge import LLMJudge
from crsec_concordia.metrics.classifiers.matching import (CHOSEN_RULE,
                                                          JUDGE_FLOOR,
                                                          NormMatcher)
from crsec_concordia.scenarios import Scenario, ScenarioError, load_scenario

# (what, done, of) as each case or norm is answered.
Progress = Callable[[str, int, int], None]


@dataclasses.dataclass
class Result:
  """What one `crsec calibrate` measured, before it is written."""
  identity: ModelIdentity
  venues: dict[str, dict[str, Any]]
  matcher: dict[str, Any] | None
  cost: dict[str, Any]


def venues_named(names: Sequence[str]) -> list[tuple[Scenario, Probes]]:
  """The venues and their labelled cases (every problem a UserError)."""
  found = []
  for name in names or probes.probed_venues():
    try:
      scenario = load_scenario(name)
    except ScenarioError as e:
      raise UserError(str(e).splitlines()[0]) from None
    path = probes.probes_path(scenario)
    if not path.is_file():
      raise UserError(
          f"{name}: no labelled cases ({path} is missing); write them there "
          "(see scenarios/hobbs_cafe_mini.probes.yaml), or label a run of "
          "it: crsec calibrate --sheet RUN_DIR --out SHEET.csv")
    found.append((scenario, probes.load_probes(path, scenario)))
  return found


def case_count(venues: Sequence[tuple[Scenario, Probes]]) -> int:
  """The labelled cases the venues hold (referee, occasion, conflicts)."""
  return sum(len(p.referee) + len(p.occasion.answers if p.occasion else [])
             + len(p.conflicts) for _, p in venues)


def usage_of(model) -> dict[str, int]:
  """The model's calls and tokens so far (its usage meter's totals)."""
  meter = getattr(model, "usage", None)
  return dict(meter.totals()) if meter is not None else {}


def _ask_ahead(matcher: NormMatcher, judge: LLMJudge, texts: list[str],
               jobs: int, progress: Progress | None, section: str) -> None:
  """Every pair the matcher will put to the judge, asked `jobs` at a time
  (the judge keeps its answers, so the matcher's own pass asks none)."""
  pairs = [(text, target.text)
           for text, row in zip(texts, matcher.scores(texts))
           for target, score in zip(matcher.targets, row)
           if score >= matcher.judge_floor]
  with ThreadPoolExecutor(max(1, jobs)) as pool:
    for done, _ in enumerate(pool.map(lambda pair: judge(*pair), pairs),
                             start=1):
      if progress is not None:
        progress(section, done, len(pairs))


def measure_norms(model, embedder, progress: Progress | None = None,
                  jobs: int = probe_run.JOBS) -> dict[str, Any]:
  """The matcher with the model as its LLM judge on the test half of the
  labelled norms, per target: the counts and the wording they hold for."""
  items = [i for i in labels_lib.load_items() if i.split == SPLIT]
  judge = LLMJudge(model)
  targets: dict[str, Any] = {}
  for done, venue in enumerate(labels_lib.VENUES, start=1):
    mine = [i for i in items if i.venue == venue]
    wanted = labels_lib.venue_targets(venue)
    matcher = NormMatcher(wanted, embedder=embedder,
                          behaviours=labels_lib.venue_behaviours(venue),
                          judge=judge, judge_floor=JUDGE_FLOOR)
    texts = [i.text for i in mine]
    _ask_ahead(matcher, judge, texts, jobs, progress, f"norms of {venue}")
    means = matcher.means_many(texts)
    for t in wanted:
      truth = [t.id in i.targets for i in mine]
      said = [t.id in m for m in means]
      tp = sum(a and b for a, b in zip(truth, said))
      fp = sum(b and not a for a, b in zip(truth, said))
      fn = sum(a and not b for a, b in zip(truth, said))
      targets[t.id] = {"venue": venue, "text": t.text,
                       "aliases": list(t.aliases), "tp": tp, "fp": fp,
                       "fn": fn, "tn": len(mine) - tp - fp - fn}
    if progress is not None:
      progress("norms", done, len(labels_lib.VENUES))
  return {"rule": CHOSEN_RULE.name, "judge_floor": JUDGE_FLOOR,
          "split": SPLIT, "failed_answers": judge.failures,
          "targets": targets}


def measure(model, identity: ModelIdentity,
            venues: Sequence[tuple[Scenario, Probes]], *, embedder,
            jobs: int = probe_run.JOBS, norms: bool = True,
            progress: Progress | None = None,
            choice: str | run_policy.Chosen | None = run_policy.AUTO
            ) -> Result:
  """Every venue's cases (and, with `norms`, the labelled norms) on the
  model; each venue's figures under the settings a run of it by this
  model applies with this embedder (`choice`: its --referee-policy;
  run_policy.for_venue)."""
  floors = embedding.thresholds_of(embedder)
  start, before = time.monotonic(), usage_of(model)
  entries, measured = {}, []
  for scenario, cases in venues:
    settings = run_policy.for_venue(scenario, identity, floors, choice)
    calibration = probe_run.measure_venue(
        model, embedder, scenario, cases, jobs=jobs, settings=settings,
        progress=(lambda s, d, n, v=scenario.name: progress(f"{v} {s}", d, n))
        if progress else None)
    measured.append(calibration)
    entries[scenario.name] = store.probe_entry(calibration, identity.prompts)
  chosen = policy_lib.choose(measured) if measured else None
  for entry in entries.values():
    entry["chosen_policy"] = chosen.to_dict() if chosen else None
  matcher = measure_norms(model, embedder, progress, jobs) if norms else None
  after = usage_of(model)
  cost = {k: after.get(k, 0) - before.get(k, 0) for k in after}
  cost["seconds"] = round(time.monotonic() - start, 1)
  cost["cases"] = case_count(venues)
  return Result(identity, entries, matcher, cost)


def write(result: Result, out: Path | None = None) -> Path:
  """The result into its identity's calibration file (store.target_path)."""
  return store.write(store.target_path(result.identity, out),
                     result.identity, result.venues, matcher=result.matcher,
                     cost=result.cost)


def summary_lines(result: Result) -> list[str]:
  """One line per venue and one for the matcher, for the terminal."""
  lines = []
  for name, entry in result.venues.items():
    s = entry["summary"]
    ref, occ, con = s["referee"], s["occasion"], s["conflicts"]
    line = f"  {name}: referee P {ref['p']:.2f} R {ref['r']:.2f} (n={ref['n']})"
    if occ["n"]:
      line += f"; occasion P {occ['p']:.2f} R {occ['r']:.2f} (n={occ['n']})"
    if con["breaches"] or con["non_breaches"]:
      line += (f"; DetectConflict hits {con['hits']}/{con['breaches']}, "
               f"false alarms {con['false_alarms']}/{con['non_breaches']}")
    lines.append(line)
  if result.matcher:
    t = result.matcher["targets"].values()
    tp, fp, fn = (sum(x[k] for x in t) for k in ("tp", "fp", "fn"))
    lines.append(f"  matcher with this model as judge: P "
                 f"{tp / max(1, tp + fp):.2f} R {tp / max(1, tp + fn):.2f} "
                 f"({len(result.matcher['targets'])} targets)")
  return lines

"""The pipeline's ceiling: every judgement answered right, and what is lost.

`bench/judgement_probe.py --oracle` runs this: the scripted oracle
(tests/judgement_oracle.py) answers every judgement prompt as the labels
say, each venue's cases go through the probe runner
(crsec_concordia/metrics/classifiers/probe_run.py), and the recorded answers are
scored under RefereePolicy.trusting() (what an uncalibrated model gets)
and all_on() (every structure: their cost to a perfect model). The
matcher's LLM judge is put to the labelled norms
(crsec_concordia/metrics/data/norm_labels.jsonl) with every pair judged
and with the judge floor a report applies. Every case a structure refused
is printed; the last line is `oracle ceiling: worst P X.XX R X.XX`, the
worst precision and recall over venues and judgements with no structure
that can refuse an answer. With noise (labels flipped at a known rate),
the miss and false-alarm rates measured are printed beside the rate.
No language model is asked.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Sequence

from crsec_concordia.calibration import policy as policy_lib
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.calibration.probes import Probes
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.metrics.classifiers import labels as labels_lib
from crsec_concordia.metrics.classifiers import probe_run
from crsec_concordia.metrics.classifiers.judge import LLMJudge
from crsec_concordia.metrics.classifiers.matching import (JUDGE_FLOOR,
                                                          NormMatcher)
from crsec_concordia.scenarios import Scenario
import probe_scores  # bench/, beside this file
from tests.judgement_oracle import JudgementOracle, NormJudgeOracle

POLICIES = (("trusting", RefereePolicy.trusting()),
            ("all_on", RefereePolicy.all_on()))
# The second look with none of its checks: what it proposes, taken.
LOOK_UNCHECKED = dataclasses.replace(RefereePolicy.trusting(),
                                     second_look=True)
LOOK = "second look alone"
LOOK_SIDES = "second look alone, other side through"
# (venue, judgement) -> {policy name: (P, R, n)}
Rows = dict[tuple[str, str], dict[str, tuple[float, float, int]]]


def _figures(p: float, r: float, n: int) -> str:
  return f"P {p:.2f} R {r:.2f} (n={n})"


def venue(scenario: Scenario, cases: Probes, rows: Rows, *, noise: float,
          seed: int, jobs: int, embedder) -> dict:
  """One venue on the oracle: its figures under each policy into `rows`,
  every refused case printed; its calibration."""
  oracle = JudgementOracle(scenario, cases, noise=noise, seed=seed)
  calibration = probe_run.measure_venue(
      oracle.model, embedder, scenario, cases, jobs=jobs)
  print(f"scenario {scenario.name} (oracle"
        + (f", labels flipped at {noise}" if noise else "") + ")")
  for name, policy in POLICIES:
    figures = policy_lib.evaluate(calibration, policy)
    print(f"  {name}: " + "; ".join(
        f"{k} {_figures(*v)}" for k, v in figures.items() if v[2]))
    for judgement, value in figures.items():
      if value[2]:
        rows.setdefault((scenario.name, judgement), {})[name] = value
    for line in probe_scores.refused_lines(calibration, policy):
      print(f"  {name}{line}")
  _look_alone(calibration, rows)
  print("  " + probe_scores.conflict_line(calibration["summary"]))
  return calibration


def _look_alone(calibration: dict, rows: Rows) -> None:
  """The second look as if the general call had tagged nothing (it is
  asked on every case): what its checks refuse of right proposals. Not a
  policy a run has, so not in the ceiling; its candidates (the three
  behaviours nearest the action) bound it in any case."""
  alone = copy.deepcopy(calibration)
  for case in alone["referee"]:
    case["given"] = []
  sides_through = dataclasses.replace(RefereePolicy.all_on(),
                                      look_sides=False)
  for row, name, label, policy in (
      (LOOK, "trusting", "unchecked", LOOK_UNCHECKED),
      (LOOK, "all_on", "every check", RefereePolicy.all_on()),
      (LOOK_SIDES, "all_on", "every check, the other side let through",
       sides_through)):
    counts = probe_scores.referee_counts(alone, policy)
    value = (counts.precision, counts.recall, counts.cases)
    rows.setdefault((calibration["venue"], row), {})[name] = value
    print(f"  {LOOK}, {label}: {_figures(*value)}")
    if name == "all_on":
      for line in probe_scores.refused_lines(
          {**alone, "occasion": []}, policy):
        print(f"  {LOOK} ({label}){line}")


def norms(rows: Rows, *, noise: float, seed: int, embedder) -> list[str]:
  """The matcher's LLM judge on each venue's labelled norms, with every
  pair judged (trusting) and with the report's judge floor (all_on); the
  line of its measured error with every pair judged."""
  items = labels_lib.load_items()
  missed = positive = alarms = negative = 0
  for name in labels_lib.VENUES:
    mine = [i for i in items if i.venue == name]
    targets = labels_lib.venue_targets(name)
    oracle = NormJudgeOracle(mine, {t.text: t.id for t in targets},
                             noise=noise, seed=seed)
    print(f"norms {name} (the matcher's judge, {len(mine)} labelled norms)")
    for policy, floor in (("trusting", -math.inf), ("all_on", JUDGE_FLOOR)):
      matcher = NormMatcher(targets, embedder=embedder,
                            behaviours=labels_lib.venue_behaviours(name),
                            judge=LLMJudge(oracle.model), judge_floor=floor)
      means = matcher.means_many([i.text for i in mine])
      counts = policy_lib.tag_counts(
          (i.targets, sorted(m)) for i, m in zip(mine, means))
      value = (policy_lib.precision(counts), policy_lib.recall(counts),
               len(mine))
      rows.setdefault((f"norms {name}", "judge"), {})[policy] = value
      print(f"  {policy} (judge floor {floor}): {_figures(*value)}")
      if policy == "trusting":
        for item, got in zip(mine, means):
          for t in targets:
            truth = t.id in item.targets
            positive += truth
            negative += not truth
            missed += truth and t.id not in got
            alarms += not truth and t.id in got
      scores = matcher.scores([i.text for i in mine])
      for item, got, row in zip(mine, means, scores):
        for t, score in zip(targets, row):
          if (t.id in item.targets) != (t.id in got) and score < floor:
            print(f"  {policy}   refused (judge floor: {score:.3f} for "
                  f"{t.id}): want {sorted(item.targets)} | {item.text}")
  return [f"the matcher's judge, every pair judged: pairs missed "
          f"{missed}/{positive} ({missed / max(1, positive):.2f}), false "
          f"yes {alarms}/{negative} ({alarms / max(1, negative):.2f})"]


def noise_lines(calibrations: Sequence[dict], noise: float) -> list[str]:
  """The miss and false-alarm rates the noisy oracle's answers give under
  trusting(), beside the rate the labels were flipped at."""
  trusting = RefereePolicy.trusting()
  missed = labelled = alarms = nones = 0
  for calibration in calibrations:
    for case in calibration["referee"]:
      tags, _ = policy_lib.referee_tags(case, trusting, calibration["floors"],
                                        calibration["sides"])
      if case["truth"]:
        labelled += 1
        missed += not set(case["truth"]) & set(tags)
      else:
        nones += 1
        alarms += bool(tags)
  c = [x for cal in calibrations for x in cal["conflicts"]]
  breaches = [x for x in c if x["breaks"]]
  others = [x for x in c if not x["breaks"]]
  return [
      f"labels flipped at {noise}: referee cases missed "
      f"{missed}/{labelled} ({missed / max(1, labelled):.2f}), false tags "
      f"on none cases {alarms}/{nones} ({alarms / max(1, nones):.2f}); "
      f"DetectConflict breaches missed "
      f"{sum(x['said'] is not True for x in breaches)}/{len(breaches)}, "
      f"false alarms {sum(x['said'] is True for x in others)}/"
      f"{len(others)}"]


def table(rows: Rows) -> list[str]:
  """The markdown table of every venue and judgement under both."""
  out = ["| venue | judgement | trusting P / R | all_on P / R | n |",
         "|---|---|---|---|---|"]
  for (where, judgement), by in rows.items():
    cells = [f"{by[k][0]:.2f} / {by[k][1]:.2f}" if k in by else "-"
             for k, _ in POLICIES]
    n = next(iter(by.values()))[2]
    out.append(f"| {where} | {judgement} | {cells[0]} | {cells[1]} | {n} |")
  return out


def ceiling(rows: Rows) -> tuple[float, float]:
  """The worst precision and the worst recall under trusting()."""
  trusting = [by["trusting"] for (_, judgement), by in rows.items()
              if "trusting" in by and judgement not in (LOOK, LOOK_SIDES)]
  return (min((p for p, _, _ in trusting), default=1.0),
          min((r for _, r, _ in trusting), default=1.0))


def run(venues: Sequence[tuple[Scenario, Probes]], *, noise: float = 0.0,
        seed: int = 0, jobs: int = probe_run.JOBS, norms_too: bool = True
        ) -> int:
  """Prints every venue's ceiling, the table and the ceiling line."""
  embedder = shared_embedder()
  rows: Rows = {}
  calibrations = [venue(s, c, rows, noise=noise, seed=seed, jobs=jobs,
                        embedder=embedder) for s, c in venues]
  judged = (norms(rows, noise=noise, seed=seed, embedder=embedder)
            if norms_too else [])
  print()
  print("\n".join(table(rows)))
  if noise:
    print("\n".join(noise_lines(calibrations, noise) + judged))
  worst_p, worst_r = ceiling(rows)
  print(f"oracle ceiling: worst P {worst_p:.2f} R {worst_r:.2f}")
  return 0

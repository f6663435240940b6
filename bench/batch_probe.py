"""The referee's labelled cases asked per action and in batches, compared.

Whether a place's slot may be judged together (the referee's `batched`
setting, game_masters/referee/batch.py) is a question of the model's
accuracy: the same cases asked one at a time and in batches of given sizes
(the run's median and largest place-slot sizes, bench/place_slot_sizes.py)
under the same referee settings, scored against the labels. A batch is
made as a run makes it: cases whose actor is at the same place (`at`, by
default its home), in file order, cut into batches of the size given (a
run's budget may cut a large one further, and does so here too). Prints per
venue and mode the referee's precision and recall over behaviour tags
(bench/probe_scores.py's counting) with 95% intervals from a bootstrap
over cases, the paired difference batched minus per action with its
interval (the same resampled cases scored both ways), and every case whose
tags differ between the two. Called by bench/judgement_probe.py
`--batch-sizes N ...`, or alone:

  .venv/bin/python bench/batch_probe.py --all --batch-sizes 3 7
  .venv/bin/python bench/batch_probe.py --simulate   # the rule's error rates

Any endpoint, as judgement_probe.py (by default the embedded model).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import Any
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from crsec_concordia.calibration.probes import Case, Probes  # noqa: E402
from crsec_concordia.calibration.run_policy import RefereeSettings  # noqa: E402
from crsec_concordia.game_masters.referee.batch import PlaceAction  # noqa: E402
from crsec_concordia.metrics.classifiers import probe_run  # noqa: E402
from crsec_concordia.scenarios import Scenario  # noqa: E402

RESAMPLES = 2000
SEED = 0
# The rule's margin: the repeat-to-repeat recall difference of the same
# model on the same cases (docs/calibration.md, "Models compared").
MARGIN = 0.05
# The cases simulated: one venue's referee cases (the mini café's 66), and
# the shipped venues' pooled.
SIMULATED_CASES = (66, 200)
PER_ACTION = "per action"


@dataclasses.dataclass
class ModeTags:
  """One mode's tags of every case, in the cases' order."""
  name: str
  tags: list[list[str]]


def _place_of(venue: probe_run._Venue, case: Case) -> str:  # noqa: SLF001
  scenario = venue.scenario
  if not venue.places.declared:
    return ""
  return case.at or scenario.home_of(case.actor) or scenario.start_place


def per_action(venue, cases: Sequence[Case]) -> list[list[str]]:
  """Each case's tags, asked alone as a run asks it."""
  return [sorted(venue.referee_at(c).adjudicate(c.actor, c.action)[0][
      "behaviours"]) for c in cases]


def batched(venue, cases: Sequence[Case], size: int) -> list[list[str]]:
  """Each case's tags, asked in batches of `size` cases at one place."""
  by_place: dict[str, list[int]] = {}
  for n, case in enumerate(cases):
    by_place.setdefault(_place_of(venue, case), []).append(n)
  tags: list[list[str]] = [[] for _ in cases]
  for numbers in by_place.values():
    for start in range(0, len(numbers), size):
      chunk = numbers[start:start + size]
      referee = venue.referee_at(cases[chunk[0]])
      results = referee.adjudicate_place(
          [PlaceAction(cases[n].actor, cases[n].action) for n in chunk])
      for n, (fields, _) in zip(chunk, results):
        tags[n] = sorted(fields["behaviours"])
  return tags


def counts(truth: Sequence[Sequence[str]], got: Sequence[Sequence[str]]
           ) -> np.ndarray:
  """Per case: (TP, FP, FN), probe_scores.TagCounts' counting."""
  rows = []
  for want, have in zip(truth, got):
    want, have = set(want), set(have)
    rows.append((len(want & have), len(have - want), len(want - have)))
  return np.array(rows, dtype=float).reshape(-1, 3)


def _rates(sums: np.ndarray) -> np.ndarray:
  """(precision, recall) of each row of summed (TP, FP, FN) counts, as
  calibration/scores.py defines them (1.0 with nothing claimed, or nothing
  to find)."""
  tp, fp, fn = sums[..., 0], sums[..., 1], sums[..., 2]
  with np.errstate(invalid="ignore", divide="ignore"):
    p = np.where(tp + fp > 0, tp / (tp + fp), 1.0)
    r = np.where(tp + fn > 0, tp / (tp + fn), 1.0)
  return np.stack([p, r], axis=-1)


def compare(truth: Sequence[Sequence[str]], base: ModeTags,
            others: Sequence[ModeTags], resamples: int = RESAMPLES,
            seed: int = SEED) -> dict[str, dict[str, tuple[float, ...]]]:
  """{mode: {"P": (value, lo, hi), "R": ..., "dP": (diff, lo, hi), "dR":
  ...}}: each mode's precision and recall with 95% bootstrap intervals
  over cases, and its paired difference from `base` (none for base)."""
  return compare_counts(counts(truth, base.tags),
                        {m.name: counts(truth, m.tags) for m in others},
                        base.name, resamples, seed)


def compare_counts(base: np.ndarray, others: dict[str, np.ndarray],
                   name: str = PER_ACTION, resamples: int = RESAMPLES,
                   seed: int = SEED) -> dict[str, dict[str, tuple[float, ...]]]:
  """`compare` on per-case (TP, FP, FN) rows."""
  return paired_bootstrap(base, others, _rates, ("P", "R"), name, resamples,
                          seed)


def paired_bootstrap(base: np.ndarray, others: dict[str, np.ndarray],
                     rates: Callable[[np.ndarray], np.ndarray],
                     keys: tuple[str, str], name: str,
                     resamples: int = RESAMPLES, seed: int = SEED
                     ) -> dict[str, dict[str, tuple[float, ...]]]:
  """{mode: {key: (value, lo, hi), "d" + key: (diff, lo, hi)}}: the two
  `rates` of each mode's summed per-case rows with 95% intervals from
  resampling the cases, and the paired difference from `base` (the same
  resamples scored both ways; none for base itself)."""
  rng = np.random.default_rng(seed)
  n = len(base)
  draws = rng.integers(0, n, size=(resamples, n)) if n else np.zeros(
      (1, 0), dtype=int)
  base_value = rates(base.sum(axis=0))
  base_boot = rates(base[draws].sum(axis=1))
  out: dict[str, dict[str, tuple[float, ...]]] = {}
  for mode, rows in {name: base, **others}.items():
    value = rates(rows.sum(axis=0))
    boot = rates(rows[draws].sum(axis=1))
    figures: dict[str, tuple[float, ...]] = {}
    for k, key in enumerate(keys):
      figures[key] = (float(value[k]), *map(float, np.quantile(
          boot[:, k], [0.025, 0.975])))
      if mode != name:
        figures["d" + key] = (float(value[k] - base_value[k]), *map(
            float, np.quantile(boot[:, k] - base_boot[:, k],
                               [0.025, 0.975])))
    out[mode] = figures
  return out


def passes(figures: dict[str, tuple[float, ...]],
           margin: float = MARGIN) -> bool:
  """The rule (docs/calibration.md): the paired difference's interval for
  precision and for recall lies above -margin."""
  return figures["dP"][1] > -margin and figures["dR"][1] > -margin


def simulate(cases: int = 66, venues: int = 200, shown: float = 0.5,
             recall: float = 0.8, false_tags: float = 0.05,
             losses: Sequence[float] = (0.0, 0.05, 0.1, 0.15),
             churn: float = 0.1, resamples: int = 500, seed: int = SEED,
             rule: Callable[[dict[str, tuple[float, ...]]], bool] = passes
             ) -> dict[float, float]:
  """{recall lost batched: the share of simulated venues `rule` (the
  pooled one, `passes`, or the venue's, `holds_on_venue`) passes}. Each venue: `cases` cases, a share `shown` labelled with one
  behaviour; per action finds it at `recall` and adds a false tag at
  `false_tags`; batched answers each case as per action did (paired, as
  the same model asked both ways) except that a share `churn` of cases is
  answered afresh at the same rates (answers that differ with nothing
  lost on average) and a found tag is lost at the rate that takes `loss`
  off recall."""
  rng = np.random.default_rng(seed)
  out = {}
  for loss in losses:
    passed = 0
    for v in range(venues):
      want = rng.random(cases) < shown
      found = want & (rng.random(cases) < recall)
      false = rng.random(cases) < false_tags
      fresh = rng.random(cases) < churn
      again = np.where(fresh, want & (rng.random(cases) < recall), found)
      again_false = np.where(fresh, rng.random(cases) < false_tags, false)
      lost = again & (rng.random(cases) < loss / recall)

      def rows(hit, wrong):
        return np.stack([hit, wrong, want & ~hit], axis=1).astype(float)
      figures = compare_counts(rows(found, false),
                               {"b": rows(again & ~lost, again_false)},
                               resamples=resamples, seed=seed + v)
      passed += rule(figures["b"])
    out[loss] = passed / venues
  return out


def differing(cases: Sequence[Case], base: ModeTags, other: ModeTags
              ) -> list[str]:
  """A line per case whose tags differ between two modes."""
  return [f"   differs ({other.name}): want {sorted(c.behaviours)}, "
          f"{base.name} {b}, {other.name} {o} | {c.actor}: {c.action}"
          for c, b, o in zip(cases, base.tags, other.tags) if b != o]


def fmt(figure: tuple[float, ...]) -> str:
  return f"{figure[0]:.2f} [{figure[1]:.2f}, {figure[2]:.2f}]"


@dataclasses.dataclass
class VenueResult:
  """One venue's comparison: its summary lines, and each mode's per-case
  (TP, FP, FN) rows (`pooled` joins venues' rows to score them as one)."""
  lines: list[str]
  rows: dict[str, np.ndarray]


def largest(sizes: Sequence[int]) -> str:
  """The mode the rule reads: batches of the run's largest place-slot."""
  return f"batches of {max(sizes)}"


def holds_on_venue(figures: dict[str, tuple[float, ...]],
                   margin: float = MARGIN) -> bool:
  """The venue's rule (docs/calibration.md): batched is not shown worse on
  the venue's own cases, the paired difference's interval reaching 0 for
  precision and for recall, and neither point figure is below -margin."""
  return all(figures[k][0] >= -margin and figures[k][2] >= 0
             for k in ("dP", "dR"))


def venue_figures(result: VenueResult, sizes: Sequence[int]
                  ) -> dict[str, Any]:
  """What calibration/batching.py keeps of a venue: each mode's figures,
  and `keeps`: the venue's rule at the largest size."""
  rows = result.rows
  figures = compare_counts(rows[PER_ACTION], {
      m: r for m, r in rows.items() if m != PER_ACTION})
  at = figures[largest(sizes)]
  return {"n": int(len(rows[PER_ACTION])), "figures": figures,
          "keeps": holds_on_venue(at)}


def pooled(results: Sequence[VenueResult], sizes: Sequence[int]
           ) -> dict[str, Any]:
  """Every venue's cases scored as one, and `passes`: the rule's pooled
  half (the paired difference's interval above -margin at the largest
  size)."""
  rows = {m: np.concatenate([r.rows[m] for r in results])
          for m in results[0].rows}
  figures = compare_counts(rows[PER_ACTION], {
      m: r for m, r in rows.items() if m != PER_ACTION})
  return {"n": int(len(rows[PER_ACTION])), "figures": figures,
          "passes": passes(figures[largest(sizes)]), "margin": MARGIN,
          "sizes": sorted(sizes)}


def run_venue(model, embedder, scenario: Scenario, probes: Probes,
              settings: RefereeSettings, sizes: Sequence[int]
              ) -> VenueResult:
  """The venue's comparison, printed; its summary lines and rows."""
  venue = probe_run._Venue(model, embedder, scenario, settings)  # noqa: SLF001
  cases = list(probes.referee)
  truth = [sorted(c.behaviours) for c in cases]
  base = ModeTags(PER_ACTION, per_action(venue, cases))
  others = [ModeTags(f"batches of {k}", batched(venue, cases, k))
            for k in sizes]
  figures = compare(truth, base, others)
  lines = []
  for mode in (base, *others):
    f = figures[mode.name]
    line = (f"{scenario.name} {mode.name}: P {fmt(f['P'])} R {fmt(f['R'])}"
            + (f"; minus per action: P {fmt(f['dP'])} R {fmt(f['dR'])}"
               if "dP" in f else "") + f" (n={len(cases)})")
    print(line, flush=True)
    lines.append(line)
  for mode in others:
    for line in differing(cases, base, mode):
      print(line)
  return VenueResult(lines, {m.name: counts(truth, m.tags)
                             for m in (base, *others)})


def _main(argv: Sequence[str] | None = None) -> int:
  argv = list(argv if argv is not None else sys.argv[1:])
  if argv != ["--simulate"]:
    # The model's answers are asked by judgement_probe.py, which calls this
    # module (one direction only: no import circle).
    print("usage: batch_probe.py --simulate; to compare a model's answers "
          "batched and per action: bench/judgement_probe.py --batch-sizes N "
          "...", file=sys.stderr)
    return 2
  print_simulations(
      ((f"the pooled rule (the paired difference's 95% interval above "
        f"-{MARGIN})", passes, SIMULATED_CASES),
       ("the venue's rule (its interval reaching 0, its point above "
        f"-{MARGIN})", holds_on_venue, SIMULATED_CASES[:1])),
      simulate, "recall 0.8 per action", "recall")
  return 0


def print_simulations(rules, simulate_with: Callable[..., dict[float, float]],
                      setting: str, lost: str) -> None:
  """Each rule's simulated pass rate (`rules`: (name, rule, case counts)),
  by the loss batched (`lost`: what it takes off) on `setting`."""
  for name, rule, sizes in rules:
    print(f"{name}, {setting}, a tenth of the cases answered afresh "
          "batched:")
    for n in sizes:
      for loss, share in simulate_with(cases=n, rule=rule).items():
        print(f"  {n} cases, batched loses {loss:.2f} {lost}: passed on "
              f"{share:.0%} of simulated venues", flush=True)


if __name__ == "__main__":
  sys.exit(_main())

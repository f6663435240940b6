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

Any endpoint, as judgement_probe.py (by default the embedded model).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from crsec_concordia.calibration import scores  # noqa: E402
from crsec_concordia.calibration.probes import Case, Probes  # noqa: E402
from crsec_concordia.calibration.run_policy import RefereeSettings  # noqa: E402
from crsec_concordia.game_masters.referee.batch import PlaceAction  # noqa: E402
from crsec_concordia.metrics.classifiers import probe_run  # noqa: E402
from crsec_concordia.scenarios import Scenario  # noqa: E402

RESAMPLES = 2000
SEED = 0
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


def _pr(total: np.ndarray) -> tuple[float, float]:
  tp, fp, fn = (int(x) for x in total)
  return scores.precision((tp, fp, fn)), scores.recall((tp, fp, fn))


def compare(truth: Sequence[Sequence[str]], base: ModeTags,
            others: Sequence[ModeTags], resamples: int = RESAMPLES,
            seed: int = SEED) -> dict[str, dict[str, tuple[float, ...]]]:
  """{mode: {"P": (value, lo, hi), "R": ..., "dP": (diff, lo, hi), "dR":
  ...}}: each mode's precision and recall with 95% bootstrap intervals
  over cases, and its paired difference from `base` (none for base)."""
  rng = np.random.default_rng(seed)
  n = len(truth)
  draws = rng.integers(0, n, size=(resamples, n)) if n else None
  base_rows = counts(truth, base.tags)
  out: dict[str, dict[str, tuple[float, ...]]] = {}
  for mode in (base, *others):
    rows = counts(truth, mode.tags)
    value = _pr(rows.sum(axis=0))
    figures: dict[str, tuple[float, ...]] = {}
    boot = ([_pr(rows[d].sum(axis=0)) for d in draws]
            if draws is not None else [value])
    base_boot = ([_pr(base_rows[d].sum(axis=0)) for d in draws]
                 if draws is not None else [_pr(base_rows.sum(axis=0))])
    base_value = _pr(base_rows.sum(axis=0))
    for k, name in enumerate(("P", "R")):
      column = np.array([b[k] for b in boot])
      figures[name] = (value[k], *np.quantile(column, [0.025, 0.975]))
      if mode is not base:
        diff = column - np.array([b[k] for b in base_boot])
        figures["d" + name] = (value[k] - base_value[k],
                               *np.quantile(diff, [0.025, 0.975]))
    out[mode.name] = figures
  return out


def differing(cases: Sequence[Case], base: ModeTags, other: ModeTags
              ) -> list[str]:
  """A line per case whose tags differ between two modes."""
  return [f"   differs ({other.name}): want {sorted(c.behaviours)}, "
          f"{base.name} {b}, {other.name} {o} | {c.actor}: {c.action}"
          for c, b, o in zip(cases, base.tags, other.tags) if b != o]


def _fmt(figure: tuple[float, ...]) -> str:
  return f"{figure[0]:.2f} [{figure[1]:.2f}, {figure[2]:.2f}]"


def run_venue(model, embedder, scenario: Scenario, probes: Probes,
              settings: RefereeSettings, sizes: Sequence[int]) -> list[str]:
  """The venue's comparison, printed; its summary lines."""
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
    line = (f"{scenario.name} {mode.name}: P {_fmt(f['P'])} R {_fmt(f['R'])}"
            + (f"; minus per action: P {_fmt(f['dP'])} R {_fmt(f['dR'])}"
               if "dP" in f else "") + f" (n={len(cases)})")
    print(line, flush=True)
    lines.append(line)
  for mode in others:
    for line in differing(cases, base, mode):
      print(line)
  return lines


def _main(argv: Sequence[str] | None = None) -> int:
  import judgement_probe  # noqa: PLC0415 (its flags and venues)
  return judgement_probe.main(list(argv if argv is not None
                                   else sys.argv[1:]))


if __name__ == "__main__":
  sys.exit(_main())

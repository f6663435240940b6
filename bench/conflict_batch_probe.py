"""DetectConflict's labelled cases asked one at a time and in batches, compared.

Whether a slot's DetectConflict questions may be asked together (the
agents' `conflicts_batched` param, operations/detect_conflict_batch.py) is
a question of the model's accuracy: the `conflicts` cases of a venue's
probe file asked one at a time, as `judgement_probe.py --only conflicts`
asks them (probe_run.py), and in batches of given sizes, scored against
the labels. A batch is made as a run makes one: cases seen at the same
place, in file order, cut into batches of the size given (and further by
the request budget, as a run cuts them). Prints per venue and mode the
hits (breaches found) and false alarms (non-breaches called breaches,
intentions among them) with 95% intervals from a bootstrap over cases,
the paired difference batched minus one at a time with its interval (the
same resampled cases scored both ways), whether the rule passes, and every
case whose verdict differs. A failed call counts as no breach found, as in
the probe's own counts. Called by `bench/judgement_probe.py --only
conflicts --batch-sizes N ...`; `--simulate` alone shows the rule's error
rates:

  .venv/bin/python bench/conflict_batch_probe.py --simulate
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from crsec_concordia.calibration.probes import ConflictCase, Probes  # noqa: E402
from crsec_concordia.calibration.run_policy import RefereeSettings  # noqa: E402
from crsec_concordia.metrics.classifiers import probe_run  # noqa: E402
from crsec_concordia.models.base import EndpointError  # noqa: E402
from crsec_concordia.models.request_budget import in_batches  # noqa: E402
from crsec_concordia.operations import detect_conflict_batch as batch_lib  # noqa: E402
from crsec_concordia.scenarios import Scenario  # noqa: E402

import batch_probe  # noqa: E402  (bench/, beside this file)

# The referee's resamples, seed and margin (bench/batch_probe.py,
# docs/calibration.md): batched passes when the paired difference's 95%
# interval lies above -MARGIN for hits and below +MARGIN for false alarms.
RESAMPLES, SEED, MARGIN = (batch_probe.RESAMPLES, batch_probe.SEED,
                           batch_probe.MARGIN)
ONE_AT_A_TIME = "one at a time"
# The cases simulated: one venue's (the mini café's 23) and the shipped and
# held-out venues' pooled (119).
SIMULATED_CASES = (23, 119)


@dataclasses.dataclass
class ModeVerdicts:
  """One mode's verdict on every case, in the cases' order: True a
  breach, False none, None the call failed."""
  name: str
  said: list[bool | None]


def one_at_a_time(venue, cases: Sequence[ConflictCase]) -> list[bool | None]:
  """Each case asked alone, as judgement_probe.py asks it."""
  return [probe_run._conflict_case(venue, c)["said"]  # noqa: SLF001
          for c in cases]


def batched(venue, cases: Sequence[ConflictCase], size: int,
            budget: int = batch_lib.CONTEXT_TOKENS) -> list[bool | None]:
  """Each case asked in batches of `size` cases seen at one place."""
  items = [probe_run.conflict_item(venue, c) for c in cases]
  by_place: dict[str, list[int]] = {}
  for n, item in enumerate(items):
    by_place.setdefault(item.place, []).append(n)
  said: list[bool | None] = [None] * len(cases)
  for numbers in by_place.values():
    for start in range(0, len(numbers), size):
      for chunk in in_batches(
          numbers[start:start + size],
          lambda ns: batch_lib.tokens([items[n] for n in ns]), budget):
        try:
          judged = batch_lib.detect_conflicts_batched(
              venue.model, [items[n] for n in chunk], None)
        except EndpointError:
          continue
        for n, judgement in zip(chunk, judged):
          said[n] = None if judgement is None else judgement.breaks
  return said


def outcomes(cases: Sequence[ConflictCase], said: Sequence[bool | None]
             ) -> np.ndarray:
  """Per case: (hit, breach, false alarm, non-breach) as 0 or 1."""
  return np.array([(c.breaks and s is True, c.breaks,
                    not c.breaks and s is True, not c.breaks)
                   for c, s in zip(cases, said)], dtype=float).reshape(-1, 4)


def _rates(sums: np.ndarray) -> np.ndarray:
  """(hit rate, false-alarm rate) of summed outcome rows (0 with nothing
  to count)."""
  with np.errstate(invalid="ignore", divide="ignore"):
    hits = np.where(sums[..., 1] > 0, sums[..., 0] / sums[..., 1], 0.0)
    alarms = np.where(sums[..., 3] > 0, sums[..., 2] / sums[..., 3], 0.0)
  return np.stack([hits, alarms], axis=-1)


def compare(base: np.ndarray, others: dict[str, np.ndarray],
            name: str = ONE_AT_A_TIME, resamples: int = RESAMPLES,
            seed: int = SEED) -> dict[str, dict[str, tuple[float, ...]]]:
  """{mode: {"hits": (rate, lo, hi), "alarms": ..., "dhits": (diff, lo,
  hi), "dalarms": ...}} from per-case outcome rows: each mode's rates with
  95% bootstrap intervals over cases, and the paired difference from
  `base` (none for base)."""
  return batch_probe.paired_bootstrap(base, others, _rates,
                                      ("hits", "alarms"), name, resamples,
                                      seed)


def passes(figures: dict[str, tuple[float, ...]],
           margin: float = MARGIN) -> bool:
  """The rule: batched finds no fewer breaches and raises no more false
  alarms than one at a time, within the margin, at 95%."""
  return figures["dhits"][1] > -margin and figures["dalarms"][2] < margin


def simulate(cases: int = 23, venues: int = 200, breaches: float = 0.4,
             hit: float = 0.8, alarm: float = 0.1,
             losses: Sequence[float] = (0.0, 0.05, 0.1, 0.15),
             churn: float = 0.1, resamples: int = 500, seed: int = SEED,
             rule=passes) -> dict[float, float]:
  """{hit rate lost batched: the share of simulated venues `rule` (the
  pooled one, `passes`, or the venue's, `holds_on_venue`) passes}. Each venue: `cases` cases, a share `breaches` of them breaches;
  one at a time finds a breach at `hit` and raises a false alarm at
  `alarm`; batched answers as one at a time did (paired: the same model
  asked both ways) except that a share `churn` of cases is answered afresh
  at the same rates, and a found breach is lost at the rate that takes
  `loss` off the hit rate."""
  rng = np.random.default_rng(seed)
  out = {}
  for loss in losses:
    passed = 0
    for v in range(venues):
      breach = rng.random(cases) < breaches
      said = np.where(breach, rng.random(cases) < hit,
                      rng.random(cases) < alarm)
      fresh = rng.random(cases) < churn
      again = np.where(fresh, np.where(breach, rng.random(cases) < hit,
                                       rng.random(cases) < alarm), said)
      again &= ~(breach & (rng.random(cases) < loss / hit))

      def rows(verdict):
        return np.stack([breach & verdict, breach, ~breach & verdict,
                         ~breach], axis=1).astype(float)
      figures = compare(rows(said), {"b": rows(again)},
                        resamples=resamples, seed=seed + v)
      passed += rule(figures["b"])
    out[loss] = passed / venues
  return out


def differing(cases: Sequence[ConflictCase], base: ModeVerdicts,
              other: ModeVerdicts) -> list[str]:
  """A line per case whose verdict differs between two modes."""
  def word(s):
    return "failed" if s is None else "breach" if s else "none"
  return [f"   differs ({other.name}): want "
          f"{'breach' if c.breaks else 'none'}"
          f"{' (intention)' if c.intention else ''}, {base.name} "
          f"{word(b)}, {other.name} {word(o)} | {c.norm} | {c.action}"
          for c, b, o in zip(cases, base.said, other.said) if b != o]


def _fmt(figure: tuple[float, ...]) -> str:
  return f"{figure[0]:.2f} [{figure[1]:.2f}, {figure[2]:.2f}]"


def lines_of(label: str, rows: dict[str, np.ndarray]) -> list[str]:
  """The figures of each mode's outcome rows ({mode: rows}, the first one
  at a time), one line each."""
  names = list(rows)
  figures = compare(rows[names[0]], {m: rows[m] for m in names[1:]},
                    names[0])
  lines = []
  for mode in names:
    f, sums = figures[mode], rows[mode].sum(axis=0)
    line = (f"{label} DetectConflict {mode}: hits {sums[0]:.0f}/{sums[1]:.0f}"
            f" {_fmt(f['hits'])}, false alarms {sums[2]:.0f}/{sums[3]:.0f} "
            f"{_fmt(f['alarms'])}")
    if "dhits" in f:
      line += (f"; minus one at a time: hits {_fmt(f['dhits'])}, false "
               f"alarms {_fmt(f['dalarms'])}, rule "
               f"{'passes' if passes(f) else 'fails'}")
    lines.append(line + f" (n={len(rows[mode])})")
  return lines


def largest(sizes: Sequence[int]) -> str:
  """The mode the rule reads: batches of the largest size."""
  return f"batches of {max(sizes)}"


def _figures(rows: dict[str, np.ndarray]) -> dict[str, Any]:
  return compare(rows[ONE_AT_A_TIME], {m: r for m, r in rows.items()
                                       if m != ONE_AT_A_TIME})


def holds_on_venue(figures: dict[str, tuple[float, ...]],
                   margin: float = MARGIN) -> bool:
  """The venue's rule: batched is not shown worse on the venue's own
  cases (the hits' difference interval reaching 0 from below, the false
  alarms' from above), and neither point figure is worse than the
  margin."""
  return (figures["dhits"][0] >= -margin and figures["dhits"][2] >= 0
          and figures["dalarms"][0] <= margin and figures["dalarms"][1] <= 0)


def venue_figures(rows: dict[str, np.ndarray], sizes: Sequence[int]
                  ) -> dict[str, Any]:
  """What calibration/batching.py keeps of a venue: each mode's figures,
  and `keeps`: the venue's rule at the largest size."""
  figures = _figures(rows)
  at = figures[largest(sizes)]
  return {"n": int(len(rows[ONE_AT_A_TIME])), "figures": figures,
          "keeps": holds_on_venue(at)}


def pooled(found: Sequence[dict[str, np.ndarray]], sizes: Sequence[int]
           ) -> dict[str, Any]:
  """Every venue's cases scored as one, and `passes`: the rule."""
  rows = {m: np.concatenate([r[m] for r in found]) for m in found[0]}
  figures = _figures(rows)
  return {"n": int(len(rows[ONE_AT_A_TIME])), "figures": figures,
          "passes": passes(figures[largest(sizes)]), "margin": MARGIN,
          "sizes": sorted(sizes)}


def run_venue(model, embedder, scenario: Scenario, probes: Probes,
              settings: RefereeSettings, sizes: Sequence[int]
              ) -> tuple[list[str], dict[str, np.ndarray]]:
  """The venue's comparison, printed: its summary lines and each mode's
  outcome rows (for a pooled comparison over venues)."""
  venue = probe_run._Venue(model, embedder, scenario, settings)  # noqa: SLF001
  cases = list(probes.conflicts)
  base = ModeVerdicts(ONE_AT_A_TIME, one_at_a_time(venue, cases))
  others = [ModeVerdicts(f"batches of {k}", batched(venue, cases, k))
            for k in sizes]
  rows = {m.name: outcomes(cases, m.said) for m in (base, *others)}
  lines = lines_of(scenario.name, rows)
  for line in lines:
    print(line, flush=True)
  for mode in others:
    for line in differing(cases, base, mode):
      print(line)
  return lines, rows


def _main(argv: Sequence[str] | None = None) -> int:
  argv = list(argv if argv is not None else sys.argv[1:])
  if argv != ["--simulate"]:
    print("usage: conflict_batch_probe.py --simulate; to compare a model's "
          "answers: bench/judgement_probe.py --only conflicts --batch-sizes "
          "N ...", file=sys.stderr)
    return 2
  batch_probe.print_simulations(
      ((f"the pooled rule (paired differences' 95% intervals: hits above "
        f"-{MARGIN}, false alarms below +{MARGIN})", passes,
        SIMULATED_CASES),
       ("the venue's rule (its intervals reaching 0, its points within "
        f"{MARGIN})", holds_on_venue, SIMULATED_CASES[:1])),
      simulate, "hits 0.8 and false alarms 0.1 one at a time", "of hits")
  return 0


if __name__ == "__main__":
  sys.exit(_main())

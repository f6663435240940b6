"""How often the say-do gap's 95% interval covers the true gap, by simulation.

Each simulated run has AGENTS agents; each states the target with
probability 0.6 and, stating it, had a tagged deed with probability 0.7; a
sayer with a deed violates with the run's own probability, drawn around the
true gap (Beta with the given spread between runs: seeds differ). The
interval is measure/say_hold_table.say_do_gap's: Jeffreys over agents for
one run, a percentile bootstrap of runs for several. Coverage is of the
true gap: the mean violation probability over runs.
Usage: .venv/bin/python bench/say_do_gap_coverage.py [TRIALS]
"""

import sys

import numpy as np
import pandas as pd

sys.path.insert(0, ".")

from crsec_concordia.metrics.measure import say_hold_do as shd  # noqa: E402
from crsec_concordia.metrics.measure import say_hold_table  # noqa: E402

AGENTS = 10


def one_run(rng: np.random.Generator, p: float) -> pd.DataFrame:
  says = rng.random(AGENTS) < 0.6
  acted = rng.random(AGENTS) < 0.7
  broke = rng.random(AGENTS) < p
  return pd.DataFrame({
      "say": [shd.STATES if s else shd.SILENT for s in says],
      "do": [(shd.VIOLATES if b else shd.COMPLIES) if a else shd.NO_OCCASION
             for a, b in zip(acted, broke)]})


def coverage(gap: float, runs: int, spread: float, trials: int,
             rng: np.random.Generator) -> tuple[float, int]:
  hit = made = 0
  for _ in range(trials):
    if spread:
      strength = 1 / spread
      ps = rng.beta(gap * strength, (1 - gap) * strength, size=runs)
    else:
      ps = np.full(runs, gap)
    out = say_hold_table.say_do_gap([one_run(rng, p) for p in ps])
    if out["gap"] is None:
      continue
    made += 1
    hit += out["low"] <= gap <= out["high"]
  return (hit / made if made else float("nan")), made


def main() -> None:
  trials = int(sys.argv[1]) if len(sys.argv) > 1 else 200
  rng = np.random.default_rng(7)
  print(f"{AGENTS} agents per run, {trials} trials per row; coverage of "
        "the 95% interval")
  print("true gap | runs | spread between runs | coverage | intervals made")
  for gap in (0.1, 0.3, 0.5):
    for runs in (1, 3, 5, 10):
      for spread in (0.0, 0.1):
        if runs == 1 and spread:
          continue
        c, made = coverage(gap, runs, spread, trials, rng)
        print(f"{gap:.1f} | {runs} | {spread:.1f} | {c:.3f} | {made}")


if __name__ == "__main__":
  main()

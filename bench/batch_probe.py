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
tags differ between the two. The asking and the rules are the package's
(crsec_concordia/metrics/classifiers/batch_probe_run.py,
crsec_concordia/calibration/batch_compare.py), which `crsec calibrate
--batch-sizes` uses on any model. Called by bench/judgement_probe.py
`--batch-sizes N ...`, or alone:

  .venv/bin/python bench/batch_probe.py --simulate   # the rule's error rates

Any endpoint, as judgement_probe.py (by default the embedded model).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from crsec_concordia.calibration import batch_compare as rules  # noqa: E402
from crsec_concordia.calibration.paired import REPEAT_DIFFERENCE  # noqa: E402
from crsec_concordia.calibration.probes import Probes  # noqa: E402
from crsec_concordia.calibration.run_policy import RefereeSettings  # noqa: E402
from crsec_concordia.metrics.classifiers import batch_probe_run as asking  # noqa: E402
from crsec_concordia.metrics.classifiers import probe_run  # noqa: E402
from crsec_concordia.scenarios import Scenario  # noqa: E402

# The cases simulated: one venue's referee cases (the mini café's 66), and
# the shipped venues' pooled.
SIMULATED_CASES = (66, 200)


def say(line: str) -> None:
  """A line of the comparison, shown as it comes."""
  print(line, flush=True)


def run_venue(model, embedder, scenario: Scenario, probes: Probes,
              settings: RefereeSettings, sizes: Sequence[int]
              ) -> asking.VenueResult:
  """The venue's comparison, printed; its summary lines and rows."""
  venue = probe_run._Venue(model, embedder, scenario, settings)  # noqa: SLF001
  return asking.referee_both_ways(venue, list(probes.referee), sizes, say)


def _main(argv: Sequence[str] | None = None) -> int:
  argv = list(argv if argv is not None else sys.argv[1:])
  if argv != ["--simulate"]:
    # The model's answers are asked by judgement_probe.py (or `crsec
    # calibrate --batch-sizes`).
    print("usage: batch_probe.py --simulate; to compare a model's answers "
          "batched and per action: bench/judgement_probe.py --batch-sizes N "
          "...", file=sys.stderr)
    return 2
  print_simulations(
      ((f"the pooled rule (the paired difference's 95% interval above "
        f"-{REPEAT_DIFFERENCE})", rules.passes, SIMULATED_CASES),
       ("the venue's rule (its interval reaching 0, its point above "
        f"-{REPEAT_DIFFERENCE})", rules.holds_on_venue,
        SIMULATED_CASES[:1])),
      rules.simulate, "recall 0.8 per action", "recall")
  return 0


def print_simulations(rules_run,
                      simulate_with: Callable[..., dict[float, float]],
                      setting: str, lost: str) -> None:
  """Each rule's simulated pass rate (`rules_run`: (name, rule, case
  counts)), by the loss batched (`lost`: what it takes off) on `setting`."""
  for name, rule, sizes in rules_run:
    print(f"{name}, {setting}, a tenth of the cases answered afresh "
          "batched:")
    for n in sizes:
      for loss, share in simulate_with(cases=n, rule=rule).items():
        print(f"  {n} cases, batched loses {loss:.2f} {lost}: passed on "
              f"{share:.0%} of simulated venues", flush=True)


if __name__ == "__main__":
  sys.exit(_main())

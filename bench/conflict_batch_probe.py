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
the probe's own counts. The asking and the rules are the package's
(crsec_concordia/metrics/classifiers/batch_probe_run.py,
crsec_concordia/calibration/conflict_batch_compare.py), which `crsec
calibrate --batch-sizes` uses on any model. Called by
`bench/judgement_probe.py --only conflicts --batch-sizes N ...`;
`--simulate` alone shows the rule's error rates:

  .venv/bin/python bench/conflict_batch_probe.py --simulate
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from crsec_concordia.calibration import conflict_batch_compare as rules  # noqa: E402
from crsec_concordia.calibration.paired import REPEAT_DIFFERENCE  # noqa: E402
from crsec_concordia.calibration.probes import Probes  # noqa: E402
from crsec_concordia.calibration.run_policy import RefereeSettings  # noqa: E402
from crsec_concordia.metrics.classifiers import batch_probe_run as asking  # noqa: E402
from crsec_concordia.metrics.classifiers import probe_run  # noqa: E402
from crsec_concordia.scenarios import Scenario  # noqa: E402

import batch_probe  # noqa: E402  (bench/, beside this file)

# The cases simulated: one venue's (the mini café's 23) and the shipped and
# held-out venues' pooled (119).
SIMULATED_CASES = (23, 119)


def run_venue(model, embedder, scenario: Scenario, probes: Probes,
              settings: RefereeSettings, sizes: Sequence[int]
              ) -> tuple[list[str], dict[str, np.ndarray]]:
  """The venue's comparison, printed: its summary lines and each mode's
  outcome rows (for a pooled comparison over venues)."""
  venue = probe_run._Venue(model, embedder, scenario, settings)  # noqa: SLF001
  result = asking.conflicts_both_ways(venue, list(probes.conflicts), sizes,
                                    batch_probe.say)
  return result.lines, result.rows


def _main(argv: Sequence[str] | None = None) -> int:
  argv = list(argv if argv is not None else sys.argv[1:])
  if argv != ["--simulate"]:
    print("usage: conflict_batch_probe.py --simulate; to compare a model's "
          "answers: bench/judgement_probe.py --only conflicts --batch-sizes "
          "N ...", file=sys.stderr)
    return 2
  batch_probe.print_simulations(
      ((f"the pooled rule (paired differences' 95% intervals: hits above "
        f"-{REPEAT_DIFFERENCE}, false alarms below +{REPEAT_DIFFERENCE})",
        rules.conflicts_pass, SIMULATED_CASES),
       ("the venue's rule (its intervals reaching 0, its points within "
        f"{REPEAT_DIFFERENCE})", rules.conflicts_hold_on_venue,
        SIMULATED_CASES[:1])),
      rules.simulate_conflicts,
      "hits 0.8 and false alarms 0.1 one at a time", "of hits")
  return 0


if __name__ == "__main__":
  sys.exit(_main())

"""Pass rate of the smoker case (issue: >= 5 seeds) on the embedded model.

Each seed runs the case with a fresh agent and no response cache, and prints
whether Carlos ended with a qualified norm meaning "No smoking indoors".
Usage: .venv/bin/python bench/smoker_adoption.py [N_SEEDS]
"""

import sys
import time

sys.path.insert(0, ".")

from crsec_concordia.models import EndpointConfig, make_model  # noqa: E402
from tests.smoker_case import smoker_adopts  # noqa: E402


def main() -> None:
  seeds = range(1, 1 + (int(sys.argv[1]) if len(sys.argv) > 1 else 8))
  passed = 0
  start = time.monotonic()
  for seed in seeds:
    model = make_model(EndpointConfig(), seed=seed)
    ok, best, norms = smoker_adopts(model)
    passed += ok
    print(f"seed {seed}: {'PASS' if ok else 'fail'} best cosine {best:.2f} "
          f"norms {norms}", flush=True)
  n = len(seeds)
  print(f"pass rate {passed}/{n} = {passed / n:.0%} "
        f"({time.monotonic() - start:.0f}s)")


if __name__ == "__main__":
  main()

"""How many malformed scenarios `crsec` rejects cleanly: the fuzzing figure.

Every mutant of tests/scenario_mutants.py (the shipped scenarios broken at
the bytes, the YAML, every field and every cross-reference: alias bombs,
deep nesting, non-UTF-8, huge numbers, impossible times, unknown ids,
duplicate names, a directory, an empty file, ...) goes through `crsec run`
in this process on the default embedded model, with tripwires on every way
a model starts. Rejected cleanly: exit code 2, one `FILE:LINE: field:
problem; fix` line per problem, no traceback, no run directory, no cache,
no model started. Prints each mutant that was not, then

  fuzz N/N rejected cleanly (T s, slowest: NAME T s)

and exits non-zero unless all were. No model is ever started.

  .venv/bin/python bench/scenario_fuzz.py              # crsec run
  .venv/bin/python bench/scenario_fuzz.py --compare    # also crsec compare
  .venv/bin/python bench/scenario_fuzz.py --verbose    # every message
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import scenario_mutants  # noqa: E402


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--compare", action="store_true",
                      help="also feed every mutant to `crsec compare`")
  parser.add_argument("--verbose", action="store_true",
                      help="print every rejection message")
  args = parser.parse_args()
  mutants = scenario_mutants.all_mutants()
  # The commands' imports (Concordia, pandas) once, outside the timings.
  from crsec_concordia import cli  # pylint: disable=import-outside-toplevel
  cli.build_parser()
  commands = ["run"] + (["compare"] if args.compare else [])
  clean = total = 0
  slowest = ("", 0.0)
  start = time.monotonic()
  for command in commands:
    for mutant in mutants:
      began = time.monotonic()
      outcome = scenario_mutants.reject(mutant, command)
      took = time.monotonic() - began
      slowest = max(slowest, (f"{command} {mutant.name}", took),
                    key=lambda s: s[1])
      total += 1
      clean += not outcome.faults
      if outcome.faults:
        print(f"NOT CLEAN: crsec {command} <{mutant.name}>")
        for fault in outcome.faults:
          print(f"  {fault}")
      elif args.verbose:
        print(f"crsec {command} <{mutant.name}>: {outcome.stderr.strip()}")
  print(f"fuzz {clean}/{total} rejected cleanly ({time.monotonic() - start:.1f} s,"
        f" slowest: {slowest[0]} {slowest[1]:.2f} s)")
  return 0 if clean == total else 1


if __name__ == "__main__":
  sys.exit(main())

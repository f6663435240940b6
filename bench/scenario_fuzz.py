"""How many malformed scenarios `crsec` rejects cleanly: the fuzzing figure.

Every mutant of tests/scenario_mutants.py (the shipped scenarios broken at
the bytes, the YAML, every field and every cross-reference: alias bombs,
deep nesting, non-UTF-8, huge numbers, impossible times, unknown ids,
duplicate names, a directory, an empty file, ...) goes through `crsec run`
in this process on the default embedded model, with tripwires on every way
a model starts. Rejected cleanly: exit code 2, one `FILE:LINE: field:
problem; fix` line per problem, no traceback, no run directory, no cache,
no model started. Sweep files get the same (issue 13): every mutant of
tests/sweep_mutants.py (the same generator on a sweep file that sets every
field, and what only a sweep gets wrong: seeds, the grid, conditions that
break their scenario, endpoints, exclude rules) through `crsec sweep`,
which must also leave no sweep directory and start no Ray. Prints each
mutant that was not rejected cleanly, then

  fuzz N/N rejected cleanly (T s, slowest: NAME T s)
  sweep fuzz M/M rejected cleanly (T s, slowest: NAME T s)

and exits non-zero unless all were. No model is ever started.

  .venv/bin/python bench/scenario_fuzz.py              # crsec run
  .venv/bin/python bench/scenario_fuzz.py --compare    # also crsec compare
  .venv/bin/python bench/scenario_fuzz.py --verbose    # every message
  .venv/bin/python bench/scenario_fuzz.py --no-sweeps  # scenarios only
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crsec_concordia import cli  # noqa: E402,F401  (the commands' imports, outside the timings)
from tests import scenario_mutants, sweep_mutants  # noqa: E402
from tests.yaml_fuzz import Mutant  # noqa: E402


def fuzz(label: str, commands: list[str], mutants: list[Mutant],
         verbose: bool) -> bool:
  """Feeds every mutant to every command; prints the figure line."""
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
      elif verbose:
        print(f"crsec {command} <{mutant.name}>: {outcome.stderr.strip()}")
  print(f"{label} {clean}/{total} rejected cleanly "
        f"({time.monotonic() - start:.1f} s, slowest: {slowest[0]} "
        f"{slowest[1]:.2f} s)", flush=True)
  return clean == total


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--compare", action="store_true",
                      help="also feed every mutant to `crsec compare`")
  parser.add_argument("--verbose", action="store_true",
                      help="print every rejection message")
  parser.add_argument("--no-sweeps", action="store_true",
                      help="leave out the sweep files")
  args = parser.parse_args()
  commands = ["run"] + (["compare"] if args.compare else [])
  ok = fuzz("fuzz", commands, scenario_mutants.all_mutants(), args.verbose)
  if not args.no_sweeps:
    ok &= fuzz("sweep fuzz", ["sweep"], sweep_mutants.all_mutants(),
               args.verbose)
  return 0 if ok else 1


if __name__ == "__main__":
  sys.exit(main())

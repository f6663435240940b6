"""Sweep fuzzing: every malformed sweep file of tests/sweep_mutants.py is
rejected cleanly by `crsec sweep` (exit code 2, one `FILE:LINE: field:
problem; fix` line per problem, no traceback, no sweep directory, neither
Ray nor a model started), as scenarios are (tests/test_scenario_fuzz.py).
"""

from __future__ import annotations

import pytest

from tests import scenario_mutants as sm
from tests import sweep_mutants
from tests.yaml_fuzz import Mutant

MUTANTS = sweep_mutants.all_mutants()
BY_NAME = {m.name: m for m in MUTANTS}


def test_there_are_at_least_50_sweep_mutants_of_every_kind():
  assert len(MUTANTS) >= 50
  for name in ("a list alias bomb", "an alias bomb as the document",
               "a NUL byte", "empty file", "a directory", "Latin-1 bytes",
               "a number of 5000 digits", "seeds: missing",
               "conditions: wrong type", "endpoints.a.timeout: wrong type",
               "seeds backwards", "an unknown built-in scenario",
               "a misspelt module in a condition", "every run excluded",
               "a condition for an agent who is not there"):
    assert f"sweep: {name}" in BY_NAME, name


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_a_malformed_sweep_file_is_rejected_cleanly(mutant):
  outcome = sm.reject(mutant, "sweep")
  assert not outcome.faults, "\n".join(outcome.faults)


def test_the_base_sweep_is_valid_and_the_tripwires_catch_it():
  # The unbroken file passes validation and goes on to start Ray, which
  # the tripwires stop: a mutant that slipped through would be caught.
  outcome = sm.reject(Mutant("the valid sweep", sweep_mutants.BASE.encode()),
                      "sweep")
  assert any(f.startswith("a model was started: RayBackend")
             for f in outcome.faults), outcome.faults

"""Scenario fuzzing: every malformed variant of the shipped scenarios is
rejected cleanly by `crsec run` and `crsec compare` (exit code 2, one
`FILE:LINE: field: problem; fix` line per problem, no traceback, nothing
created) before any model starts (tests/scenario_mutants.py has the
mutants and the judge; tests/yaml_fuzz.py the generic generator).

In-process for speed (about 30 ms a file); four through the installed
script, where only a real process shows what reaches the terminal.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path
from typing import Literal

import pydantic
import pytest
import yaml

from tests import scenario_mutants as sm
from tests.test_cli_basics import CRSEC
from tests.yaml_fuzz import Mutant, schema_mutants, syntax_mutants

MUTANTS = sm.all_mutants()
BY_NAME = {m.name: m for m in MUTANTS}


def test_there_are_at_least_50_mutants_of_every_kind():
  assert len(MUTANTS) >= 50
  for name in ("a list alias bomb", "an alias bomb as the document",
               "deeply nested lists", "Latin-1 bytes", "a NUL byte",
               "empty file", "a directory", "an INI file",
               "a number of 5000 digits", "a duplicate agent name",
               "an unknown behaviour under complies", "end before start",
               "clock.start: wrong type", "clock.start: missing"):
    assert name in BY_NAME, name


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_a_malformed_scenario_is_rejected_cleanly(mutant):
  outcome = sm.reject(mutant, "run")
  assert not outcome.faults, "\n".join(outcome.faults)


# `crsec compare` loads the file through the same loader; a sample of every
# kind checks its own path (it must not create the compare directory).
@pytest.mark.parametrize("mutant", MUTANTS[::8], ids=[m.name for m in MUTANTS[::8]])
def test_compare_rejects_cleanly_too(mutant):
  outcome = sm.reject(mutant, "compare")
  assert not outcome.faults, "\n".join(outcome.faults)


def test_the_tripwires_catch_a_model_start():
  # The valid file itself: validation passes and the run goes on to start
  # the embedded model, which the tripwires stop and report. So a mutant
  # that slipped through validation would be caught, not run.
  outcome = sm.reject(Mutant("the valid mini cafe", sm.MINI.encode()))
  assert any(f.startswith("a model was started") for f in outcome.faults), \
      outcome.faults


@pytest.fixture(scope="module")
def closed_url() -> str:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


@pytest.mark.parametrize("name", [
    "a list alias bomb", "deeply nested lists", "a NUL byte",
    "a scenario name that climbs directories"])
def test_the_installed_script_rejects_cleanly(tmp_path, closed_url, name):
  mutant = BY_NAME[name]
  work, cache = tmp_path / "work", tmp_path / "cache"
  work.mkdir()
  cache.mkdir()
  path = mutant.write(tmp_path)
  env = {k: v for k, v in os.environ.items()
         if not k.startswith(("CRSEC_", "OPENAI_"))}
  env["CRSEC_CACHE_DIR"] = str(cache)
  # An endpoint nobody listens on: should validation ever let a mutant
  # through, the run fails on the endpoint instead of starting the
  # embedded model (the in-process tests check that it never gets there).
  result = subprocess.run(
      [str(CRSEC), "run", str(path), "--base-url", closed_url, "--model", "m"],
      cwd=work, env=env, capture_output=True, text=True, timeout=60,
      check=False)
  assert result.returncode == 2, result.stderr
  assert result.stdout == ""
  assert not sm.line_faults(result.stderr, str(path), mutant.where)
  assert not any(work.iterdir()) and not any(cache.iterdir())


# -- the generator on another file type ----------------------------------------


class _Range(pydantic.BaseModel):
  model_config = pydantic.ConfigDict(extra="forbid")
  low: int
  high: int
  step: int = 1


class _Sweep(pydantic.BaseModel):
  """A made-up file type: the generator knows nothing of scenarios."""
  model_config = pydantic.ConfigDict(extra="forbid")
  name: str
  mode: Literal["grid", "random"]
  parallel: bool = False
  seeds: list[int]
  ranges: dict[str, _Range] = {}
  runs: list[_Range]
  note: str | None = None


SWEEP = """\
name: smoke
mode: grid
parallel: true
seeds: [1, 2, 3]
ranges: {agents: {low: 2, high: 10}}
runs:
  - {low: 1, high: 5, step: 2}
note: a note
"""


def test_schema_mutants_of_another_file_type_are_all_invalid():
  _Sweep.model_validate(yaml.safe_load(SWEEP))
  mutants = schema_mutants(SWEEP, _Sweep)
  names = {m.name for m in mutants}
  assert {"name: missing", "mode: wrong type", "seeds[0]: an item of the "
          "wrong type", "ranges.agents.low: missing", "runs[0].step: null",
          "ranges.agents.zz_unknown_key: an unknown key",
          "note: wrong type"} <= names
  assert "note: null" not in names  # None is allowed there.
  for mutant in mutants:
    with pytest.raises(pydantic.ValidationError):
      _Sweep.model_validate(yaml.safe_load(mutant.content))


def test_syntax_mutants_of_another_file_are_never_valid_yaml_mappings():
  for mutant in syntax_mutants(SWEEP):
    if mutant.content is None or mutant.name.startswith(
        ("a number", "a file", "a duplicate")):
      continue  # A directory; bounds, size and duplicate keys are loader policy.
    try:
      data = yaml.safe_load(mutant.content.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError, ValueError,
            KeyError, AttributeError):
      continue
    problem = None
    try:
      _Sweep.model_validate(data)
    except pydantic.ValidationError as e:
      problem = e
    assert problem is not None, mutant.name


def test_mutants_write_files_and_directories(tmp_path: Path):
  assert BY_NAME["a directory"].write(tmp_path).is_dir()
  path = BY_NAME["empty file"].write(tmp_path)
  assert path.is_file() and path.read_bytes() == b""

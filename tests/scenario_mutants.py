"""Malformed scenarios from the shipped ones, and a judge of how `crsec`
rejects each (and each sweep file of tests/sweep_mutants.py): for
tests/test_scenario_fuzz.py, tests/test_sweep_fuzz.py and
bench/scenario_fuzz.py.

Rejected cleanly means: exit code 2, nothing on stdout, every line on
stderr a `FILE[:LINE]: field: problem; fix` line about this file (the
first prefixed `crsec: `), no traceback, no run, compare or sweep
directory, no response cache, no Ray, and no model of any kind started:
a malformed file must
fail at validation, before the embedded llama.cpp model (minutes to start,
and the machine's one model slot) or the sentence embedder is touched.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import sys
import tempfile
import traceback
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from crsec_concordia import cli
from crsec_concordia.embedding import MiniLMEmbedder
from crsec_concordia.models import embedded
from crsec_concordia.models.openai_compatible import OpenAICompatibleModel
from crsec_concordia.scenarios import Scenario, builtin_path
from crsec_concordia.sweeps.ray_backend import RayBackend
from tests.yaml_fuzz import Mutant, edited, reshaped, schema_mutants, syntax_mutants

MINI = builtin_path("hobbs_cafe_mini").read_text(encoding="utf-8")
FULL = builtin_path("hobbs_cafe").read_text(encoding="utf-8")
CLOCK = 'clock: {start: "09:00", end: "10:15", minutes_per_step: 15, days: 1}'
FULL_CLOCK = 'clock: {start: "09:00", end: "16:00", minutes_per_step: 10, days: 2}'
ABIGAIL_PREFS = "    preferences: {smoking: against, noise: quiet, tipping: for}\n"


def _clock(name: str, old: str, new: str, where: str) -> Mutant:
  assert old in CLOCK, old
  return edited(MINI, name, CLOCK, CLOCK.replace(old, new), where)


def _norms(name: str, norm: str, where: str) -> Mutant:
  """Abigail with one initial norm, written as `norm`."""
  return edited(MINI, name, ABIGAIL_PREFS,
                ABIGAIL_PREFS + f"    initial_norms:\n      - {norm}\n", where)


def _occasion(name: str, extra: str, where: str) -> Mutant:
  old = "    behaviours: [tipped, refused_tip]\n"
  return edited(MINI, name, old, old + extra, where)


def _set(path: tuple, value: Any):
  def change(data: Any) -> None:
    for part in path[:-1]:
      data = data[part]
    data[path[-1]] = value
  return change


def semantic_mutants() -> list[Mutant]:
  """What only a scenario can get wrong: times, ids, names, counts."""
  huge = "1" + "0" * 30
  return [
      _clock("start at 25:00", '"09:00"', '"25:00"', "clock.start"),
      _clock("start at 9:60", '"09:00"', '"9:60"', "clock.start"),
      _clock("start with seconds", '"09:00"', '"09:00:00"', "clock.start"),
      _clock("start at noon in words", '"09:00"', "noon", "clock.start"),
      _clock("start at a negative time", '"09:00"', '"-01:00"', "clock.start"),
      _clock("end before start", '"10:15"', '"08:00"', "clock.end"),
      _clock("end equal to start", '"10:15"', '"09:00"', "clock.end"),
      _clock("end at 24:00", '"10:15"', '"24:00"', "clock.end"),
      _clock("zero minutes per step", "minutes_per_step: 15",
             "minutes_per_step: 0", "clock.minutes_per_step"),
      _clock("a step longer than a day", "minutes_per_step: 15",
             "minutes_per_step: 1441", "clock.minutes_per_step"),
      _clock("negative minutes per step", "minutes_per_step: 15",
             "minutes_per_step: -15", "clock.minutes_per_step"),
      _clock("fractional minutes per step", "minutes_per_step: 15",
             "minutes_per_step: 7.5", "clock.minutes_per_step"),
      _clock("zero days", "days: 1", "days: 0", "clock.days"),
      _clock("a trillion days", "days: 1", "days: 1000000000000", "clock.days"),
      _clock("days as a quoted number of 5000 digits", "days: 1",
             'days: "' + "9" * 5000 + '"', "clock.days"),
      edited(MINI, "occasion before opening", 'at: "09:30"', 'at: "08:30"',
             "occasions[0].at"),
      edited(MINI, "occasion at closing", 'at: "09:30"', 'at: "10:15"',
             "occasions[0].at"),
      edited(MINI, "occasion at 31:00", 'at: "09:30"', 'at: "31:00"',
             "occasions[0].at"),
      edited(MINI, "max_steps beyond the clock", CLOCK, CLOCK + "\nmax_steps: 6",
             "max_steps"),
      edited(MINI, "max_steps zero", CLOCK, CLOCK + "\nmax_steps: 0", "max_steps"),
      edited(MINI, "max_steps of a quadrillion", CLOCK,
             CLOCK + "\nmax_steps: 1000000000000000", "max_steps"),
      edited(MINI, "a huge initial_norm_count", "initial_norm_count: 5",
             f"initial_norm_count: {huge}", "crsec.initial_norm_count"),
      edited(MINI, "a negative initial_norm_count", "initial_norm_count: 5",
             "initial_norm_count: -1", "crsec.initial_norm_count"),
      edited(MINI, "a huge synthesis_threshold", "synthesis_threshold: 350",
             f"synthesis_threshold: {huge}", "crsec.synthesis_threshold"),
      edited(MINI, "reflect_every zero", "reflect_every: 6", "reflect_every: 0",
             "crsec.reflect_every"),
      edited(MINI, "a billion conversation rounds", "max_rounds: 2",
             "max_rounds: 1000000000", "conversation.max_rounds"),
      _norms("utility above 100",
             "{content: No smoking indoors., type: injunctive, utility: 101}",
             "agents[0].initial_norms[0].utility"),
      _norms("utility zero",
             "{content: No smoking indoors., type: injunctive, utility: 0}",
             "agents[0].initial_norms[0].utility"),
      _norms("utility as text",
             "{content: No smoking indoors., type: injunctive, utility: high}",
             "agents[0].initial_norms[0].utility"),
      _norms("an unknown norm type",
             "{content: No smoking indoors., type: normative, utility: 90}",
             "agents[0].initial_norms[0].type"),
      edited(MINI, "an unknown behaviour under complies",
             "complies: [smoking_outside]", "complies: [smoking_outdoors]",
             "target_norms[0].complies[0]"),
      edited(MINI, "an unknown behaviour under violates", "violates: [loud]",
             "violates: [noisy]", "target_norms[1].violates[0]"),
      edited(MINI, "an unknown behaviour in an occasion",
             "behaviours: [tipped, refused_tip]", "behaviours: [tipped, stiffed]",
             "occasions[0].behaviours[1]"),
      edited(MINI, "a behaviour that complies and violates",
             "violates: [refused_tip]", "violates: [tipped]",
             "target_norms[2].violates[0]"),
      edited(MINI, "a target norm without behaviours",
             "    complies: [quiet]\n    violates: [loud]\n", "", "target_norms[1]"),
      edited(MINI, "a duplicate agent name", "- name: Tom Gomez",
             "- name: Carlos Gomez", "agents[2].name"),
      edited(MINI, "a duplicate agent name in other case", "- name: Tom Gomez",
             "- name: carlos gomez", "agents[2].name"),
      edited(MINI, "a duplicate behaviour id", "{id: quiet,", "{id: loud,",
             "behaviours[3].id"),
      edited(MINI, "a duplicate target norm id", "- id: tip_after_meals",
             "- id: no_smoking_indoors", "target_norms[2].id"),
      _occasion("a duplicate occasion id",
                '  - {id: bill, at: "09:45", situation: The bill again.}\n',
                "occasions[1].id"),
      _occasion("an occasion for an unknown agent", "    agents: [Tom Gomes]\n",
                "occasions[0].agents[0]"),
      edited(MINI, "an unknown field in a situation", "the bill for the",
             "the {waiter} with the bill for the", "occasions[0].situation"),
      edited(MINI, "an unknown field in a question", "do about the bill",
             "do about {name}'s bill", "occasions[0].question"),
      edited(MINI, "an unknown role", "    role: ordinary",
             "    role: customer", "agents[1].role"),
      edited(MINI, "an unknown target norm type", "type: descriptive",
             "type: habitual", "target_norms[2].type"),
      edited(MINI, "a name with a colon", "- name: Carlos Gomez",
             '- name: "Carlos: poet"', "agents[1].name"),
      edited(MINI, "a name with ' and '", "- name: Tom Gomez",
             "- name: Tom and Jerry", "agents[2].name"),
      edited(MINI, "a name with quotes", "- name: Tom Gomez",
             "- name: 'Tom \"the voice\" Gomez'", "agents[2].name"),
      edited(MINI, "a scenario name that climbs directories",
             "name: hobbs_cafe_mini", "name: ../../../tmp/escaped", "name"),
      edited(MINI, "a scenario name with backslashes", "name: hobbs_cafe_mini",
             r"name: '..\..\escaped'", "name"),
      edited(MINI, "a scenario name that is a dot", "name: hobbs_cafe_mini",
             "name: '.'", "name"),
      edited(MINI, "a scenario name of 300 characters", "name: hobbs_cafe_mini",
             "name: " + "x" * 300, "name"),
      edited(MINI, "an agent name of 300 characters", "- name: Abigail Chen",
             "- name: " + "Abigail " * 37 + "Chen", "agents[0].name"),
      edited(MINI, "a setting on several lines", "setting: Hobbs Cafe,",
             "setting: |\n  Hobbs Cafe\n  on two lines,", "setting"),
      edited(MINI, "a behaviour id with spaces", "{id: smoking_indoors,",
             "{id: Smoking Indoors,", "behaviours[0].id"),
      edited(MINI, "a misspelt key", "    persona: >-\n      Abigail",
             "    persnoa: >-\n      Abigail", "agents[0].persnoa"),
      edited(MINI, "a module switch that is not a boolean", "synthesis: true",
             "synthesis: sometimes", "crsec.modules.synthesis"),
      reshaped(MINI, "no agents", _set(("agents",), []), "agents"),
      reshaped(MINI, "no behaviours", _set(("behaviours",), []), "behaviours"),
      reshaped(MINI, "an empty persona", _set(("agents", 0, "persona"), ""),
               "agents[0].persona"),
      reshaped(MINI, "a premise of blanks", _set(("premise",), "   "), "premise"),
      edited(FULL, "full cafe: a duplicate tenth agent", "- name: Wolfgang Schulz",
             "- name: Abigail Chen", "agents[9].name"),
      edited(FULL, "full cafe: max_steps beyond two days", FULL_CLOCK,
             FULL_CLOCK + "\nmax_steps: 85", "max_steps"),
      edited(FULL, "full cafe: lunch bill after closing", 'at: "13:00"',
             'at: "17:00"', "occasions[1].at"),
      edited(MINI, "a tie to an unknown agent", CLOCK, CLOCK + "\nnetwork: "
             "{edges: [[Abigail Chen, Tom Gomes]]}", "network.edges[0][1]"),
      edited(MINI, "a ring wider than the agents", CLOCK,
             CLOCK + "\nnetwork: {generator: ring, k: 6}", "network.k"),
      edited(MINI, "an unknown network generator", CLOCK,
             CLOCK + "\nnetwork: {generator: lattice}", "network.generator"),
      edited(MINI, "an interview after the last slot", CLOCK,
             CLOCK + "\ninterviews: [{at: [9], questions: rules}]",
             "interviews[0].at[0]"),
  ]


def all_mutants() -> list[Mutant]:
  """Every malformed scenario: file-level, field-level and semantic."""
  mutants = (syntax_mutants(MINI) + schema_mutants(MINI, Scenario)
             + semantic_mutants())
  names = [m.name for m in mutants]
  assert len(names) == len(set(names)), "mutant names must be unique"
  return mutants


# -- the judge -----------------------------------------------------------------


class ModelStarted(BaseException):
  """A tripwire fired: something tried to start a model. A BaseException so
  that no `except Exception` on the way hides it."""


@contextlib.contextmanager
def tripwires(fired: list[str]) -> Iterator[None]:
  """Everything that starts a model (or Ray, for `crsec sweep`) records
  itself in `fired` and raises.

  The class methods are patched (not the module functions a caller may have
  imported by name), and `xllamacpp` is a stub, so no path to llama.cpp or
  the embedder is left open.
  """
  def trip(what: str):
    def fire(*args: Any, **kwargs: Any) -> Any:
      del args, kwargs
      fired.append(what)
      raise ModelStarted(what)
    return fire

  class Stub(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
      return trip(f"xllamacpp.{name}")

  with contextlib.ExitStack() as stack:
    for target, name in ((embedded.EmbeddedServer, "start"),
                         (embedded, "ensure_model_file"),
                         (embedded, "shared_server"),
                         (OpenAICompatibleModel, "__init__"),
                         (MiniLMEmbedder, "__init__"),
                         (RayBackend, "__init__")):
      stack.enter_context(mock.patch.object(
          target, name, trip(f"{getattr(target, '__name__', target)}.{name}")))
    stack.enter_context(mock.patch.dict(sys.modules,
                                        {"xllamacpp": Stub("xllamacpp")}))
    yield


@dataclasses.dataclass
class Outcome:
  """How one command met one mutant; `faults` empty means rejected cleanly."""
  mutant: Mutant
  command: str
  code: int | None
  stderr: str
  faults: list[str]


_LINE = re.compile(r"(?P<source>.+?)(?::(?P<line>\d+))?: (?P<rest>.+)")


def line_faults(stderr: str, source: str, where: str | None) -> list[str]:
  """What is wrong with a rejection's stderr for the file at `source`."""
  faults = []
  if "Traceback" in stderr:
    faults.append("a traceback")
  lines = stderr.rstrip("\n").split("\n") if stderr.strip() else []
  if not lines:
    return faults + ["nothing on stderr"]
  if not lines[0].startswith("crsec: "):
    faults.append(f"the first line lacks `crsec: `: {lines[0][:120]!r}")
  lines[0] = lines[0].removeprefix("crsec: ")
  for line in lines:
    m = _LINE.fullmatch(line)
    if not line.startswith(f"{source}:") or not m or m["source"] != source:
      faults.append(f"a line not about {source}: {line[:160]!r}")
    elif not re.search(r"; \S", m["rest"]):
      faults.append(f"a line without a fix: {line[:160]!r}")
  if where and not any(f": {where}: " in line or line.endswith(f": {where}")
                       for line in lines):
    faults.append(f"no line names {where}: {stderr[:300]!r}")
  return faults


@contextlib.contextmanager
def _clean_environment(cache: Path) -> Iterator[None]:
  """No endpoint settings of the developer's; the cache in `cache`."""
  saved = dict(os.environ)
  for key in list(os.environ):
    if key.startswith(("CRSEC_", "OPENAI_")):
      del os.environ[key]
  os.environ["CRSEC_CACHE_DIR"] = str(cache)
  try:
    yield
  finally:
    os.environ.clear()
    os.environ.update(saved)


def reject(mutant: Mutant, command: str = "run") -> Outcome:
  """Runs `crsec COMMAND FILE` (run, compare or sweep) in this process on
  the default (embedded) model, in an empty working directory, and judges
  the rejection."""
  with tempfile.TemporaryDirectory(prefix="crsec-fuzz-") as tmp:
    root = Path(tmp)
    work, cache, inputs = root / "work", root / "cache", root / "in"
    for d in (work, cache, inputs):
      d.mkdir()
    path = mutant.write(inputs)
    argv = [command, str(path)] + (["--seeds", "1"] if command == "compare" else [])
    out, err, fired, faults = io.StringIO(), io.StringIO(), [], []
    code: int | None = None
    cwd = os.getcwd()
    os.chdir(work)
    try:
      with _clean_environment(cache), tripwires(fired), \
          contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    except SystemExit as e:
      code = e.code if isinstance(e.code, int) else 1
    except ModelStarted:
      pass
    except Exception:  # pylint: disable=broad-except
      faults.append("an uncaught exception: " + traceback.format_exc(limit=-3))
    finally:
      os.chdir(cwd)
    if fired:
      faults.append(f"a model was started: {', '.join(fired)}")
    if code != 2:
      faults.append(f"exit code {code}, not 2")
    if out.getvalue():
      faults.append(f"stdout not empty: {out.getvalue()[:200]!r}")
    faults += line_faults(err.getvalue(), str(path), mutant.where)
    left = sorted(str(p.relative_to(root)) for d in (work, cache)
                  for p in d.rglob("*"))
    if left:
      faults.append(f"files left behind: {', '.join(left[:5])}")
    return Outcome(mutant, command, code, err.getvalue(), faults)

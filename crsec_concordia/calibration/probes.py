"""A venue's labelled judgement cases, read and checked against its scenario.

What a run measures rests on judgements the model makes: the referee's
behaviour tags, an occasion's focused check and DetectConflict. Each venue
carries cases labelled as a fair judge would answer them, in a file beside
its scenario (`<name>.probes.yaml`: the shipped venues' in the package, so
an installed `crsec calibrate` can measure any model on them; held-out
venues keep `<name>.yaml` beside `<name>.probes.yaml` in a folder of their
own). A label naming a behaviour the scenario lacks would count a right
answer wrong without saying why, so a file is checked against the scenario
it labels before anything is asked, every problem on a line of its own.
The cases are test data: nothing of them reaches a prompt of the product.
"""

from __future__ import annotations

from pathlib import Path

import pydantic
import yaml

from crsec_concordia.errors import UserError
from crsec_concordia.scenarios import Scenario, builtin_names, builtin_path

SECTIONS = ("referee", "occasion", "conflicts")
SUFFIX = ".probes.yaml"


class Case(pydantic.BaseModel):
  """An action and the behaviour ids a fair referee sees in it."""
  model_config = pydantic.ConfigDict(extra="forbid", str_strip_whitespace=True)
  actor: str
  action: str
  behaviours: list[str]
  # Where the action happens, as a fair referee's place field says it:
  # indoors or outdoors, or one of the places the venue declares. Checked
  # only where the file names it.
  place: str | None = None
  # Where the actor is when acting, told to the referee as a run tells it
  # (a venue that declares places); by default the actor's home.
  at: str | None = None


class OccasionCases(pydantic.BaseModel):
  """Answers to one occasion that names behaviours, labelled."""
  model_config = pydantic.ConfigDict(extra="forbid")
  id: str
  answers: list[Case]


class ConflictCase(pydantic.BaseModel):
  """One behaviour against one norm the observer holds: a breach or not.

  `intention`: a deed only meant or begun ("sits down to start ...",
  "picks up ... to use it"), which breaks nothing yet; its false alarms are
  counted apart from the other non-breaches."""
  model_config = pydantic.ConfigDict(extra="forbid", str_strip_whitespace=True)
  norm: str
  actor: str
  action: str
  breaks: bool
  intention: bool = False
  # Where the observer sees it (the event's place in a run); by default the
  # scenario's default place.
  place: str | None = None


class Probes(pydantic.BaseModel):
  """A venue's labelled cases (scenarios/<name>.probes.yaml)."""
  model_config = pydantic.ConfigDict(extra="forbid")
  referee: list[Case] = []
  occasion: OccasionCases | None = None
  conflicts: list[ConflictCase] = []

  def only(self, sections: list[str] | None) -> "Probes":
    """These sections of the cases, the others left out (None: all): a
    change to one judgement measured in minutes, not the whole quarter
    hour."""
    if not sections:
      return self
    return Probes(**{k: getattr(self, k) for k in SECTIONS
                     if k in sections})


def probes_path(scenario: Scenario) -> Path:
  """The file beside the scenario's own (a built-in's for one built from a
  dict)."""
  source = scenario.source_path or builtin_path(scenario.name)
  return source.with_name(source.name.removesuffix(".yaml") + SUFFIX)


def probed_venues() -> list[str]:
  """The shipped scenarios that have a probe file, by name."""
  return [name for name in builtin_names()
          if probes_path_of(builtin_path(name)).is_file()]


def probes_path_of(scenario_file: Path) -> Path:
  """`<name>.probes.yaml` beside `<name>.yaml`."""
  return scenario_file.with_name(scenario_file.name.removesuffix(".yaml")
                                 + SUFFIX)


def venues_in(folder: Path) -> list[tuple[Path, Path]]:
  """The venues of a folder laid out as the held-out ones are: (scenario
  file, probe file), by name, each scenario with its probe file."""
  return [(path, probes_path_of(path))
          for path in sorted(Path(folder).glob("*.yaml"))
          if not path.name.endswith(SUFFIX)]


def load_probes(path: Path, scenario: Scenario) -> Probes:
  """The cases of `path`, checked against the scenario they label (a
  UserError with one line per problem)."""
  try:
    probes = Probes.model_validate(yaml.safe_load(path.read_text("utf-8")))
  except OSError as e:
    raise UserError(f"{path}: cannot be read ({e.strerror}); write the "
                    f"scenario's cases there or pass --probes FILE") from None
  except (yaml.YAMLError, pydantic.ValidationError) as e:
    first = str(e).splitlines()[0]
    example = probes_path_of(builtin_path("hobbs_cafe_mini"))
    raise UserError(f"{path}: not a probe file ({first}); see "
                    f"{example}") from None
  problems = _problems(probes, scenario)
  if problems:
    raise UserError("\n".join(f"{path}: {p}" for p in dict.fromkeys(problems)))
  return probes


def _problems(probes: Probes, scenario: Scenario) -> list[str]:
  """What in the cases does not fit the scenario, one line each."""
  known = set(scenario.behaviour_ids)
  # A venue that declares no places has indoors and outdoors.
  places = [p.id for p in scenario.places]
  where = " or ".join(places) if len(places) < 3 else (
      f"a place of {scenario.name} ({', '.join(places)})")
  problems = []
  cases = [*probes.referee, *(probes.occasion.answers if probes.occasion
                                else [])]
  for case in [*cases, *probes.conflicts]:
    for said in (case.place, getattr(case, "at", None)):
      if said not in (None, *places):
        problems.append(f"place {said!r} is not {where}")
    if case.actor not in scenario.agent_names:
      problems.append(f"{case.actor!r} is not an agent of {scenario.name}")
  for case in cases:
    problems += [f"{b!r} is not a behaviour of {scenario.name}"
                 for b in case.behaviours if b not in known]
  problems += [f"{case.action!r} is an intention that breaks its norm: an "
               "intention breaks nothing yet (set breaks: false)"
               for case in probes.conflicts if case.intention and case.breaks]
  if probes.occasion is not None:
    occasion = next((o for o in scenario.occasions
                     if o.id == probes.occasion.id), None)
    if occasion is None or not occasion.behaviours:
      problems.append(f"{scenario.name} has no occasion {probes.occasion.id!r} "
                      "naming behaviours")
    else:
      problems += [f"{b!r} is not a behaviour of occasion {occasion.id}"
                   for case in probes.occasion.answers for b in case.behaviours
                   if b not in occasion.behaviours]
  return problems

"""The scenario file: its pydantic models, and a loader that explains itself.

A scenario is the whole set-up of an episode (who sits in the café, the
clock, the behaviours the game master adjudicates, the norms the metrics
measure). A mistake in it can waste a run that takes hours on a CPU, so the
file is checked completely before anything starts and every problem is
reported at once, one line each, in the form editors and people both read:

  bad.yaml:14: agents[2].initial_norms[0].utility: 140 is out of range; use a whole number from 1 to 100

The line number comes from the YAML node tree (the same parse that produced
the data), walked along the pydantic error location.

The parts, each a module of this folder: problems.py (a problem and its
line, ScenarioError), checks.py (the field types and the checks across
fields; place_checks.py those of place ids), explain.py (a pydantic error
as a problem with a fix), yaml_reading.py (reading the YAML safely),
base.py (what every model shares), places.py, population.py, network.py,
interview_block.py, interventions.py, occasions.py and models_block.py (the
blocks' models). This module holds the other models and the loading.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any

import pydantic
import yaml
from pydantic_core import PydanticCustomError

from crsec_concordia.observations import Stamp
from crsec_concordia.scenarios.base import InitialNorm, ScenarioModel
from crsec_concordia.scenarios.checks import (
    ClockTime, Days, Ident, InitialNormCount, Line, Minutes, Name, NormType,
    Positive, Role, Rounds, ScenarioName, Text, Threshold,
    cross_check, minutes_of)
from crsec_concordia.scenarios.explain import explain
from crsec_concordia.scenarios.interview_block import ScheduledInterview
from crsec_concordia.scenarios.interventions import Intervention, slot_of
from crsec_concordia.scenarios.network import Network, filled
from crsec_concordia.scenarios.occasions import Occasion
from crsec_concordia.scenarios.places import (Perception, Place, legacy_places,
                                              listed_places)
from crsec_concordia.scenarios.population import Population
from crsec_concordia.scenarios.population_draw import expand
from crsec_concordia.scenarios.problems import (DESIGN_DOC, Problem,
                                                ScenarioError, path_text)
from crsec_concordia.scenarios.yaml_reading import duplicate_keys, read_yaml

HERE = Path(__file__).resolve().parent

# -- the models ----------------------------------------------------------------


class Clock(ScenarioModel):
  """Simulated time. Step 1 is at `start` on day 1; a day has
  ceil((end - start) / minutes_per_step) steps, each starting before `end`."""
  start: ClockTime
  end: ClockTime
  minutes_per_step: Minutes
  days: Days = 1

  @property
  def steps_per_day(self) -> int:
    span = minutes_of(self.end) - minutes_of(self.start)
    return max(1, math.ceil(span / self.minutes_per_step))


class Conversation(ScenarioModel):
  max_rounds: Rounds = 2  # Rounds of two utterances.


class Modules(ScenarioModel):
  """Which CRSEC modules a normative agent runs (for ablations)."""
  communication: bool = True
  observation: bool = True
  immediate_evaluation: bool = True
  synthesis: bool = True
  compliance: bool = True


class Crsec(ScenarioModel):
  initial_norm_count: InitialNormCount = 5
  synthesis_threshold: Threshold = 350
  reflect_every: Threshold = 6  # Own observations of others between Reflects.
  modules: Modules = pydantic.Field(default_factory=Modules)


class Agent(ScenarioModel):
  """One agent. Without `initial_norms`, an entrepreneur's are written by
  CreateNorm at the start and an ordinary agent starts with none. `home`:
  the place it starts in (default: the scenario's `default_place`).
  `group`: the population group it was drawn into (or one a hand-written
  agent names); `committed`: the norms it starts with are never revised or
  dropped (components/norm_memory.py)."""
  OPTIONAL_KEYS = frozenset({"home", "group", "committed"})
  name: Name
  role: Role
  persona: Text
  preferences: dict[str, str] = pydantic.Field(default_factory=dict)
  initial_norms: list[InitialNorm] | None = None
  goal: Text | None = None
  home: Ident | None = None
  group: Ident | None = None
  committed: bool = False

  @property
  def is_entrepreneur(self) -> bool:
    return self.role == "entrepreneur"


class Behaviour(ScenarioModel):
  id: Ident
  description: Text


class TargetNorm(ScenarioModel):
  """A norm the metrics look for; its behaviours say what complying means."""
  id: Ident
  text: Text
  type: NormType
  complies: list[str] = pydantic.Field(default_factory=list)
  violates: list[str] = pydantic.Field(default_factory=list)
  # Other wordings of the same norm, for the metrics' matcher: agents phrase
  # a norm many ways, and one reference sentence misses long or hedged ones.
  aliases: list[Line] = pydantic.Field(default_factory=list)


class Scenario(ScenarioModel):
  """A validated scenario. Build it with `load_scenario` or `from_dict`.

  `places` is always the list of places: the file's, or, when it declares
  none, the two of `legacy_places()` (then left out of a dump, as the file
  left them out; `declares_places` says which).
  """
  OPTIONAL_KEYS = frozenset("places perception population network "
                            "interviews interventions models".split())
  name: ScenarioName
  premise: Text
  setting: Line
  places: Annotated[list[Place], pydantic.Field(min_length=1)] = None  # type: ignore[assignment]
  # Where people are unless an action says otherwise; the referee gives
  # this place to an action that names none (game_masters/referee.py).
  default_place: Ident | None = None
  perception: Perception = pydantic.Field(default_factory=Perception)
  clock: Clock
  max_steps: Positive | None = None
  conversation: Conversation = pydantic.Field(default_factory=Conversation)
  crsec: Crsec = pydantic.Field(default_factory=Crsec)
  agents: Annotated[list[Agent], pydantic.Field(min_length=1)]
  behaviours: Annotated[list[Behaviour], pydantic.Field(min_length=1)]
  target_norms: list[TargetNorm] = pydantic.Field(default_factory=list)
  occasions: list[Occasion] = pydantic.Field(default_factory=list)
  # The block that drew the last `population.count` agents (drawn: true
  # once they are in `agents`; population_draw.py).
  population: Population | None = None
  network: Network | None = None  # Who is tied to whom (network.py).
  interviews: list[ScheduledInterview] = pydantic.Field(default_factory=list)
  interventions: list[Intervention] = pydantic.Field(default_factory=list)
  models: Any = None  # Models by role (models_block.py checks them).

  _source_path: Path | None = pydantic.PrivateAttr(default=None)
  _declared: bool = pydantic.PrivateAttr(default=True)

  @pydantic.model_validator(mode="before")
  @classmethod
  def _drawn(cls, data: Any) -> Any:
    """A `population:` block becomes agents (population_draw.py); the
    loader draws them itself first, with a location for every problem."""
    expansion = expand(data)
    if expansion.problems:
      raise PydanticCustomError(
          "population", "{problems}",
          {"problems": "; ".join(f"{path_text(p.loc)}: {p.what}"
                                 for p in expansion.problems)})
    return filled(expansion.data)

  @pydantic.model_validator(mode="after")
  def _consistent(self) -> "Scenario":
    if self.places is None:
      # Frozen, and a field: set once here, before anyone reads it.
      object.__setattr__(self, "places", legacy_places())
      self._declared = False
    # `load_scenario` reports these itself, with a precise location each;
    # this keeps a Scenario built any other way just as consistent.
    if problems := cross_check(self.model_dump()):
      raise PydanticCustomError(
          "cross_check", "{problems}",
          {"problems": "; ".join(f"{path_text(p.loc)}: {p.what}" for p in problems)})
    return self

  def _left_out(self) -> set[str]:
    left = super()._left_out()
    return left | {"places"} if not self._declared else left - {"places"}

  # -- building ----------------------------------------------------------------

  @classmethod
  def from_dict(cls, data: Any, source: str = "<dict>") -> "Scenario":
    """Validates plain data (e.g. a run's scenario.json); no line numbers."""
    return _validate(data, None, source)

  def to_dict(self) -> dict[str, Any]:
    """JSON-ready, defaults filled in and `max_steps` resolved."""
    data = self.model_dump(mode="json")
    data["max_steps"] = self.total_steps
    return data

  def with_max_steps(self, max_steps: int) -> "Scenario":
    """A copy that runs `max_steps` steps (validated like the file's value)."""
    data = {**self.model_dump(mode="json"), "max_steps": max_steps}
    copy = _validate(data, None, str(self._source_path or self.name))
    copy._source_path = self._source_path  # pylint: disable=protected-access
    return copy

  # -- reading -----------------------------------------------------------------

  @property
  def source_path(self) -> Path | None:
    """The file it was loaded from (None when built from a dict)."""
    return self._source_path

  @property
  def steps_per_day(self) -> int:
    return self.clock.steps_per_day

  @property
  def total_steps(self) -> int:
    return self.max_steps or self.clock.days * self.clock.steps_per_day

  def stamp_for(self, step: int) -> Stamp:
    """The simulated time of `step` (1-based): step 1 is day 1 at clock.start;
    when a day's steps are used up the next step is at start of the next day."""
    if step < 1:
      raise ValueError(f"steps count from 1, not {step}")
    day, index = divmod(step - 1, self.clock.steps_per_day)
    minutes = minutes_of(self.clock.start) + index * self.clock.minutes_per_step
    return Stamp(day=day + 1, clock=f"{minutes // 60:02d}:{minutes % 60:02d}",
                 step=step)

  def intervention_slot(self, intervention: Intervention) -> int:
    """Its slot (one past a run's `max_steps` never happens)."""
    return slot_of(intervention.at, intervention.day, self.clock.days *
                   self.clock.steps_per_day, self.stamp_for) or 0

  def is_day_start(self, step: int) -> bool:
    """Whether `step` is the first of a day (when agents plan their day)."""
    return (step - 1) % self.clock.steps_per_day == 0

  @property
  def agent_names(self) -> list[str]:
    return [a.name for a in self.agents]

  def agent(self, name: str) -> Agent:
    for a in self.agents:
      if a.name == name:
        return a
    raise KeyError(f"no agent {name!r} in scenario {self.name!r}; "
                   f"agents: {', '.join(self.agent_names)}")

  @property
  def groups(self) -> list[str]:
    """The groups agents belong to, in the order first met."""
    return list(dict.fromkeys(a.group for a in self.agents if a.group))

  @property
  def declares_places(self) -> bool:
    """Whether the file names its places (False: the legacy two)."""
    return self._declared

  @property
  def place_ids(self) -> list[str]:
    return [p.id for p in self.places]

  def place(self, place_id: str) -> Place:
    for p in self.places:
      if p.id == place_id:
        return p
    raise KeyError(f"no place {place_id!r}; ids: {', '.join(self.place_ids)}")

  @property
  def start_place(self) -> str:
    """Where an agent with no home starts, and where an action not
    adjudicated happens in a scenario without declared places."""
    return self.default_place or self.places[0].id

  def home_of(self, name: str) -> str:
    """The place agent `name` starts in."""
    return self.agent(name).home or self.start_place

  @property
  def entrepreneurs(self) -> list[Agent]:
    return [a for a in self.agents if a.is_entrepreneur]

  @property
  def behaviour_ids(self) -> list[str]:
    return [b.id for b in self.behaviours]

  def behaviour(self, behaviour_id: str) -> Behaviour:
    for b in self.behaviours:
      if b.id == behaviour_id:
        return b
    raise KeyError(f"no behaviour {behaviour_id!r}; ids: "
                   f"{', '.join(self.behaviour_ids)}")

  def target_norm(self, norm_id: str) -> TargetNorm:
    for t in self.target_norms:
      if t.id == norm_id:
        return t
    raise KeyError(f"no target norm {norm_id!r}; ids: "
                   f"{', '.join(t.id for t in self.target_norms)}")

  def entity_params(self, name: str) -> dict[str, Any]:
    """The prefab params of docs/design.md for agent `name` (plain JSON).

    `initial_norms` is None when CreateNorm should write them; `goal` is ""
    when the file gives none.
    """
    a = self.agent(name)
    # The places only where the file declares them: a scenario without
    # keeps its agents' params (and prompts) as they were. A town's are
    # those near the agent's home (MAX_LISTED_PLACES at most).
    places = ({"places": listed_places(self.places, self.home_of(name),
                                       self.start_place)}
              if self.declares_places else {})
    return {
        "name": a.name,
        "persona": a.persona,
        "role": a.role,
        "goal": a.goal or "",
        "initial_norm_count": self.crsec.initial_norm_count,
        "synthesis_threshold": self.crsec.synthesis_threshold,
        "reflect_every": self.crsec.reflect_every,
        "initial_norms": (None if a.initial_norms is None else
                          [n.model_dump(mode="json") for n in a.initial_norms]),
        "modules": self.crsec.modules.model_dump(mode="json"),
        "setting": self.setting,
        **places,
        # Only when true: an agent that is not committed has the params
        # (and config.json) it had before the key existed.
        **({"committed": True} if a.committed else {}),
    }


# -- validating and loading ----------------------------------------------------


def _validate(data: Any, root: yaml.Node | None, source: str) -> Scenario:
  expansion = expand(data)
  data = expansion.data
  problems: list[Problem] = list(expansion.problems)
  scenario = None
  try:
    scenario = Scenario.model_validate(data)
  except pydantic.ValidationError as e:
    errors = e.errors()
    problems += [explain(err, Scenario) for err in errors
                 if err["type"] != "cross_check"
                 # No agents is no problem while the block that draws
                 # them has its own.
                 and not (expansion.problems and tuple(err["loc"]) == ("agents",))]
    if not problems and not cross_check(data):
      # Only the model's own cross-check failed, on data the raw check
      # passed (should not happen): report it rather than hide it.
      problems += [Problem(err["loc"], err["msg"], DESIGN_DOC) for err in errors]
  problems += expansion.without_knock_ons(cross_check(data))
  if root is not None:
    problems += duplicate_keys(root)
  if problems:
    rendered = dict.fromkeys(p.render(source, root) for p in problems)
    raise ScenarioError([text for _, text in sorted(rendered, key=lambda r: r[0])])
  assert scenario is not None
  return scenario


def parse_scenario(text: str, source: str = "<string>") -> Scenario:
  """A scenario from YAML text; `source` names it in messages."""
  data, root = read_yaml(text, source)
  if data is None:
    raise ScenarioError([f"{source}:1: (top level): the file is empty; start from "
                         f"a built-in one, e.g. {builtin_path('hobbs_cafe_mini')}"])
  return _validate(data, root, source)


# -- files ---------------------------------------------------------------------


# A shipped venue's labelled judgement cases lie beside it
# (<name>.probes.yaml, crsec_concordia/calibration/probes.py): not a scenario.
PROBES_SUFFIX = ".probes.yaml"


def builtin_names() -> list[str]:
  """The scenarios shipped with the package."""
  return sorted(p.stem for p in HERE.glob("*.yaml")
                if not p.name.endswith(PROBES_SUFFIX))


def builtin_path(name: str) -> Path:
  """The YAML file of a built-in scenario, e.g. "hobbs_cafe_mini"."""
  stem = name[:-5] if name.endswith(".yaml") else name
  path = HERE / f"{stem}.yaml"
  if not re.fullmatch(r"[A-Za-z0-9_-]+", stem) or not path.is_file():
    raise ScenarioError([f"{name}: no built-in scenario by that name; use one of: "
                         f"{', '.join(builtin_names())}"])
  return path


# PyYAML reads about a megabyte a second; the full café is 10 KB.
MAX_FILE_BYTES = 1_000_000


def load_scenario(path_or_name: str | Path) -> Scenario:
  """Loads and validates a scenario file, or a built-in one by name.

  A path to an existing file wins over a built-in name. Raises ScenarioError
  listing every problem, one per line.
  """
  path = Path(path_or_name).expanduser()
  source = str(path_or_name)
  if path.is_dir():
    raise ScenarioError([f"{source}: is a directory; give a scenario .yaml file "
                         f"or a built-in name ({', '.join(builtin_names())})"])
  if not path.is_file():
    stem = path.name[:-5] if path.name.endswith(".yaml") else path.name
    if path.parent != Path(".") or stem not in builtin_names():
      raise ScenarioError([f"{source}: no such file or built-in scenario; give the "
                           "path of a .yaml file or one of: "
                           f"{', '.join(builtin_names())}"])
    path = builtin_path(stem)
    source = str(path)
  try:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:  # A wrong path (a log, a data set), not a scenario.
      raise ScenarioError([f"{source}: is {size / 1e6:.1f} MB, too big for a "
                           "scenario (they are a few KB); check that the path "
                           "is that of a scenario .yaml file"])
    text = path.read_text(encoding="utf-8")
  except UnicodeDecodeError as e:
    raise ScenarioError([f"{source}: is not UTF-8 text ({e.reason} at byte "
                         f"{e.start}); save it as UTF-8"]) from None
  except OSError as e:
    raise ScenarioError([f"{source}: cannot be read ({e.strerror}); check the "
                         "path and its permissions"]) from None
  scenario = parse_scenario(text, source)
  scenario._source_path = path.resolve()  # pylint: disable=protected-access
  return scenario

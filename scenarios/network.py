"""The `network:` block of a scenario file: who is tied to whom.

Places say who can meet; ties say who knows whom. A study of how a norm
spreads over a ring or a small world needs the second, as the
convention-formation studies do (docs/design.md, "Social ties"). The block
gives the edges by hand, or a generator of networkx (`ring`, `small_world`,
`scale_free`, `random`) with its parameters and a seed, over every agent
or the agents of some population groups, and says what the ties govern:
`talk: tied` lets an agent start a talk only with a neighbour in its place
(`place`, the default: anyone in its place), `attend: tied_first` puts
its neighbours' deeds first when it perceives more than it can hold.

Generated edges are a pure function of the generator, its parameters, the
seed and the agents' names in file order (network_checks.py); they are
written into the block (`edges`) before the scenario is validated, so
scenario.json records them and a run that reloads it checks that the
generator still gives the same. A scenario without the block dumps as
before.
"""

from __future__ import annotations

from typing import Annotated, Literal

import pydantic
from pydantic_core import PydanticCustomError

from crsec_concordia.scenarios.base import ScenarioModel
from crsec_concordia.scenarios.checks import Ident, Name, whole
from crsec_concordia.scenarios.network_checks import (  # noqa: F401
    MAX_DEGREE, filled, probability)


def _probability(value: object) -> float:
  found = probability(value)
  if found is None:
    raise PydanticCustomError("share", "is not a probability")
  return found


Probability = Annotated[float, pydantic.PlainValidator(_probability)]


class Network(ScenarioModel):
  """Ties between agents: `edges` by hand or from `generator`."""
  OPTIONAL_KEYS = frozenset({"generator", "k", "p", "m", "seed", "groups",
                             "attend"})
  edges: list[tuple[Name, Name]] | None = None
  generator: Literal["ring", "small_world", "scale_free", "random"] | None = None
  k: whole(2, MAX_DEGREE) | None = None  # ring, small_world: neighbours each
  p: Probability | None = None  # small_world: rewiring; random: each edge
  m: whole(1, MAX_DEGREE) | None = None  # scale_free: edges of a newcomer
  seed: whole(0) = 0
  groups: list[Ident] = pydantic.Field(default_factory=list)
  talk: Literal["place", "tied"] = "place"
  attend: Literal["all", "tied_first"] = "all"

  def neighbours(self) -> dict[str, frozenset[str]]:
    """Each tied agent's neighbours (an agent with none is left out)."""
    out: dict[str, set[str]] = {}
    for a, b in self.edges or ():
      out.setdefault(a, set()).add(b)
      out.setdefault(b, set()).add(a)
    return {name: frozenset(n) for name, n in out.items()}


def talk_ties(network: Network | None) -> dict[str, frozenset[str]] | None:
  """The neighbours that bound whom an agent may talk with (None: anyone
  in its place, as without a network)."""
  return None if network is None or network.talk != "tied" else (
      network.neighbours())


def attend_ties(network: Network | None) -> dict[str, frozenset[str]] | None:
  """The neighbours whose deeds an agent perceives first (None: by its
  norms and names alone, as without a network)."""
  return None if network is None or network.attend != "tied_first" else (
      network.neighbours())

"""The port: everything that crosses the boundary between an agent and its world.

A game master, a run's session, its engine and the metrics meet an agent
only here, never by reaching for its components by key: what it holds
(its norms, as the game master's perception reads them and as the run
snapshots them each slot), what it asks of the world (the talks it wants),
what it hands over (its records, drained each slot), its setup (the norms
it starts with), the DetectConflict questions it may share with other
agents, and what the world may give it (a norm taught, a notice told).
So an agent's inside can change without the game master or the run
changing with it, and any Concordia entity that offers a port can play in
a run (tests/test_port.py plays one with no CRSEC component inside).

An entity offers its port in either of two ways: it implements `AgentPort`
itself, or it holds a component under PORT_KEY that does (the prefabs add
`CrsecPort`, components/crsec_port.py). `port_of` finds it; an entity with
neither gets `NO_PORT`, which holds nothing, asks for nothing and hands
over nothing, and refuses a norm or a notice (so a stock Concordia agent
plays in a run, with no norms or records of its own).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from crsec_concordia import observations
from crsec_concordia.rundir.format import AGENT_KINDS, FAILURE

if TYPE_CHECKING:
  from crsec_concordia.operations.detect_conflict_sharing import SharedJudgements

PORT_KEY = "AgentPort"


class PortError(RuntimeError):
  """The agent cannot take what it was given through its port."""


@runtime_checkable
class AgentPort(Protocol):
  """What an agent shows and takes across its boundary with the world."""

  def held_norms(self) -> list[str]:
    """The contents of the norms it holds now (qualified), in the order its
    database lists them; [] if it holds none or keeps no norms."""

  def norm_snapshot(self) -> Mapping[str, Any] | None:
    """Its norm database as the run writes it to norms/ each slot
    (`NormDatabase.to_json()`); None if it keeps no norm database (then it
    has no entry in the snapshot)."""

  def talk_requests(self) -> list[dict[str, Any]]:
    """The conversations it asks for since the last call (cleared): each
    {"initiator", "partner", "topic", "norm", "norm_id", "behaviour",
    "step"} (game_masters/conversations.py holds them)."""

  def drain_records(self) -> list[dict[str, Any]]:
    """Its records since the last drain, in their fixed order (`record_order`:
    the same seed gives the same file whatever thread finished first)."""

  def act_reasons(self) -> list[str]:
    """Why it last asked the model for an action ([]: it keeps no reasons;
    the game master's records carry them: components/structured_act.py)."""

  def gate_counts(self) -> dict[str, int]:
    """What its similarity gates skipped so far, by gate
    (crsec_concordia/gate_tally.py: deeds judged against no norm, norms
    rejected unasked); {} if it has no such gate."""

  def set_up(self, stamp: observations.Stamp | None) -> None:
    """Makes the norms it starts with (CreateNorm for an entrepreneur),
    before the first slot, at `stamp` (that slot's time). Idempotent."""

  def detects_conflicts(self) -> bool:
    """Whether it judges the deeds it observes against its norms (its
    DetectConflict questions can be shared; it embeds what it sees)."""

  def share_judgements(self, shared: SharedJudgements | None) -> None:
    """Asks its DetectConflict questions through `shared`, once for all
    agents that hold them (None: alone). Ignored if it detects none."""

  def receive_norm(self, content: str, type: str, utility: int, *,  # pylint: disable=redefined-builtin
                   committed: bool = False,
                   stamp: observations.Stamp | None = None) -> str | None:
    """Takes a norm given from outside (an intervention): held qualified
    from now, committed or not, recorded as `taught`. Returns its id, or
    None if the agent keeps no norms (it was only told the rule)."""

  def receive_notice(self, text: str,
                     stamp: observations.Stamp | None = None) -> None:
    """Takes a notice it perceives (a sign, an announcement): it goes to
    its memory and is recorded as `notice`."""


# Within one slot of one agent: what happened first comes first.
KIND_ORDER = {kind: i for i, kind in enumerate(AGENT_KINDS)}


def record_order(record: Mapping[str, Any]) -> tuple:
  """The sort key of an agent's records within one drain (a stable sort):
  slot, kind in AGENT_KINDS's order, then content for failures (whose
  order between threads is not fixed otherwise)."""
  kind = str(record.get("kind"))
  tiebreak = (json.dumps(record, sort_keys=True, ensure_ascii=False)
              if kind == FAILURE else "")
  return (int(record.get("step") or 0), KIND_ORDER.get(kind, len(KIND_ORDER)),
          tiebreak)


class NoPort:
  """The port of an entity that offers none: it holds, asks for and hands
  over nothing, and takes nothing."""

  def held_norms(self) -> list[str]:
    return []

  def norm_snapshot(self) -> Mapping[str, Any] | None:
    return None

  def talk_requests(self) -> list[dict[str, Any]]:
    return []

  def drain_records(self) -> list[dict[str, Any]]:
    return []

  def act_reasons(self) -> list[str]:
    return []

  def gate_counts(self) -> dict[str, int]:
    return {}

  def set_up(self, stamp: observations.Stamp | None) -> None:
    del stamp

  def detects_conflicts(self) -> bool:
    return False

  def share_judgements(self, shared: SharedJudgements | None) -> None:
    del shared

  def receive_norm(self, content: str, type: str, utility: int, *,  # pylint: disable=redefined-builtin
                   committed: bool = False,
                   stamp: observations.Stamp | None = None) -> str | None:
    raise PortError("this agent offers no port: it cannot be taught a norm "
                    f"({content!r}); give it a component under {PORT_KEY!r}")

  def receive_notice(self, text: str,
                     stamp: observations.Stamp | None = None) -> None:
    raise PortError("this agent offers no port: it cannot be told a notice "
                    f"({text!r}); give it a component under {PORT_KEY!r}")


NO_PORT = NoPort()


# Whether a class implements AgentPort, by class: a run asks for every
# agent's port several times a slot, and a protocol's isinstance looks up
# each of its methods.
_IMPLEMENTS: dict[type, bool] = {}


def _implements(obj: Any) -> bool:
  known = _IMPLEMENTS.get(type(obj))
  if known is None:
    known = _IMPLEMENTS[type(obj)] = isinstance(obj, AgentPort)
  return known


def port_of(entity: Any) -> AgentPort:
  """The entity's port: the entity itself if it implements AgentPort, else
  its component under PORT_KEY, else NO_PORT (it takes part in a run as an
  agent with nothing to show or hand over). A component under PORT_KEY
  that does not implement AgentPort is a mistake: TypeError, naming it."""
  if _implements(entity):
    return entity
  components = getattr(entity, "get_all_context_components", None)
  component = (components() if callable(components) else {}).get(PORT_KEY)
  if component is None:
    return NO_PORT
  if not _implements(component):
    raise TypeError(f"{getattr(entity, 'name', entity)}'s component under "
                    f"{PORT_KEY!r} is a {type(component).__name__}, which "
                    "does not implement AgentPort (components/port.py)")
  return component

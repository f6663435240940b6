"""The port: the game master, the session and the engine meet agents only there.

A run whose agents are a third party's (a plain Concordia entity with no
CRSEC component inside, and a port of its own) gets a complete run
directory; the record kinds a run writes are those rundir/format.py
declares, and no component or game master writes a kind of its own; the
prefabs' ports take a norm and a notice.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from concordia.agents import entity_agent_with_logging
from concordia.components import agent as agent_components
from concordia.typing import entity_component
from concordia.typing import prefab as prefab_lib

from crsec_concordia import observations as obs
from crsec_concordia import prefabs
from crsec_concordia.components import (JOURNAL_KEY, NO_PORT, PORT_KEY,
                                        AgentPort, CrsecPort, PortError,
                                        port_of)
from crsec_concordia.norms import NormDatabase, Origin
from crsec_concordia.operations.names import APART_TAGS
from crsec_concordia.rundir import format as run_format
from tests import crsec_script as cs
from tests import test_runner as tr

ROOT = Path(__file__).resolve().parent.parent
STAMP = obs.Stamp(1, "09:10", 2)


# -- a third party's agent: a plain Concordia entity and its own port -----------

def _record(kind: str, name: str, stamp: obs.Stamp | None,
            **fields: Any) -> dict[str, Any]:
  return {"kind": kind, "agent": name, "step": stamp.step if stamp else 0,
          "time": stamp.time if stamp else None,
          "day": stamp.day if stamp else None,
          "clock": stamp.clock if stamp else None, **fields}


class OwnPort(entity_component.ContextComponent):
  """A port written without any CRSEC part: one rule held from the start,
  a talk asked of whoever smokes indoors (once), records of its own."""

  def __init__(self, rule: str | None):
    super().__init__()
    self._rule = rule
    self._lock = threading.Lock()
    self._db: NormDatabase | None = None
    self._requests: list[dict[str, Any]] = []
    self._records: list[dict[str, Any]] = []
    self._asked: set[str] = set()
    self._stamp: obs.Stamp | None = None

  def _name(self) -> str:
    return self.get_entity().name

  def pre_observe(self, observation: str) -> str:
    me = self._name()
    for event in obs.parse_all(observation):
      with self._lock:
        if self._stamp is None or event.stamp.step >= self._stamp.step:
          self._stamp = event.stamp
        if (self._rule and isinstance(event, obs.ActionObservation)
            and event.actor != me and "cigarette" in event.text
            and event.actor not in self._asked):
          self._asked.add(event.actor)
          self._requests.append({
              "initiator": me, "partner": event.actor, "topic": self._rule,
              "norm": self._rule, "norm_id": "n1", "behaviour": event.text,
              "step": event.stamp.step})
    return ""

  # The protocol.
  def held_norms(self) -> list[str]:
    with self._lock:
      return ([n.content for n in self._db.qualified()]
              if self._db is not None else [])

  def norm_snapshot(self) -> Mapping[str, Any] | None:
    with self._lock:
      return self._db.to_json() if self._db is not None else None

  def talk_requests(self) -> list[dict[str, Any]]:
    with self._lock:
      requests, self._requests = self._requests, []
    return requests

  def drain_records(self) -> list[dict[str, Any]]:
    with self._lock:
      records, self._records = self._records, []
    return records

  def act_reasons(self) -> list[str]:
    return []

  def gate_counts(self) -> dict[str, int]:
    return {}  # It embeds nothing: no gate skips anything.

  def set_up(self, stamp: obs.Stamp | None) -> None:
    with self._lock:
      if self._db is not None:
        return
      self._db = NormDatabase(self._name())
      if self._rule:
        norm = self._db.add(self._rule, "injunctive", 90,
                            origin=Origin.CREATED, qualified=True,
                            step=stamp.step if stamp else 0)
        self._records.append(_record(
            run_format.CREATED, self._name(), stamp, norm_id=norm.id,
            content=norm.content, type=norm.type, utility=norm.utility,
            accepted=True))

  def detects_conflicts(self) -> bool:
    return False

  def share_judgements(self, shared) -> None:
    del shared

  def receive_norm(self, content, type, utility, *, committed=False,  # pylint: disable=redefined-builtin
                   stamp=None):
    raise PortError("this agent takes no norms")

  def receive_notice(self, text, stamp=None) -> None:
    with self._lock:
      self._records.append(_record(run_format.NOTICE, self._name(), stamp,
                                   text=text))

  def get_state(self):
    with self._lock:
      return {"db": self._db.to_json() if self._db is not None else None,
              "requests": list(self._requests), "asked": sorted(self._asked)}

  def set_state(self, state):
    with self._lock:
      if state.get("db") is not None:
        self._db = NormDatabase(self._name())
        self._db.load_json(dict(state["db"]))
      self._requests = list(state.get("requests", []))
      self._asked = set(state.get("asked", []))


class OwnAct(entity_component.ActingComponent):
  """Acts from a fixed line; talks with a fixed line."""

  def __init__(self, action: str):
    super().__init__()
    self._action = action

  def get_action_attempt(self, contexts, action_spec) -> str:
    del contexts
    if action_spec.tag == obs.SPEECH_TAG:
      return "Please smoke outside, it bothers people."
    return self._action

  def get_state(self):
    return {}

  def set_state(self, state):
    del state


@dataclasses.dataclass
class OwnAgent(prefab_lib.Prefab):
  """A third party's agent prefab: Concordia's entity, its act, its port."""

  description: str = "A plain Concordia entity with a port of its own."
  params: Mapping[str, Any] = dataclasses.field(default_factory=dict)

  def build(self, model, memory_bank):
    del model
    name = self.params["name"]
    rule = "No smoking indoors." if self.params.get("role") == (
        "entrepreneur") else None
    return entity_agent_with_logging.EntityAgentWithLogging(
        agent_name=name, act_component=OwnAct(tr.TURNS[name]),
        # Concordia's simulation wants a memory of every player.
        context_components={
            PORT_KEY: OwnPort(rule),
            agent_components.memory.DEFAULT_MEMORY_COMPONENT_KEY:
                agent_components.memory.AssociativeMemory(
                    memory_bank=memory_bank)})


def test_a_third_partys_agents_play_a_complete_run(tmp_path, embedder,
                                                   monkeypatch):
  """The run path as it is (run_episode), its agents' prefab swapped in the
  Config's prefabs: nothing outside the agents reaches into them."""
  monkeypatch.setitem(prefabs.PREFABS, "normative__Entity", OwnAgent())
  model = tr.cafe()
  d = tr.run(tmp_path, embedder, model=model)
  info = tr.info(d)
  assert info["status"] == "completed" and info["completed_steps"] == 5
  config = json.loads((d / run_format.CONFIG_JSON).read_text())
  assert config["prefabs"]["normative__Entity"].endswith("OwnAgent")
  records = tr.records(d)
  actions = [r for r in records if r["kind"] == run_format.ACTION]
  assert sorted((a["step"], a["actor"]) for a in actions) == [
      (n, name) for n in range(1, 6) for name in sorted(tr.TURNS)]
  # The talk its port asked for was held (game_masters/conversations.py).
  [talk] = [r for r in records if r["kind"] == run_format.CONVERSATION]
  assert talk["initiator"] == "Abigail Chen" and talk["partner"] == (
      "Carlos Gomez")
  # Its setup and records went through the port, before slot 1's.
  [created] = [r for r in records if r["kind"] == run_format.CREATED]
  assert created["agent"] == "Abigail Chen" and created["step"] == 1
  assert {r["kind"] for r in records} <= set(run_format.KINDS)
  # Every agent with a database has it snapshotted each slot.
  assert sorted(p.name for p in (d / run_format.NORMS).iterdir()) == [
      run_format.norm_snapshot(n) for n in range(1, 6)]
  snapshot = tr.norms(d, 5)
  assert set(snapshot) == set(tr.TURNS)
  assert [n["content"] for n in snapshot["Abigail Chen"]["norms"]] == [
      "No smoking indoors."]
  usage = json.loads((d / run_format.USAGE_JSON).read_text())
  # Only the game master asked the model: no CRSEC operation ran.
  assert usage["by_tag"] and all(t.startswith("GM.") or t in APART_TAGS
                                 for t in usage["by_tag"])
  assert sorted(p.name for p in (d / run_format.CHECKPOINTS).iterdir()) == [
      "log.jsonl", "step_4_checkpoint.json", "step_5_checkpoint.json"]
  assert (d / run_format.EVENTS).is_file() and (d / run_format.LOG_HTML
                                                ).is_file()


def test_a_third_partys_crashed_run_resumes_to_the_same_end(
    tmp_path, embedder, monkeypatch):
  """Its port's state is in the checkpoints like any component's: resumed
  from slot 3, the run ends as the one played through."""
  monkeypatch.setitem(prefabs.PREFABS, "normative__Entity", OwnAgent())
  whole = tr.run(tmp_path, embedder, name="whole")
  crashed = tr._crashed_in_slot_4(tmp_path, embedder, monkeypatch)  # pylint: disable=protected-access
  assert tr.info(crashed)["completed_steps"] == 3
  tr.runner.resume_episode(crashed, model=tr.cafe(), embedder=embedder,
                           progress=False)
  assert tr.info(crashed)["status"] == "completed"
  tr.same_run(crashed, whole)


# -- record kinds: declared once, written as declared ---------------------------

@pytest.fixture(scope="module")
def both_arms(tmp_path_factory, embedder) -> dict[str, list[dict]]:
  """The scripted tiny café, in both arms (the normative one holds a talk)."""
  out = tmp_path_factory.mktemp("arms")
  return {arm: tr.records(tr.run(out, embedder, name=arm, arm=arm))
          for arm in ("normative", "baseline")}


def test_the_kinds_a_run_writes_are_the_declared_ones(both_arms):
  for arm, records in both_arms.items():
    kinds = {r["kind"] for r in records}
    assert kinds <= set(run_format.KINDS), (arm, kinds - set(
        run_format.KINDS))
  normative = {r["kind"] for r in both_arms["normative"]}
  assert {run_format.CONVERSATION, run_format.CONFLICT, run_format.CREATED,
          run_format.PLAN, run_format.ACTION, run_format.STEP} <= normative
  baseline = {r["kind"] for r in both_arms["baseline"]}
  assert baseline.isdisjoint({run_format.CREATED, run_format.CONFLICT,
                              run_format.CONVERSATION})


def _kind_literals(path: Path) -> list[str]:
  """Where `path` writes a record kind as a literal: a dict with "kind":
  "<literal>", or a record(...) / _record(...) call whose kind is one."""
  found = []
  for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
    if isinstance(node, ast.Dict):
      for key, value in zip(node.keys, node.values):
        if (isinstance(key, ast.Constant) and key.value == "kind"
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)):
          found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
          and node.func.attr in ("record", "_record") and node.args
          and isinstance(node.args[0], ast.Constant)
          and isinstance(node.args[0].value, str)):
      found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
  return found


def test_no_component_or_game_master_writes_a_kind_of_its_own():
  sources = [p for folder in ("components", "game_masters",
                              "crsec_concordia/runs")
             for p in sorted((ROOT / folder).rglob("*.py"))]
  assert len(sources) > 20
  literals = [hit for p in sources for hit in _kind_literals(p)]
  assert not literals, ("record kinds written as literals (use "
                        f"crsec_concordia/rundir/format.py): {literals}")


def test_the_boundaries_the_port_keeps():
  """game_masters never import the prefabs; components never import the
  game masters (their imports, read from the source)."""
  def imports(folder: str) -> set[str]:
    names = set()
    for path in (ROOT / folder).rglob("*.py"):
      for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
          names.add(node.module)
          names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
          names.update(a.name for a in node.names)
    return names
  assert not {n for n in imports("game_masters")
              if n.startswith("crsec_concordia.prefabs")}
  assert not {n for n in imports("components")
              if n.startswith("crsec_concordia.game_masters")}


# -- the prefabs' ports take a norm and a notice --------------------------------

def test_the_prefabs_offer_the_port():
  for arm in ("normative", "baseline"):
    agent = cs.build_agent(arm, cs.cafe_model())
    port = port_of(agent)
    assert isinstance(port, CrsecPort) and isinstance(port, AgentPort)
  plain = entity_agent_with_logging.EntityAgentWithLogging(
      agent_name="Plain", act_component=OwnAct("waits."),
      context_components={})
  assert port_of(plain) is NO_PORT and NO_PORT.drain_records() == []
  with pytest.raises(PortError, match=PORT_KEY):
    NO_PORT.receive_norm("Tip the staff.", "injunctive", 80)


def test_a_normative_agent_holds_a_norm_it_is_taught():
  agent = cs.build_agent("normative", cs.cafe_model())
  port = port_of(agent)
  assert port.held_norms() == []
  norm_id = port.receive_norm("Tip the staff after a meal.", "injunctive", 80,
                              committed=True, stamp=STAMP)
  assert port.held_norms() == ["Tip the staff after a meal."]
  [held] = port.norm_snapshot()["norms"]
  assert held["id"] == norm_id and held["origin"] == Origin.TAUGHT
  assert held["committed"] and held["step"] == STAMP.step
  [taught] = port.drain_records()
  assert taught["kind"] == run_format.TAUGHT and taught["norm_id"] == norm_id
  assert taught["step"] == STAMP.step and taught["committed"]
  # The act sees it among the agent's norms.
  assert "Tip the staff after a meal." in agent.get_component(
      "NormMemory").database.render_qualified()
  assert "a norm taught" in agent.get_component(JOURNAL_KEY).pop_news()
  uncommitted = port.receive_norm("Keep your voice down.", "injunctive", 60)
  assert not agent.get_component("NormMemory").database.get(
      uncommitted).committed


def test_a_notice_reaches_an_agents_observations_in_either_arm():
  for arm in ("normative", "baseline"):
    agent = cs.build_agent(arm, cs.cafe_model())
    port = port_of(agent)
    port.receive_notice("A sign by the door: smoking only on the terrace.",
                        stamp=STAMP)
    memory = agent.get_component("__memory__")
    # Concordia's memory takes what is added at the end of the agent's next
    # hook (`update`), as it takes the agent's observations.
    memory.update()
    memories = memory.get_all_memories_as_text()
    assert any("smoking only on the terrace" in m for m in memories), arm
    [notice] = port.drain_records()
    assert notice["kind"] == run_format.NOTICE, arm
    assert notice["text"].startswith("A sign by the door")


def test_a_baseline_agent_is_told_a_norm_but_holds_none():
  agent = cs.build_agent("baseline", cs.cafe_model())
  port = port_of(agent)
  assert port.receive_norm("Tip the staff.", "injunctive", 80) is None
  assert port.held_norms() == [] and port.norm_snapshot() is None
  assert port.talk_requests() == [] and not port.detects_conflicts()
  [taught] = port.drain_records()
  assert taught["kind"] == run_format.TAUGHT and taught["held"] is False
  # Told, it has a reason to act anew, as a normative agent taught has.
  assert agent.get_component("NormativePlanner").pop_news() == [
      "a norm taught"]
  memory = agent.get_component("__memory__")
  memory.update()
  assert any("was told a rule: Tip the staff." in m
             for m in memory.get_all_memories_as_text())


def test_an_older_checkpoint_restores_the_journal_it_kept_in_norm_memory():
  """A checkpoint from before the journal was a component of its own kept
  the records, news and time in NormMemory's state: they reach the journal."""
  agent = cs.build_agent("normative", cs.cafe_model())
  port = port_of(agent)
  agent.get_component(JOURNAL_KEY).note(obs.format_action(
      STAMP, "Tom Gomez", "indoors", "Tom reads a book."))
  port.receive_norm("Tip the staff.", "injunctive", 80)
  state = agent.get_state()
  components = dict(state["context_components"])
  journal = components.pop(JOURNAL_KEY)
  components["NormMemory"] = {**components["NormMemory"], **journal}
  twin = cs.build_agent("normative", cs.cafe_model())
  twin.set_state({**state, "context_components": components})
  assert port_of(twin).held_norms() == ["Tip the staff."]
  assert port_of(twin).drain_records() == port.drain_records()
  assert twin.get_component(JOURNAL_KEY).last_stamp == STAMP

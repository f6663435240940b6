"""A model's failed answers: one WARNING per operation per run, all recorded.

Under a model that cannot answer an operation's schema the operation fails
every time it is asked. Each failure is a record in the run and an entry on
the component's logging channel (Concordia's log); the Python log says so
once per operation, and the channel entry of that first failure carries
the same words.
"""

from __future__ import annotations

import copy
import logging

from concordia.associative_memory import basic_associative_memory

from crsec_concordia.components import JOURNAL_KEY, NORM_MEMORY_KEY, NORMATIVE_PLANNER_KEY
from crsec_concordia.prefabs import PREFABS
from tests import library_case


class JunkModel(library_case.UsersModel):
  """Answers every question with text that holds no JSON."""

  def sample_text(self, prompt: str, **kwargs) -> str:
    super().sample_text(prompt, **kwargs)
    return "I would rather not say."


def agent(arm: str, model, name: str):
  prefab = copy.deepcopy(PREFABS[f"{arm}__Entity"])
  prefab.params = {"name": name, "persona": "A poet.", "role": "entrepreneur",
                   "setting": "Hobbs Cafe"}
  return prefab.build(model, basic_associative_memory.AssociativeMemoryBank(
      sentence_embedder=library_case.plain_embedder))


def warnings(caplog) -> list[str]:
  return [r.getMessage() for r in caplog.records
          if r.levelno == logging.WARNING
          and r.name == "crsec_concordia.operations"]


def channel(entity, key: str) -> list[dict]:
  return [d for d in entity.measurements.get_channel(key)
          if d.get("Key") == "failure"]


def test_each_operation_is_told_once_per_run(caplog):
  model = JunkModel()
  agents = [agent("normative", model, n) for n in ("Ann Lee", "Bo Park")]
  for entity in agents:
    entity.act()
  told = warnings(caplog)
  assert [t.split(":")[0] for t in told] == ["CreateNorm", "NormativePlan",
                                             "Act"]
  assert all("further failures of this operation are recorded in the run "
             "but not logged again" in t for t in told)
  failures = [r for e in agents
              for r in e.get_component(JOURNAL_KEY).drain_records()
              if r["kind"] == "failure"]
  assert sorted(r["op"] for r in failures) == [
      "Act", "Act", "CreateNorm", "CreateNorm", "NormativePlan",
      "NormativePlan"]
  # Every failure reaches Concordia's log; the first of each operation
  # with the words of the warning.
  entries = [d for e in agents for d in channel(e, JOURNAL_KEY)]
  assert len(entries) == 6
  assert sorted(d["Summary"] for d in entries
                if d["Summary"] != "failure") == sorted(told)


def test_a_baseline_agent_tells_its_failures_too(caplog):
  model = JunkModel()
  entity = agent("baseline", model, "Cy Diaz")
  entity.act()
  entity.act()
  assert [t.split(":")[0] for t in warnings(caplog)] == ["DayPlan", "Act"]
  entries = channel(entity, NORMATIVE_PLANNER_KEY)
  assert [d["Value"]["op"] for d in entries] == ["DayPlan", "Act", "Act"]
  assert entries[0]["Summary"].startswith("DayPlan: the model's answer "
                                          "failed (no answer valid for the "
                                          "schema after 3 tries)")

"""The engine at scale: requests in flight bounded, no thread per agent.

A run sends at most the endpoint's `max_in_flight` requests at once (a fake
endpoint counts them), its records do not depend on the bound (a bound of
one and one of sixteen give the same run), and setting up and playing a
slot of a few hundred scripted agents uses a bounded number of threads, not
one per agent; a town's prompts list the places near an agent, a venue's
all its places. Speed and memory figures are bench/society_scaling.py
--town's, not these tests'.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from pathlib import Path

import pytest

from crsec_concordia import runner, threads
from crsec_concordia.game_masters.places import PlaceMap
from crsec_concordia.models import EndpointConfig, ScriptedModel
from crsec_concordia.models.config import DEFAULT_IN_FLIGHT
from crsec_concordia.scenarios import Scenario
from tests import schema_answers
from tests import test_runner as tr
from tests.fake_openai import Reply
from tests.test_slot_speed import hashed_embedder

FIRST = ("Ada", "Ben", "Cleo", "Dan", "Eva", "Finn", "Gia", "Hal")


def town(size: int, per_place: int = 4, slots: int = 2,
         holders: int = 2) -> Scenario:
  """`size` agents in places of `per_place`, a norm held in each place by
  `holders` of them."""
  places = [{"id": f"hall_{k}", "description": f"a shared hall, number {k}",
             "indoors": True} for k in range(-(-size // per_place))]
  agents = []
  for i in range(size):
    name = f"{FIRST[i % 8]} Abbott {i}"
    agent = {"name": name, "home": f"hall_{i // per_place}",
             "role": "entrepreneur" if i % per_place == 0 else "ordinary",
             "persona": f"{name} is a resident who reads the paper.",
             "goal": "spend the morning with neighbours"}
    if i % per_place < holders:
      agent["initial_norms"] = [{"content": "Keep your voice down.",
                                 "type": "injunctive", "utility": 80}]
    agents.append(agent)
  return Scenario.from_dict({
      "name": f"town_{size}", "premise": "A morning in a town of halls.",
      "setting": "A town of shared halls", "places": places,
      "default_place": "hall_0",
      "clock": {"start": "09:00", "end": "10:00", "minutes_per_step": 10,
                "days": 1},
      "max_steps": slots, "conversation": {"max_rounds": 1},
      "crsec": {"initial_norm_count": 2, "reflect_every": 6},
      "agents": agents,
      "behaviours": [{"id": "loud", "description": "speaks loudly"}],
      "target_norms": [{"id": "quiet", "text": "Keep your voice down.",
                        "type": "injunctive", "complies": [],
                        "violates": ["loud"]}],
  })


class Counting:
  """schema_answers' responder, each answer held a little while the
  requests being answered at once are counted."""

  def __init__(self, hold: float):
    self._plain = schema_answers.responder()
    self._hold = hold
    self._lock = threading.Lock()
    self.now = self.most = 0

  def __call__(self, request) -> Reply:
    with self._lock:
      self.now += 1
      self.most = max(self.most, self.now)
    try:
      time.sleep(self._hold)
      return self._plain(request)
    finally:
      with self._lock:
        self.now -= 1


def play(tmp_path: Path, name: str, scenario: Scenario, **kwargs) -> Path:
  return runner.run_episode(scenario, arm="normative", seed=1,
                            out_dir=tmp_path / name, cache=False,
                            progress=False, embedder=hashed_embedder,
                            **kwargs)


def endpoint(server, bound: int) -> EndpointConfig:
  return EndpointConfig(base_url=server.base_url, api_key="test",
                        model="fake-model", schema_mode="json_schema",
                        timeout=10.0, max_in_flight=bound)


def test_the_endpoint_never_sees_more_requests_at_once_than_the_bound(
    server, tmp_path):
  counting = Counting(hold=0.02)
  server.responder = counting
  run_dir = play(tmp_path, "bounded", town(12), endpoint=endpoint(server, 3))
  assert tr.info(run_dir)["status"] == "completed"
  assert len(server.chat_requests()) > 50
  assert counting.most == 3  # Reached, never passed.


def test_a_small_bound_gives_the_same_run_as_a_large_one(server, tmp_path):
  server.responder = Counting(hold=0.0)
  one = play(tmp_path, "one", town(12), endpoint=endpoint(server, 1))
  many = play(tmp_path, "many", town(12), endpoint=endpoint(server, 16))
  tr.same_run(one, many)
  assert len(tr.records(one)) > 40


def test_the_bound_defaults_by_endpoint_kind_and_flag(monkeypatch):
  monkeypatch.delenv("CRSEC_MAX_IN_FLIGHT", raising=False)
  assert EndpointConfig().in_flight == 4  # The embedded server's slots.
  remote = EndpointConfig.resolve(base_url="http://h/v1", model="m")
  assert remote.in_flight == DEFAULT_IN_FLIGHT
  seven = EndpointConfig.resolve(base_url="http://h/v1", model="m",
                                 max_in_flight=7)
  assert seven.in_flight == 7
  assert seven.describe()["max_in_flight"] == 7  # As run.json records it.
  monkeypatch.setenv("CRSEC_MAX_IN_FLIGHT", "9")
  assert EndpointConfig.resolve(base_url="http://h/v1",
                                model="m").in_flight == 9
  monkeypatch.setenv("CRSEC_MAX_IN_FLIGHT", "none")
  with pytest.raises(Exception, match="CRSEC_MAX_IN_FLIGHT 'none'"):
    EndpointConfig.resolve(base_url="http://h/v1", model="m")


def random_model(bound: int) -> ScriptedModel:
  """Schema-valid answers, each a function of its prompt only, from a
  model that says it serves `bound` requests at once."""
  def answer(prompt, schema):
    digest = hashlib.sha256(prompt.encode()).digest()
    return schema_answers.instance(
        schema, random.Random(int.from_bytes(digest[:8], "big")))
  model = ScriptedModel(fallback=answer)
  model.max_in_flight = bound
  return model


def test_hundreds_of_agents_make_no_thread_per_agent(tmp_path):
  size = 240
  seen = [threading.active_count()]
  done = threading.Event()

  def watch() -> None:
    while not done.wait(0.01):
      seen.append(threading.active_count())

  watcher = threading.Thread(target=watch, daemon=True)
  watcher.start()
  try:
    run_dir = play(tmp_path, "many", town(size, slots=1),
                   model=random_model(4))
  finally:
    done.set()
    watcher.join()
  actors = {r["actor"] for r in tr.records(run_dir) if r["kind"] == "action"}
  assert len(actors) == size
  # The agents' and the referee's pools (twice the bound each), the
  # shared background pool, and a few more: not one per agent.
  assert max(seen) < 2 * 8 + threads.DEFAULT_WORKERS + 30 < size


def test_a_towns_prompts_list_the_places_near_an_agent():
  """A town of 30 places lists 12 at most (home first in view, then the
  default place and the places seen from home); a venue of few lists all,
  as before."""
  places = [{"id": f"hall_{k}", "description": f"hall {k}", "indoors": True,
             "sees": [f"hall_{k + 1}"] if k < 29 else []} for k in range(30)]
  data = town(60, per_place=2).to_dict()
  data["places"] = places
  scenario = Scenario.from_dict(data)
  listed = [p["id"] for p in scenario.entity_params(
      scenario.agents[20].name)["places"]]
  assert listed == ["hall_0", "hall_9", "hall_10", "hall_11"]
  small = town(12)
  assert [p["id"] for p in small.entity_params(
      small.agents[11].name)["places"]] == ["hall_0", "hall_1", "hall_2"]
  # The referee's: near where the actor is, and the places its action names.
  assert PlaceMap.of(scenario).near("hall_10", ["hall_25", "hall_0"]) == [
      "hall_0", "hall_9", "hall_10", "hall_11", "hall_25"]


def test_shared_questions_of_more_holders_than_threads_do_not_wait_forever(
    server, tmp_path):
  # 80 holders of one rule in one room, on 2 agents' threads (a bound of
  # 1) and a background pool smaller than the holders: a shared question
  # waits for every holder's, so each is handed in while its holder
  # observes, and every agent observes before any acts.
  server.responder = Counting(hold=0.0)
  scenario = town(80, per_place=80, slots=2, holders=80)
  result: dict[str, Path] = {}
  worker = threading.Thread(target=lambda: result.update(run=play(
      tmp_path, "crowd", scenario, endpoint=endpoint(server, 1))),
      daemon=True)
  worker.start()
  worker.join(timeout=300)
  assert not worker.is_alive(), "the slot waited on itself"
  kinds = [r["kind"] for r in tr.records(result["run"])]
  assert tr.info(result["run"])["status"] == "completed"
  assert "conflict" in kinds

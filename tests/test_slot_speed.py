"""What a slot's speed-ups leave unchanged: the same run, record for record.

The prefabs build agents that run their hooks in their own thread
(prefabs.SlotAgent) and keep memories in a ListMemoryBank; the components
share parsed observations and the act's copy check; the runner checkpoints
with SlotSimulation. Each is checked against Concordia's own (or the
project's plain) way: whole runs with the scripted model give the same
records, norm snapshots, usage and prompts, and each piece alone gives the
same answers.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import types
from pathlib import Path

import numpy as np
import pytest
from concordia.agents import entity_agent_with_logging
from concordia.associative_memory import basic_associative_memory
from concordia.prefabs.simulation import generic as simulation_lib
from concordia.typing import entity_component

from crsec_concordia import observations, prefabs, repetition, runner
from crsec_concordia.prefabs import agent_parts
from crsec_concordia.components import _events
from crsec_concordia.embedding import warmer as _embedding_warmer
from crsec_concordia.components import _free_text as free_text
from crsec_concordia.components import _copies as copies
from crsec_concordia.components import agent_journal
from crsec_concordia.components.list_memory_bank import ListMemoryBank
from crsec_concordia.game_masters import exact_observations
from crsec_concordia.game_masters import prefab as gm_prefab
from crsec_concordia.models import ScriptedModel
from crsec_concordia.runs import config as config_lib
from crsec_concordia.runs import episode, simulation
from crsec_concordia.scenarios import Scenario
from tests import schema_answers
from tests import test_runner as tr

FIRST = ("Ada", "Ben", "Cleo", "Dan", "Eva", "Finn", "Gia", "Hal")
HABITS = ("talks loudly on the phone", "leaves cups on the tables",
          "keeps to a quiet corner", "tidies up after others")


def society(size: int) -> Scenario:
  """The scaling bench's kind of society, small."""
  agents = [{"name": f"{FIRST[i]} Abbott",
             "role": "entrepreneur" if i % 3 == 0 else "ordinary",
             "persona": f"{FIRST[i]} is a regular who {HABITS[i % 4]}.",
             "goal": "spend the morning reading"} for i in range(size)]
  return Scenario.from_dict({
      "name": f"society_{size}", "premise": "A morning in a reading room.",
      "setting": "The Reading Room, a shared room with a small courtyard",
      "clock": {"start": "09:00", "end": "09:40", "minutes_per_step": 10,
                "days": 1},
      "conversation": {"max_rounds": 1},
      "crsec": {"initial_norm_count": 3, "reflect_every": 4},
      "agents": agents,
      "behaviours": [
          {"id": "loud", "description": "speaks loudly or makes noise"},
          {"id": "messy", "description": "leaves things lying around"}],
      "target_norms": [{"id": "quiet", "text": "Keep your voice down.",
                        "type": "injunctive", "complies": [],
                        "violates": ["loud"]}],
  })


def random_model() -> ScriptedModel:
  """Varied schema-valid answers, each a function of its prompt only."""
  def answer(prompt, schema):
    digest = hashlib.sha256(prompt.encode()).digest()
    return schema_answers.instance(
        schema, random.Random(int.from_bytes(digest[:8], "big")))
  return ScriptedModel(fallback=answer)


@pytest.fixture
def concordias_own(monkeypatch):
  """Concordia's entity agent, memory bank and checkpoint, and the plain
  parse and copy check: the way runs were played before the speed-ups."""
  # The agents' (agent_parts) and the game master's (gm_prefab).
  monkeypatch.setattr(agent_parts, "AGENT_CLASS",
                      entity_agent_with_logging.EntityAgentWithLogging)
  monkeypatch.setattr(gm_prefab, "GAME_MASTER_CLASS",
                      entity_agent_with_logging.EntityAgentWithLogging)
  monkeypatch.setattr(agent_parts, "memory_bank_for", lambda bank: bank)
  monkeypatch.setattr(episode, "SlotSimulation", simulation_lib.Simulation)
  plain = lambda text: tuple(observations.parse_all(text))  # noqa: E731
  for module in (agent_journal, free_text, copies):
    monkeypatch.setattr(module, "parse_events", plain)
  monkeypatch.setattr(copies, "repetition", types.SimpleNamespace(
      copied_from=plain_copied_from))


def _plain_outside(words, given):
  """`words` without those in a stretch of GIVEN_RUN words `given` holds."""
  n = repetition.GIVEN_RUN
  stretches = {tuple(given[i:i + n]) for i in range(len(given) - n + 1)}
  keep = [True] * len(words)
  for i in range(len(words) - n + 1):
    if tuple(words[i:i + n]) in stretches:
      keep[i:i + n] = [False] * n
  return [w for w, k in zip(words, keep) if k]


def plain_copied_from(text, earlier, *, names=(), ratio, run=None,
                      min_words=1, given=""):
  """repetition.copied_from without its shared work: every text turned into
  words and compared by difflib, the way copies were found before."""
  own = repetition.words(given, names)
  mine = _plain_outside(repetition.words(text, names), own)
  if len(mine) < min_words:
    return None
  for other in earlier:
    like = repetition.likeness(
        mine, _plain_outside(repetition.words(other, names), own))
    if (like.ratio >= ratio or like.contained
        or (run is not None and like.run >= run)):
      return other
  return None


def play(tmp_path: Path, name: str, scenario, model, embedder) -> Path:
  return runner.run_episode(scenario, arm="normative", seed=1,
                            out_dir=tmp_path / name, model=model,
                            embedder=embedder, progress=False)


def prompts(model: ScriptedModel) -> list[tuple[str, str]]:
  return sorted((c.tag, c.prompt) for c in model.calls)


@pytest.mark.parametrize("make", ["tiny_cafe", "society_6"])
def test_the_same_run_as_with_concordias_own_pieces(
    tmp_path, embedder, request, make):
  scenario, model_for = ((tr.tiny(), tr.cafe) if make == "tiny_cafe"
                         else (society(6), random_model))
  fast_model = model_for()
  fast = play(tmp_path, "fast", scenario, fast_model, embedder)
  request.getfixturevalue("concordias_own")
  plain_model = model_for()
  plain = play(tmp_path, "plain", scenario, plain_model, embedder)
  tr.same_run(fast, plain)
  assert prompts(fast_model) == prompts(plain_model)
  assert len(tr.records(fast)) > 20


# -- SlotAgent ----------------------------------------------------------------


class Probe(entity_component.ContextComponent):
  """Says which thread ran its hooks, and whether it may wait on the model."""

  def __init__(self, label: str, waits: bool,
               meet: threading.Barrier | None = None):
    super().__init__()
    self.label, self.waits, self.threads = label, waits, []
    self.meet = meet

  def waits_on_model(self, hook: str) -> bool:
    return self.waits and hook == "pre_act"

  def pre_act(self, action_spec) -> str:
    self.threads.append(threading.current_thread())
    if self.meet is not None:
      self.meet.wait()
    return f"{self.label}\n"

  def get_state(self):
    return {}

  def set_state(self, state):
    del state


class Echo(entity_component.ActingComponent):
  def get_action_attempt(self, contexts, action_spec) -> str:
    return "|".join(contexts[k].strip() for k in sorted(contexts))

  def get_state(self):
    return {}

  def set_state(self, state):
    del state


@pytest.mark.parametrize("waiting", [0, 1])
def test_an_agent_runs_its_hooks_in_its_own_thread_unless_two_may_wait(
    waiting):
  probes = {f"p{i}": Probe(f"p{i}", waits=i < waiting) for i in range(4)}
  agent = prefabs.SlotAgent(agent_name="A", act_component=Echo(),
                            context_components=probes)
  assert agent.act() == "p0|p1|p2|p3"
  here = threading.current_thread()
  assert all(p.threads == [here] for p in probes.values())


def test_two_components_that_may_wait_run_at_once():
  # Each waits for the other at a barrier: one after the other, the first
  # would time out (BrokenBarrierError, the act failing).
  meet = threading.Barrier(2, timeout=10)
  probes = {f"p{i}": Probe(f"p{i}", waits=i < 2,
                           meet=meet if i < 2 else None) for i in range(4)}
  agent = prefabs.SlotAgent(agent_name="A", act_component=Echo(),
                            context_components=probes)
  assert agent.act() == "p0|p1|p2|p3"
  assert probes["p0"].threads != probes["p1"].threads


# -- ListMemoryBank -----------------------------------------------------------


def hashed_embedder(text: str) -> np.ndarray:
  rng = np.random.default_rng(int.from_bytes(
      hashlib.sha256(text.encode()).digest()[:8], "big"))
  v = rng.normal(size=16)
  return (v / np.linalg.norm(v)).astype(np.float32)


TEXTS = ["[observation] a\nb", "second", "second", "third one", "fourth",
         "[observation] fifth"]


def test_the_list_bank_answers_as_concordias_bank():
  stock = basic_associative_memory.AssociativeMemoryBank(
      sentence_embedder=hashed_embedder)
  mine = ListMemoryBank(sentence_embedder=hashed_embedder)
  for bank in (stock, mine):
    bank.extend(TEXTS)
  assert len(mine) == len(stock) == 5
  assert mine.get_all_memories_as_text() == list(
      stock.get_all_memories_as_text())
  for k in (1, 3, 10):
    assert mine.retrieve_recent(k) == list(stock.retrieve_recent(k))
    assert mine.retrieve_associative("fourth", k) == list(
        stock.retrieve_associative("fourth", k))
  is_obs = lambda t: t.startswith("[observation]")  # noqa: E731
  assert mine.scan(is_obs) == list(stock.scan(is_obs))
  assert list(mine.get_data_frame()["text"]) == list(
      stock.get_data_frame()["text"])


def test_the_list_bank_keeps_duplicates_only_when_asked():
  bank = ListMemoryBank(allow_duplicates=True)
  bank.extend(["x", "x"])
  assert bank.retrieve_recent(5) == ["x", "x"]
  with pytest.raises(ValueError):
    bank.retrieve_recent(0)
  with pytest.raises(ValueError):
    ListMemoryBank().retrieve_associative("x")


def test_the_list_bank_state_round_trips_and_reads_concordias():
  mine = ListMemoryBank(sentence_embedder=hashed_embedder)
  mine.extend(TEXTS)
  again = ListMemoryBank(sentence_embedder=hashed_embedder)
  again.set_state(json.loads(json.dumps(mine.get_state())))
  assert again.get_all_memories_as_text() == mine.get_all_memories_as_text()
  again.add("second")  # Still a duplicate after a restore.
  assert len(again) == 5

  stock = basic_associative_memory.AssociativeMemoryBank(
      sentence_embedder=hashed_embedder)
  stock.extend(TEXTS)
  restored = ListMemoryBank(sentence_embedder=hashed_embedder)
  restored.set_state(json.loads(json.dumps(stock.get_state())))
  assert restored.get_all_memories_as_text() == list(
      stock.get_all_memories_as_text())
  assert ListMemoryBank.like(stock).get_all_memories_as_text() == list(
      stock.get_all_memories_as_text())


# -- shared parsing and the copy check ------------------------------------------


def test_parsed_events_are_parse_all_s():
  stamp = observations.Stamp(1, "09:10", 2)
  text = "\n".join([
      observations.format_clock(stamp),
      observations.format_action(stamp, "Ada Abbott", "indoors", "reads."),
      observations.format_conversation(stamp, "Ada Abbott", "Ben Abbott",
                                       "noise", [("Ada Abbott", "Hush.")])])
  assert _events.parse_events(text) == tuple(observations.parse_all(text))
  assert _events.parse_events(text) is _events.parse_events(text)


def test_the_shared_copy_check_finds_what_the_plain_one_finds():
  rng = random.Random(7)
  names = ["Ada Abbott", "Ben Baker", "Cleo Cole"]
  vocabulary = schema_answers.WORDS[:25] + ["Ada", "Ben Baker", "cole"]

  def sentence(lo, hi):
    return " ".join(rng.choice(vocabulary) for _ in range(rng.randint(lo, hi)))

  found = changed = 0
  for _ in range(400):
    earlier = [sentence(0, 12) for _ in range(rng.randint(0, 6))]
    text = (rng.choice(earlier) + " " + sentence(0, 2)
            if earlier and rng.random() < 0.3 else sentence(0, 12))
    # Half the time the writer was given a stretch of its own text.
    words = text.split()
    start = rng.randint(0, max(0, len(words) - 3))
    given = (" ".join(words[start:start + rng.randint(3, 6)]) + " "
             + sentence(0, 4) if rng.random() < 0.5 else "")
    changed += (plain_copied_from(text, earlier, names=names, ratio=0.6,
                                  run=6, min_words=5, given=given)
                != plain_copied_from(text, earlier, names=names, ratio=0.6,
                                     run=6, min_words=5))
    for ratio, run, min_words in ((0.6, 6, 5), (0.7, None, 1), (0.0, 0, 0)):
      want = plain_copied_from(text, earlier, names=names, ratio=ratio,
                               run=run, min_words=min_words, given=given)
      got = repetition.copied_from(text, earlier, names=names, ratio=ratio,
                                   run=run, min_words=min_words, given=given)
      assert got == want, (text, earlier, ratio, run)
      found += want is not None
  assert found > 50 and changed > 10


# -- the checkpoint -------------------------------------------------------------


def test_the_one_pass_checkpoint_is_concordias(tmp_path, embedder):
  scenario = tr.tiny().with_max_steps(2)
  sim = simulation.SlotSimulation(
      config_lib.build_config(scenario, "normative", 1), tr.cafe(), embedder,
      engine=episode.SlotEngine())
  sim.play(premise=scenario.premise, max_steps=2)
  ours = sim.make_checkpoint_data()
  sim._checkpoint_counter -= 1  # pylint: disable=protected-access
  # Concordia's checkpoint with Concordia's own serializer, not ours.
  sim._make_json_serializable = types.MethodType(  # pylint: disable=protected-access
      simulation_lib.Simulation._make_json_serializable, sim)  # pylint: disable=protected-access
  theirs = simulation_lib.Simulation.make_checkpoint_data(sim)
  assert json.dumps(ours, sort_keys=True) == json.dumps(theirs,
                                                        sort_keys=True)
  assert ours["entities"] and ours["game_masters"] and ours["raw_log"]


def test_the_serializer_is_concordias_value_for_value():
  class Text(str):
    pass
  concordia = types.SimpleNamespace()
  concordia._make_json_serializable = types.MethodType(  # pylint: disable=protected-access
      simulation_lib.Simulation._make_json_serializable, concordia)  # pylint: disable=protected-access
  value = {"a": [1, 2.5, True, None, "x", Text("y"), (3, [4, {"b": None}])],
           "c": {"d": object(), "e": {1, 2}, "f": np.float32(1.5),
                 "g": [object(), {"h": ()}]}, "i": None, 5: Text("z"),
           "j": ("k", {"l": [[], {}]})}
  ours = simulation._serializable(value)  # pylint: disable=protected-access
  theirs = concordia._make_json_serializable(value)  # pylint: disable=protected-access
  assert ours == theirs and repr(ours) == repr(theirs)


# -- the embedding warmer and the observation order ----------------------------


class CountingEmbedder:
  def __init__(self):
    self.batches: list[list[str]] = []

  def encode(self, texts):
    self.batches.append(list(texts))
    return np.zeros((len(texts), 4), dtype=np.float32)


def test_the_warmer_embeds_each_text_once_in_the_background():
  embedder = CountingEmbedder()
  warmer = _embedding_warmer.EmbeddingWarmer(embedder)
  warmer.warm(["a", "b", ""])
  warmer.warm(["b", "c"])
  warmer.join()
  warmer.warm(["a", "c"])  # Already warmed: nothing to do.
  warmer.join()
  assert sorted(t for batch in embedder.batches for t in batch) == [
      "a", "b", "c"]
  warmer_for = _embedding_warmer.warmer_for
  assert warmer_for(embedder) is warmer_for(embedder)
  assert warmer_for(hashed_embedder) is None  # It cannot batch.


def test_an_observation_shows_the_slot_s_actions_before_the_talk():
  stamp = observations.Stamp(1, "09:10", 2)
  talk = observations.format_conversation(stamp, "Ada Abbott", "Ben Abbott",
                                          "noise", [("Ada Abbott", "Hush.")])
  action = observations.format_action(stamp, "Ben Abbott", "indoors",
                                      "Ben shouts.")
  queue = exact_observations.ExactObservations(player_names=["Ada Abbott"])
  queue.set_entity(types.SimpleNamespace(get_component=lambda *a, **k:
                                         types.SimpleNamespace(
                                             current_stamp=lambda: stamp)))
  queue.add("Ada Abbott", talk)  # The talk finished first.
  queue.add(exact_observations.EVERYONE, action)
  assert queue.take("Ada Abbott").splitlines()[1:] == [action,
                                                       *talk.splitlines()]

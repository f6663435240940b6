"""--referee-batched: the measured verdicts decide `auto`; the choice
reaches the game master's params and run.json (calibration/batching.py)."""

from __future__ import annotations

import json

from crsec_concordia.calibration import batching
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.calibration.run_policy import BATCHED_PARAM
from crsec_concordia.judgement_prompts import batch_prompts_hash
from crsec_concordia.prefabs.params import CONFLICTS_BATCHED
from crsec_concordia.runner import run_episode
from crsec_concordia.runs import config as config_lib
from tests import crsec_script as cs
from tests.test_place_batch import BATCH, LOOK, batch_answer

ME = ModelIdentity("m", "embedded", "p")
_for = batching.batching_for


def _entries(tmp_path, keeps, passes, prompts="h"):
  path = batching.record(
      tmp_path / "b.json", ME, prompts,
      {"cafe": {"n": 10, "keeps": keeps}, "garden": {"n": 10, "keeps": True}},
      {"n": 20, "passes": passes})
  return batching.read(path)


def test_a_choice_given_is_kept_whatever_was_measured(tmp_path):
  entries = _entries(tmp_path, keeps=False, passes=False)
  assert _for(True, ME, "cafe", "h", entries=entries).on
  assert not _for(False, ME, "garden", "h", entries=entries).on


def test_auto_follows_the_venue_then_the_pool(tmp_path):
  entries = _entries(tmp_path, keeps=False, passes=True)
  assert not _for(None, ME, "cafe", "h", entries=entries).on
  assert _for(None, ME, "garden", "h", entries=entries).on
  # A venue nobody labelled: the pooled verdict.
  assert _for(None, ME, "workshop", "h", entries=entries).on
  # A measured venue keeps its own verdict when the pool fails; a venue
  # nobody labelled is asked one at a time then.
  failed = _entries(tmp_path, keeps=True, passes=False)
  assert _for(None, ME, "garden", "h", entries=failed).on
  assert not _for(None, ME, "workshop", "h", entries=failed).on


def test_a_venue_that_cannot_tell_goes_by_the_pool(tmp_path):
  for passes in (True, False):
    entries = _entries(tmp_path, keeps=None, passes=passes)
    got = _for(None, ME, "cafe", "h", entries=entries)
    assert got.on is passes
    assert "cafe's labelled cases cannot tell" in got.source
    assert "pooled" in got.source


def test_auto_asks_per_action_where_nobody_measured_batched(tmp_path):
  entries = _entries(tmp_path, keeps=True, passes=True)
  other = ModelIdentity("another", "openai-compatible", "p")
  got = _for(None, other, "garden", "h", entries=entries)
  assert not got.on and "nobody measured" in got.source
  # Other batch prompts than those measured: not measured either.
  assert not _for(None, ME, "garden", "h2", entries=entries).on


def test_recording_again_replaces_the_same_model_and_prompts(tmp_path):
  _entries(tmp_path, keeps=True, passes=True)
  entries = _entries(tmp_path, keeps=False, passes=False)
  assert len(entries) == 1 and not entries[0]["pooled"]["passes"]
  assert len(_entries(tmp_path, keeps=True, passes=True, prompts="h2")) == 2


def test_the_batch_prompts_hash_is_stable():
  assert batch_prompts_hash() == batch_prompts_hash()
  assert len(batch_prompts_hash()) == 12


def test_the_choice_reaches_the_game_master_and_run_json(tmp_path):
  def params(run_dir):
    config = json.loads((run_dir / "config.json").read_text())
    return next(i["params"] for i in config["instances"]
                if i["role"] == "game_master")
  def look_none(prompt, schema):
    return {k: {"behaviour": "none", "evidence": "none", "doer": "nobody"}
            for k in schema["properties"]}
  def single_none(prompt, schema):
    place = schema["properties"]["place"]["enum"][0]
    return {"narration": "sips a coffee.", "place": place,
            "behaviour": "none", "also": "none", "evidence": "none"}
  single = {r"\nbehaviour: the id the action plainly shows": single_none,
            cs.LOOK: cs.look_none}
  batched_model = cs.cafe_model(**{BATCH: batch_answer({}),
                                   LOOK: look_none})
  on = run_episode("hobbs_cafe_mini", arm="baseline", seed=1, steps=1,
                   out_dir=tmp_path / "on", model=batched_model,
                   progress=False, stated_belief=False, referee_batched=True)
  off = run_episode("hobbs_cafe_mini", arm="baseline", seed=1, steps=1,
                    out_dir=tmp_path / "off", model=cs.cafe_model(**single),
                    progress=False, stated_belief=False,
                    referee_batched=False)
  assert params(on)[BATCHED_PARAM] is True
  assert BATCHED_PARAM not in params(off)
  # One batched call judged the slot's actions; per action asks none so.
  assert any(c.tag == "GM.adjudicate" and "Each action below" in c.prompt
             for c in batched_model.calls)
  info = json.loads((on / "run.json").read_text())
  assert info["referee_batched"] == {"on": True,
                                     "source": "--referee-batched"}


def test_each_operation_reads_its_own_measurement(tmp_path):
  path = tmp_path / "b.json"
  batching.record(path, ME, "h", {"cafe": {"n": 5, "keeps": True}},
                  {"n": 5, "passes": True}, batching.REFEREE)
  batching.record(path, ME, "h", {"cafe": {"n": 5, "keeps": False}},
                  {"n": 5, "passes": True}, batching.CONFLICTS)
  entries = batching.read(path)
  assert len(entries) == 2
  assert _for(None, ME, "cafe", "h", batching.REFEREE,
                               entries).on
  assert not _for(None, ME, "cafe", "h", batching.CONFLICTS,
                                   entries).on
  given = _for(False, ME, "cafe", "h", batching.CONFLICTS)
  assert given.source == "--no-conflicts-batched"


def test_conflicts_batched_reaches_the_normative_agents_only():
  scenario = config_lib.load("hobbs_cafe_mini")
  def agents(arm, on):
    config = config_lib.build_config(scenario, arm, 1, None, False, on)
    return [i.params for i in config.instances
            if i.role.name == "ENTITY"]
  assert all(p[CONFLICTS_BATCHED] is True for p in agents("normative", True))
  assert not any(CONFLICTS_BATCHED in p for p in agents("normative", False))
  assert not any(CONFLICTS_BATCHED in p for p in agents("baseline", True))

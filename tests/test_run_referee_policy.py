"""A run names which of the referee's structures apply (`--referee-policy`).

The scripted room of tests/test_shared_judgement.py played with real CRSEC
agents: the default leaves the game master's params as they were (every
structure, records carrying each structure's fields); `trusting` applies
none that can refuse an answer and records none of their fields;
`calibrated` reads the policy `crsec calibrate` chose for this very model;
a resumed run keeps the policy it began with; a bad choice is one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsec_concordia import runner
from crsec_concordia.calibration import run_policy, store
from crsec_concordia.commands import sweep as sweep_command
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.judgement_prompts import prompts_hash
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.errors import UserError
from crsec_concordia.metrics.classifiers import referee_quality
from crsec_concordia.metrics.present import report
from crsec_concordia.models import EndpointConfig
from crsec_concordia.scenarios import TargetNorm, parse_scenario
from crsec_concordia.sweeps import grid, runjob
from crsec_concordia.sweeps import spec as spec_lib
from tests import schema_answers
from tests import test_shared_judgement as room
from tests.test_cli_basics import assert_one_line_error, crsec
from tests.test_sweep import TINY

# Fields only a structure writes on an action record (game_masters/).
STRUCTURE_FIELDS = ("tag_floor", "tag_deed_similarity", "tag_doers",
                    "second_look", "referee_asked")
GIVEN = ModelIdentity("ScriptedModel", "given", prompts_hash())


def gm_params(run_dir: Path) -> dict:
  config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
  return next(i["params"] for i in config["instances"]
              if i["role"] == "game_master")


def structure_fields(run_dir: Path) -> set[str]:
  return {k for r in room.records(run_dir, "action") for k in r
          if k in STRUCTURE_FIELDS}


@pytest.fixture(scope="module")
def trusting_run(tmp_path_factory, embedder) -> Path:
  return room.play(tmp_path_factory.mktemp("trusting"), embedder, "run",
                   room.model(), referee_policy=run_policy.TRUSTING)


def test_the_default_adds_nothing_and_applies_every_structure(
    tmp_path, embedder):
  run_dir = room.play(tmp_path, embedder, "default", room.model())
  assert run_policy.PARAM not in gm_params(run_dir)
  info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
  assert "referee_policy" not in info
  assert structure_fields(run_dir)  # The structures wrote their fields.


def test_a_trusting_run_applies_and_records_no_structure(trusting_run):
  assert gm_params(trusting_run)[run_policy.PARAM] == (
      RefereePolicy.trusting().to_dict())
  info = json.loads((trusting_run / "run.json").read_text(encoding="utf-8"))
  assert info["referee_policy"] == {"source": "trusting", "structures": []}
  assert not structure_fields(trusting_run)
  # The smoker's deed is still tagged from the model's answer alone.
  tags = [r.get("behaviours") for r in room.records(trusting_run, "action")
          if r.get("actor") == "Carlos Gomez"]
  assert tags and all(t == ["smoking_indoors"] for t in tags)


def test_a_resumed_run_keeps_its_policy(tmp_path, embedder, monkeypatch,
                                        trusting_run):
  crashed = room.crash_in_slot_2(tmp_path, embedder, monkeypatch,
                                 referee_policy=run_policy.TRUSTING)
  runner.resume_episode(crashed, model=room.model(), embedder=embedder,
                        progress=False)
  assert gm_params(crashed)[run_policy.PARAM] == (
      RefereePolicy.trusting().to_dict())
  assert not structure_fields(crashed)
  assert ((crashed / "events.jsonl").read_text(encoding="utf-8")
          == (trusting_run / "events.jsonl").read_text(encoding="utf-8"))


def _calibration(identity: ModelIdentity, chosen: RefereePolicy,
                 venue: str = "one_room_holders") -> Path:
  """A calibration of `identity` in the user's data directory holding
  `chosen` as its chosen policy (what `crsec calibrate` writes)."""
  entry = {"scenario": venue, "labels": "probes", "prompts":
           identity.prompts, "behaviours": {}, "cases": [], "summary": {},
           "chosen_policy": chosen.to_dict()}
  return store.write(store.target_path(identity), identity, {venue: entry})


def test_calibrated_reads_this_models_own_choice(tmp_path, embedder):
  chosen = RefereePolicy(spare_far_actions=False, tag_floor=False,
                         deed_floor=False, second_look=False)
  # Another model's calibration (and the same model asked in other
  # prompts) is never read as this one's.
  _calibration(ModelIdentity("ScriptedModel", "given", "0" * 12),
               RefereePolicy.trusting())
  _calibration(ModelIdentity("another", "openai-compatible", GIVEN.prompts),
               RefereePolicy.trusting())
  path = _calibration(GIVEN, chosen)
  run_dir = room.play(tmp_path, embedder, "calibrated", room.model(),
                      referee_policy=run_policy.CALIBRATED)
  assert gm_params(run_dir)[run_policy.PARAM] == chosen.to_dict()
  info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
  assert info["referee_policy"] == {
      "source": f"calibrated ({path})", "structures": list(
          chosen.structures())}
  fields = structure_fields(run_dir)
  assert "tag_doers" in fields and "tag_floor" not in fields


def test_the_venues_own_entry_comes_first():
  entries = [{"scenario": s, "model": GIVEN.to_dict(), "path": "f.json",
              "chosen_policy": p.to_dict()}
             for s, p in (("garden", RefereePolicy.trusting()),
                          ("cafe", RefereePolicy.all_on()))]
  assert run_policy.calibrated(GIVEN, "cafe", entries).policy == (
      RefereePolicy.all_on())
  assert run_policy.calibrated(GIVEN, "town", entries).policy == (
      RefereePolicy.trusting())


def test_a_policy_file_gives_its_switches(tmp_path):
  path = tmp_path / "policy.json"
  path.write_text(json.dumps(RefereePolicy(second_look=False).to_dict()),
                  encoding="utf-8")
  chosen = run_policy.resolve(str(path), GIVEN, "cafe")
  assert chosen.policy == RefereePolicy(second_look=False)
  assert chosen.source == str(path)
  assert run_policy.resolve("all-on", GIVEN, "cafe") is None


@pytest.mark.parametrize("choice, words", [
    ("calibrated", "crsec calibrate"),
    ("lenient", "all-on, trusting, calibrated"),
    ("missing.json", "cannot be read"),
])
def test_a_bad_choice_names_the_fix(choice, words, tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  with pytest.raises(UserError, match=words):
    run_policy.resolve(choice, GIVEN, "cafe")


def test_a_file_missing_a_switch_is_named(tmp_path):
  path = tmp_path / "policy.json"
  path.write_text(json.dumps({"tag_floor": False}), encoding="utf-8")
  with pytest.raises(UserError, match="missing switch 'second_look'"):
    run_policy.resolve(str(path), GIVEN, "cafe")


@pytest.mark.parametrize("command", [["run"], ["compare", "--seeds", "1"]])
def test_the_command_line_says_it_in_one_line_and_writes_nothing(
    tmp_path, command):
  """No calibration of the endpoint's model: one line, exit 2, before any
  model is asked, and no run directory is left behind."""
  out = tmp_path / "run"
  line = assert_one_line_error(crsec(
      *command, "hobbs_cafe_mini", "--referee-policy", "calibrated",
      "--base-url",
      "http://127.0.0.1:9/v1", "--model", "nobody-measured", "--out",
      str(out), env={"XDG_DATA_HOME": str(tmp_path / "data")}))
  assert "nobody-measured" in line and "crsec calibrate" in line
  assert not out.exists()


# -- sweeps: per endpoint, resolved by the driver -----------------------------

SWEEP = {"scenarios": ["tiny.yaml"], "seeds": "1", "arms": ["normative"],
         "endpoints": {
             "own": {"base_url": "http://127.0.0.1:9/v1", "model": "m1",
                     "referee_policy": "trusting"},
             "plain": {"base_url": "http://127.0.0.1:9/v1", "model": "m2"}}}


def _policies(default=None, **changes):
  spec = spec_lib.SweepFile.model_validate({**SWEEP, **changes})
  endpoints = grid.endpoint_configs(spec, EndpointConfig.resolve)
  return sweep_command._policies(spec, endpoints, ["tiny_cafe"], default)


def test_a_sweep_endpoint_names_its_policy_and_the_flag_the_rest():
  policies = _policies("all-on")
  assert policies[("own", "tiny_cafe")].policy == RefereePolicy.trusting()
  assert policies[("plain", "tiny_cafe")] is None
  plain = _policies()[("plain", "tiny_cafe")]  # auto, measured by nobody
  assert plain.policy == RefereePolicy.trusting()
  assert plain.source.startswith("auto: trusting (no calibration of m2")


def test_auto_keeps_the_embedded_model_and_trusts_a_model_nobody_measured():
  embedded = ModelIdentity("qwen", "embedded", GIVEN.prompts)
  # Every structure where the venue has labelled cases of its own; on one
  # nobody labelled, the held-out default (docs/calibration.md).
  assert run_policy.resolve(None, embedded, "hobbs_cafe") is None
  assert run_policy.resolve(None, embedded, "cafe") == (
      run_policy.held_out_default())
  assert run_policy.resolve("auto", GIVEN, "cafe") is None
  endpoint = ModelIdentity("big-model", "openai-compatible", GIVEN.prompts)
  assert run_policy.resolve("auto", endpoint, "cafe").policy == (
      RefereePolicy.trusting())
  chosen = RefereePolicy(second_look=False)
  path = _calibration(endpoint, chosen, venue="cafe")
  found = run_policy.resolve("auto", endpoint, "cafe")
  assert found.policy == chosen
  assert found.source == f"auto: calibrated ({path})"


def test_a_sweep_without_the_calibration_stops_before_any_run(tmp_path):
  with pytest.raises(UserError, match="m2 .*crsec calibrate"):
    _policies("calibrated")
  (tmp_path / "tiny.yaml").write_text(TINY, encoding="utf-8")
  (tmp_path / "sweep.yaml").write_text(json.dumps(
      {**SWEEP, "endpoints": {"plain": {**SWEEP["endpoints"]["plain"],
                                        "referee_policy": "calibrated"}}}),
      encoding="utf-8")
  out = tmp_path / "out"
  line = assert_one_line_error(crsec(
      "sweep", str(tmp_path / "sweep.yaml"), "--out", str(out),
      env={"XDG_DATA_HOME": str(tmp_path / "data")}))
  assert "m2" in line and "crsec calibrate" in line
  assert not out.exists()


def test_a_sweeps_worker_runs_with_the_drivers_policy(tmp_path, server):
  """A worker needs no calibration file: the job carries the policy."""
  server.responder = schema_answers.responder()
  job = runjob.RunJob(
      id="tiny", run_dir=tmp_path / "tiny", scenario=parse_scenario(
          TINY, "tiny.yaml"), arm="normative", seed=1, steps=1,
      endpoint=EndpointConfig.resolve(server.base_url, None, "fake-model"),
      cache=False, referee_policy=run_policy.Chosen(
          RefereePolicy.trusting(), "calibrated (elsewhere.json)"))
  assert runjob.play(job).status == "completed"
  assert gm_params(job.run_dir)[run_policy.PARAM] == (
      RefereePolicy.trusting().to_dict())
  info = json.loads((job.run_dir / "run.json").read_text(encoding="utf-8"))
  assert info["referee_policy"]["source"] == "calibrated (elsewhere.json)"


def test_the_run_report_names_the_structures_that_applied(trusting_run,
                                                          tmp_path):
  page = report.run_report(trusting_run, tmp_path / "report").index
  text = Path(page).read_text(encoding="utf-8")
  assert "referee&#39;s structures" in text or "referee's structures" in text
  assert "none (trusting)" in text


# -- corrected estimates: the run's own referee replayed ----------------------

VENUE = {"name": "v", "behaviours": [
    {"id": "kept", "description": "keeps the rule"},
    {"id": "broke", "description": "breaks the rule"}]}
RULE = TargetNorm(id="rule", text="Keep the rule.", type="injunctive",
                  complies=["kept"], violates=["broke"])
ENDPOINT = {"endpoint": "http://127.0.0.1:1/v1", "model": "big-model",
            "judgement_prompts": GIVEN.prompts}


def _case(truth: str, given: str, score: float) -> dict:
  """A probe case as probe_run.py records it: the general call's answer,
  its cosine (far below the floor when `score` is low) and every other
  structure's input."""
  return {"action": f"someone {given}", "truth": [truth], "given": [given],
          "scores": {given: score}, "deed_scores": {given: score},
          "by_actor": {given: True}, "doers": {given: "someone"},
          "looked": [], "spared": False, "failed": False, "look": None}


def _venue_calibration(tmp_path: Path, cases: list[dict], **measured):
  who = ModelIdentity.of_described(ENDPOINT)
  entry = store.probe_entry(
      {"venue": "v", "summary": {}, "referee": cases,
       "behaviours": {b["id"]: b["description"] for b in VENUE["behaviours"]},
       **measured}, who.prompts)
  store.write(store.target_path(who, tmp_path), who, {"v": entry})


def test_the_correction_replays_the_runs_own_referee(tmp_path):
  # Two right answers the tag floor refuses (their cosine is low).
  cases = [_case("kept", "kept", 0.9), _case("kept", "kept", 0.1),
           _case("kept", "kept", 0.1), _case("broke", "broke", 0.9)]
  _venue_calibration(tmp_path, cases, floors={"tag": 0.3, "occasion": 0.3},
                     sides={})

  def rates(policy):
    return referee_quality.rates(RULE, VENUE, calibrations=[tmp_path],
                                 model=ENDPOINT, policy=policy)
  trusting = rates(RefereePolicy.trusting())
  assert (trusting.rates.tp, trusting.rates.fn) == (3, 0), trusting.note
  assert "replayed under the run's referee policy (no structure)" in (
      trusting.note)
  floored = rates(RefereePolicy.from_dict(
      {**RefereePolicy.trusting().to_dict(), "tag_floor": True}))
  assert (floored.rates.tp, floored.rates.fn) == (1, 2), floored.note
  # A run that names no policy: the structures its records show.
  assert rates(None).note.count("replayed") == 0


def test_a_calibration_without_the_inputs_corrects_by_the_records(tmp_path):
  """One made before calibrations kept the inputs: corrected by what the
  run's records show, and the page says it is not exact and what to run."""
  old = [{k: v for k, v in _case("kept", "kept", 0.1).items()
          if k not in ("spared", "look", "failed")}]
  _venue_calibration(tmp_path, old)
  measured = referee_quality.rates(RULE, VENUE, calibrations=[tmp_path],
                                   model=ENDPOINT,
                                   policy=RefereePolicy.trusting())
  assert (measured.rates.tp, measured.rates.fn) == (1, 0)
  assert "replayed under" not in measured.note
  assert "for an exact correction" in measured.note
  assert "crsec calibrate" in measured.note


def test_run_json_names_the_policy_the_correction_replays(trusting_run):
  info = json.loads((trusting_run / "run.json").read_text(encoding="utf-8"))
  assert run_policy.of_run(info) == RefereePolicy.trusting()
  assert run_policy.of_run({}) is None

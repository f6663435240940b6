"""`--model-factory`: a Concordia LanguageModel of the user's own on the
command line, and every command that reads or extends a run using the
model factory and the embedder the run used."""

from __future__ import annotations

import json

import pytest
from concordia.language_model import language_model

from crsec_concordia import cli, load_run, runner
from crsec_concordia.calibration import run_policy
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.errors import UserError
from crsec_concordia.judgement_prompts import identity_of
from crsec_concordia.models import EndpointConfig, make_model
from crsec_concordia.models.base import EndpointError
from crsec_concordia.models.cache import ResponseCache
from crsec_concordia.models.factory import FactoryModel, estimate_tokens
from crsec_concordia.scenarios.models_block import models_problems
from crsec_concordia.sweeps import grid
from crsec_concordia.sweeps import spec as spec_lib
from crsec_concordia.testing import SchemaModel, bag_of_words
from tests import factory_case

SCHEMA = {"type": "object", "additionalProperties": False,
          "required": ["answer"],
          "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}}}


class Flaky(language_model.LanguageModel):
  """Answers junk `junk` times, then valid JSON; fails on "down"."""

  def __init__(self, junk: int = 0):
    self.junk = junk
    self.calls = 0

  def sample_text(self, prompt, **kwargs):
    del kwargs
    self.calls += 1
    if "down" in prompt:
      raise ConnectionError("the lab's server went away")
    if self.junk:
      self.junk -= 1
      return "I would rather not say."
    return '{"answer": "yes"}'

  def sample_choice(self, prompt, responses, *, seed=None):
    del prompt, seed
    return 1, responses[1], {}


def _one_line(capsys, code: int, says: str) -> str:
  """The command stopped with exit 2 and one line saying `says`."""
  lines = capsys.readouterr().err.strip().splitlines()
  assert code == 2 and len(lines) == 1 and says in lines[0], (code, lines)
  return lines[0]


def test_the_command_line_runs_resumes_interviews_and_reports_with_them(
    tmp_path, monkeypatch, capsys):
  found = factory_case.run_case(tmp_path)
  assert found["cached_calls"] > 0 and found["answers"] > 0
  run_dir = found["run_dir"]
  # From a folder without the lab's module: one line naming what the run
  # used, and nothing written.
  elsewhere = tmp_path / "elsewhere"
  elsewhere.mkdir()
  monkeypatch.chdir(elsewhere)
  line = _one_line(capsys, cli.main(
      ["interview", str(run_dir), "--questions", "rules", "--out",
       "answers.csv"]), "this run used labmod:make (no module 'labmod' here)")
  assert line.endswith("run from the folder that holds it or pass "
                       "--model-factory")
  line = _one_line(capsys, cli.main(
      ["report", str(run_dir), "--out", "report"]), "this run used "
      "labmod:embed (no module 'labmod' here)")
  assert line.endswith("pass --embedder")
  assert list(elsewhere.iterdir()) == []
  with pytest.raises(UserError, match="this run used labmod:embed .*pass "
                     "embedder="):
    load_run(run_dir)
  monkeypatch.chdir(run_dir.parent)
  assert len(load_run(run_dir).metrics) > 0  # With the run's embedder.
  # A page of what the run wrote: nothing to import.
  assert cli.main(["view", str(run_dir), "--out", "view.html"]) == 0


def test_a_factory_model_is_checked_counted_and_cached(tmp_path):
  cache = ResponseCache(tmp_path / "cache.sqlite")
  lab = Flaky(junk=1)
  model = FactoryModel(lab, "labmod:make", seed=3, cache=cache)
  assert model.sample_json("Is it?", SCHEMA, tag="op") == {"answer": "yes"}
  counts = model.usage.by_tag()["op"]
  # One call of two attempts (junk, then valid), tokens estimated from both.
  assert (counts["calls"], lab.calls) == (1, 2)
  assert counts["completion_tokens"] == (
      estimate_tokens("I would rather not say.")
      + estimate_tokens('{"answer": "yes"}'))
  # Asked again (a rerun): from the cache, the model not asked.
  again = FactoryModel(Flaky(junk=5), "labmod:make", seed=3, cache=cache)
  assert again.sample_json("Is it?", SCHEMA, tag="op") == {"answer": "yes"}
  assert again.usage.by_tag()["op"]["cached_calls"] == 1
  # Another factory's name is another model: not answered from the cache.
  other = FactoryModel(Flaky(), "othermod:make", seed=3, cache=cache)
  other.sample_json("Is it?", SCHEMA, tag="op")
  assert other.usage.by_tag()["op"]["cached_calls"] == 0
  assert model.sample_choice("Which?", ["a", "b"]) == (1, "b", {})
  assert again.sample_choice("Which?", ["a", "b"])[1] == "b"


def test_a_failing_factory_model_is_a_lost_dependency_in_one_line():
  model = FactoryModel(Flaky(), "labmod:make")
  with pytest.raises(EndpointError, match="the model of --model-factory "
                     "labmod:make failed .ConnectionError"):
    model.sample_json("down", SCHEMA)


def test_the_factory_is_recorded_and_found_again(tmp_path, monkeypatch):
  (tmp_path / "labfactory.py").write_text(
      "from crsec_concordia.testing import SchemaModel\n"
      "def make():\n  return SchemaModel()\n"
      "def not_a_model():\n  return 'a string'\n")
  monkeypatch.chdir(tmp_path)
  config = EndpointConfig.resolve(factory="labfactory:make")
  described = config.describe()
  assert described["endpoint"] == "factory"
  assert described["model"] == "labfactory:make"
  model = make_model(config, seed=1)
  assert isinstance(model.wrapped, SchemaModel)
  assert EndpointConfig.of_run(json.loads(json.dumps(described))).factory == (
      "labfactory:make")
  assert EndpointConfig.of_run({"endpoint": "embedded"}) is None
  # `auto` treats it as an endpoint's model: measured by nobody, trusting.
  identity = identity_of(config)
  assert (identity.name, identity.endpoint) == ("labfactory:make", "factory")
  chosen = run_policy.resolve(None, identity, "hobbs_cafe_mini")
  assert chosen.policy == RefereePolicy.trusting()
  assert "no calibration of labfactory:make (a model factory)" in (
      chosen.source)
  with pytest.raises(UserError, match="not a Concordia LanguageModel"):
    make_model(EndpointConfig.resolve(factory="labfactory:not_a_model"))
  with pytest.raises(UserError, match="give one"):
    EndpointConfig.resolve(base_url="http://localhost:1/v1", model="m",
                           factory="labfactory:make")
  with pytest.raises(UserError, match="this run used nomod:make .no module "
                     "'nomod' here.; run from the folder that holds it or "
                     "pass --model-factory"):
    EndpointConfig.of_run({"endpoint": "factory", "model": "nomod:make"})


def test_a_role_spec_names_a_factory_as_it_names_an_endpoint(tmp_path,
                                                              monkeypatch):
  monkeypatch.setenv("CRSEC_CACHE_DIR", str(tmp_path / "cache"))
  lab = "crsec_concordia.testing:scripted_model_factory"
  spec = {"endpoints": {"lab": {"factory": lab}}, "game_master": "lab"}
  run_dir = runner.run_episode(
      "hobbs_cafe_mini", arm="normative", seed=1, out_dir=tmp_path / "run",
      steps=1, progress=False, embedder=bag_of_words, models=spec,
      endpoint=EndpointConfig.resolve(factory=lab))
  info = json.loads((run_dir / "run.json").read_text())
  assert info["model_spec"]["endpoints"] == {"lab": {"factory": lab}}
  assert info["models"]["game_master"] == "lab"
  assert {e["endpoint"] for e in info["models"]["endpoints"].values()} == {
      "factory"}
  usage = json.loads((run_dir / "usage.json").read_text())
  assert usage["by_model"]["lab"]["totals"]["calls"] > 0
  assert usage["by_model"]["main"]["totals"]["prompt_tokens"] > 0
  problems = models_problems({"endpoints": {"x": {
      "factory": lab, "base_url": "http://h/v1", "model": "m"}}}, [], [])
  assert [p.what for p in problems] == ["a factory and an endpoint"]


def test_a_sweep_endpoint_may_be_a_factory(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  lab = "crsec_concordia.testing:scripted_model_factory"
  config = grid.endpoint_config(spec_lib.Endpoint(factory=lab,
                                                  max_in_flight=2))
  assert (config.factory, config.max_in_flight) == (lab, 2)
  assert config.factory_dir == str(tmp_path)
  with pytest.raises(UserError, match="no module 'nomod' here"):
    grid.endpoint_config(spec_lib.Endpoint(factory="nomod:make"))

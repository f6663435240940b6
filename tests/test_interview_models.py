"""Interviews of a run with several models: each agent asked with its own.

The run is tests/test_models_by_role.py's mixed café (the game master on
`referee`, Carlos Gomez on `second`, the others on `main`); two scripted
models that answer differently stand for the agents' two.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from crsec_concordia.analysis import load_run
from crsec_concordia.errors import UserError
from crsec_concordia.interviews.interview import interview
from crsec_concordia.interviews.table import INTERVIEW_COLUMNS
from crsec_concordia.models import EndpointConfig, ScriptedModel
from tests import test_models_by_role as mbr
from tests import test_runner as tr
from tests.fake_openai import Reply

MAIN = "People here keep the smoke outside."
SECOND = "Nobody told me any rules."
CARLOS = "Carlos Gomez"


def answering(answer: str) -> ScriptedModel:
  return ScriptedModel([(r"Someone asks", {"answer": answer})])


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory, embedder) -> Path:
  models = {"main": tr.cafe(), "referee": tr.cafe(), "second": tr.cafe()}
  return mbr.play(tmp_path_factory.mktemp("mixed"), embedder, "mixed",
                  mbr.MIXED, models)


@pytest.fixture
def copy(mixed_run, tmp_path) -> Path:
  return Path(shutil.copytree(mixed_run, tmp_path / "run"))


def test_each_agent_is_asked_by_the_model_it_played_with(copy, embedder):
  main, second = answering(MAIN), answering(SECOND)
  result = interview(copy, "rules", model=main, embedder=embedder,
                     given_models={"second": second})
  answers = result.answers
  assert list(answers.columns) == [*INTERVIEW_COLUMNS[:3], "model",
                                   *INTERVIEW_COLUMNS[3:]]
  carlos = answers[answers["agent"] == CARLOS]
  others = answers[answers["agent"] != CARLOS]
  assert len(carlos) and len(others)
  assert set(carlos["answer"]) == {SECOND} and set(carlos["model"]) == {
      "second"}
  assert set(others["answer"]) == {MAIN} and set(others["model"]) == {"main"}
  # Every call went to the agent's own model: none to the other.
  assert second.usage.totals()["calls"] == len(carlos)
  assert main.usage.totals()["calls"] == len(others)
  assert all(CARLOS in c.prompt for c in second.calls)
  assert not any(f"asks {CARLOS}" in c.prompt for c in main.calls)
  # The game master's model is nobody's to answer with: not needed.
  frame = load_run(copy, metrics=False).interviews
  assert list(frame["model"]) == list(answers["model"])


def test_a_model_a_program_handed_over_must_be_given_again(copy, embedder):
  with pytest.raises(UserError, match="'second' was handed over by a "
                     "program: interview it from Python"):
    interview(copy, "rules", model=answering(MAIN), embedder=embedder)
  assert not (copy / "interviews").exists()


def point_second_at(run_dir: Path, base_url: str, key_env: str) -> None:
  """run.json as if `second` had been an endpoint (its key by variable)."""
  path = run_dir / "run.json"
  info = json.loads(path.read_text())
  info["model_spec"]["endpoints"]["second"] = {
      "base_url": base_url, "model": "second-7b", "api_key_env": key_env}
  info["models"]["endpoints"]["second"] = {"endpoint": base_url,
                                           "model": "second-7b"}
  path.write_text(json.dumps(info))


def test_an_endpoint_of_the_run_is_asked_with_its_key_from_its_variable(
    copy, embedder, server, monkeypatch):
  server.responder = lambda request: Reply(json.dumps({"answer": SECOND}))
  point_second_at(copy, server.base_url, "SECOND_KEY")
  monkeypatch.delenv("SECOND_KEY", raising=False)
  with pytest.raises(UserError, match=r"models.endpoints.second: "
                     r"\$SECOND_KEY is not set: export it"):
    interview(copy, "rules", model=answering(MAIN), embedder=embedder)
  assert not server.chat_requests()
  monkeypatch.setenv("SECOND_KEY", "sk-second")
  result = interview(copy, "rules", model=answering(MAIN), embedder=embedder)
  carlos = result.answers[result.answers["agent"] == CARLOS]
  assert set(carlos["answer"]) == {SECOND}
  assert len(server.chat_requests()) == len(carlos)
  assert all(r.headers.get("authorization") == "Bearer sk-second"
             for r in server.chat_requests())
  others = result.answers[result.answers["agent"] != CARLOS]
  assert set(others["answer"]) == {MAIN}


def test_a_model_not_given_again_is_refused_before_any_model_is_built(
    copy, monkeypatch):
  seen = []
  monkeypatch.setattr(
      "crsec_concordia.runs.episode.model_for",
      lambda endpoint, *a: seen.append(endpoint.base_url) or (
          answering(MAIN), {}))
  flags = EndpointConfig(base_url="http://127.0.0.1:7/v1", model="m")
  with pytest.raises(UserError, match="handed over"):
    interview(copy, "rules", endpoint=flags)
  assert seen == []

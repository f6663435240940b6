"""The embedded model for real: llama.cpp in-process, the verified GGUF file.

Slow (a real 1.5B model on CPU, and hashing a 1 GB file), so marked
`embedded`; deselect with `-m "not embedded"`. The server is started once per
process and shared, as a run does. Prompts use the wording that the model
judges well (docs: /work/shared/reference/local-models.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
import yaml

from crsec_concordia.models import OpenAICompatibleModel, embedded
from crsec_concordia.models.base import StructuredOutputError
from crsec_concordia.scenarios.loader import builtin_path

pytestmark = pytest.mark.embedded

BREAKS_RULE = {"type": "object", "additionalProperties": False,
               "required": ["breaks_rule"],
               "properties": {"breaks_rule": {"type": "boolean"}}}
PLACE = {"type": "object", "additionalProperties": False,
         "required": ["place"],
         "properties": {"place": {"type": "string",
                                  "enum": ["indoors", "outdoors"]}}}


def judgement(action: str) -> str:
  return (f"Rule: No smoking indoors.\nWhat happened: {action}\n"
          "Is this person breaking the rule? Reply with one word: yes or no.")


@pytest.fixture(scope="module")
def server() -> embedded.EmbeddedServer:
  return embedded.shared_server()


def model_for(server: embedded.EmbeddedServer,
              schema_mode: str = "json_schema") -> OpenAICompatibleModel:
  return OpenAICompatibleModel(server.base_url, "none", embedded.MODEL_NAME,
                               seed=1, timeout=120, schema_mode=schema_mode)


# -- the server ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["json_schema", "json_object", "grammar"])
def test_a_boolean_judgement_is_schema_constrained(server, mode):
  model = model_for(server, mode)
  answer = model.tagged("NormEvaluator").sample_json(
      judgement("Carlos lights a cigarette at his table inside the café."),
      BREAKS_RULE, max_tokens=32, temperature=0.0)
  jsonschema.validate(answer, BREAKS_RULE)
  assert answer == {"breaks_rule": True}
  usage = model.usage.by_tag()["NormEvaluator"]
  assert usage["calls"] == 1 and usage["failed_calls"] == 0
  assert usage["prompt_tokens"] > 20 and usage["completion_tokens"] > 0


def test_the_embedded_model_answers_on_one_line(server, tmp_path,
                                                 monkeypatch):
  # As a run builds it: the grammar mode with llguidance's one-line option.
  from crsec_concordia.models import EndpointConfig, make_model
  from crsec_concordia.models.call_log import read
  monkeypatch.setenv("CRSEC_CALL_LOG", str(tmp_path / "calls.jsonl"))
  monkeypatch.setattr(embedded, "shared_server", lambda progress=None: server)
  model = make_model(EndpointConfig(), seed=1, check=False)
  schema = {"type": "object", "additionalProperties": False,
            "required": ["hours"], "properties": {"hours": {
                "type": "array", "minItems": 2, "maxItems": 2,
                "items": PLACE}}}
  answer = model.sample_json(
      "Where is each of these: 1. a cigarette lit at a table inside the "
      "café; 2. a cigarette lit on the terrace outside?", schema,
      max_tokens=64, temperature=0.0)
  jsonschema.validate(answer, schema)
  raw = read(tmp_path / "calls.jsonl")[-1]["answer"]
  assert "\n" not in raw and "  " not in raw
  assert json.loads(raw) == answer


def test_an_enum_answer_is_one_of_the_values(server):
  model = model_for(server)
  answers = [
      model.sample_json(f"What happened: {what}\nWhere did it happen: "
                        "indoors or outdoors?", PLACE, max_tokens=32,
                        temperature=0.0)
      for what in (
          "Carlos lights a cigarette on the terrace outside the café.",
          "Carlos lights a cigarette at his table inside the café.")]
  for answer in answers:
    jsonschema.validate(answer, PLACE)
  assert [a["place"] for a in answers] == ["outdoors", "indoors"]


def test_sample_choice_returns_a_listed_option(server):
  index, choice, _ = model_for(server).sample_choice(
      "Carlos lights a cigarette on the terrace outside the café. "
      "Where is he?", ["indoors", "outdoors"])
  assert (index, choice) == (1, "outdoors")


def test_the_server_honours_stop_sequences(server):
  model = model_for(server)
  text = model.sample_text("Count from 1 to 20, separated by commas.",
                           terminators=("7",), max_tokens=60,
                           temperature=0.0)
  assert "7" not in text and "6" in text
  # The server stopped generating: far fewer than 60 tokens were spent.
  assert model.usage.totals()["completion_tokens"] < 40


def test_the_grammar_holds_an_answer_to_its_prompts_scripts(server,
                                                             monkeypatch):
  # llguidance compiles the pattern (a Unicode class, code points as
  # \x{..}, with the string's length bounds), and the letters it leaves
  # out are never written: asked for a word in a script the prompt does
  # not use, the model writes it otherwise, in one request.
  from crsec_concordia.models import EndpointConfig, make_model
  from crsec_concordia.models.scripts import foreign_scripts
  monkeypatch.setattr(embedded, "shared_server", lambda progress=None: server)
  prompt = ("Give the Chinese word for 'noise', written in Chinese "
            "characters.")
  schema = {"type": "object", "additionalProperties": False,
            "required": ["word"], "properties": {"word": {
                "type": "string", "minLength": 1, "maxLength": 40}}}
  model = make_model(EndpointConfig(), seed=1, check=False)
  answer = model.sample_json(prompt, schema, max_tokens=32, temperature=0.0)
  assert foreign_scripts(answer, prompt) == []
  assert model.usage.totals()["calls"] == 1
  # Without the rule in the grammar the same request is answered in
  # Chinese, refused after it is written, and asked again.
  free = model_for(server, "grammar")
  try:
    free.sample_json(prompt, schema, max_tokens=32, temperature=0.0)
  except StructuredOutputError:
    pass  # All attempts in Chinese: a recorded failure.
  assert free.usage.totals()["calls"] > 1


# -- the model file ------------------------------------------------------------


def test_a_verified_file_is_recognised_in_milliseconds(server):
  del server  # Started, so the file is assembled and stamped.
  status = embedded.ensure_model_file()
  assert status.verified and not status.assembled_now
  assert status.seconds < 0.5
  assert status.path.stat().st_size == embedded.MODEL_SIZE


@pytest.fixture(scope="module")
def real_model_file() -> Path:
  """The user's verified model file (assembled first if need be)."""
  return embedded.ensure_model_file().path


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
  """A private CRSEC_CACHE_DIR, so the user's stamp is never touched."""
  monkeypatch.setenv("CRSEC_CACHE_DIR", str(tmp_path))
  assert embedded.model_path().is_relative_to(tmp_path)
  embedded.model_path().parent.mkdir(parents=True)
  return tmp_path


def stamp_of(path: Path) -> Path:
  return path.with_suffix(".verified.json")


@pytest.mark.parametrize("stamp", [
    "{not json",
    json.dumps({"sha256": embedded.MODEL_SHA256, "size": embedded.MODEL_SIZE,
                "mtime_ns": 1}),  # The file changed since it was verified.
])
def test_a_corrupt_or_stale_stamp_makes_the_file_be_hashed_again(
    real_model_file, cache_dir, stamp):
  del cache_dir
  path = embedded.model_path()
  # A link to the real file: hashing it again is cheap, copying 1 GB is not.
  path.symlink_to(real_model_file)
  stamp_of(path).write_text(stamp)
  messages: list[str] = []
  status = embedded.ensure_model_file(messages.append)
  assert status.verified and not status.assembled_now
  assert any(m.startswith("verifying") for m in messages), messages
  assert path.is_symlink()  # Hashed, not rebuilt.
  assert json.loads(stamp_of(path).read_text())["mtime_ns"] == (
      path.stat().st_mtime_ns)
  # Stamped again, so the next start is instant.
  messages.clear()
  again = embedded.ensure_model_file(messages.append)
  assert again.verified and again.seconds < 0.5 and not messages


def test_a_file_with_the_wrong_hash_is_rebuilt_from_the_chunks(cache_dir):
  # The slow path (about 15 s): a file of the right size but other bytes,
  # e.g. a tampered download, must be refused and replaced.
  path = embedded.model_path()
  with open(path, "wb") as f:
    f.truncate(embedded.MODEL_SIZE)  # Sparse: no 1 GB written here.
  stamp_of(path).write_text(json.dumps({"sha256": "0" * 64}))
  try:
    start = time.monotonic()
    status = embedded.ensure_model_file()
    assert status.verified and status.assembled_now
    assert time.monotonic() - start < 120
    assert path.stat().st_size == embedded.MODEL_SIZE
    assert embedded.sha256_of(path) == embedded.MODEL_SHA256  # Independently.
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(
        [path.name, stamp_of(path).name])  # No temporary file left behind.
  finally:
    path.unlink(missing_ok=True)  # pytest keeps tmp dirs: do not keep 1 GB.


# -- a run answered wholly from the cache ---------------------------------------


def test_a_run_answered_from_the_cache_exits_cleanly_without_the_server(
    tmp_path: Path, real_model_file: Path):
  """`make demo` a second time: every call is in the response cache, so the
  run takes a second, exits 0 (it once aborted at exit, see
  test_embedder.py) and never starts the embedded server (2 GB, seconds)."""
  scenario = yaml.safe_load(builtin_path("hobbs_cafe_mini").read_text())
  scenario["agents"] = scenario["agents"][1:2]  # One guest: a cheap run.
  scenario_file = tmp_path / "one_guest.yaml"
  scenario_file.write_text(yaml.safe_dump(scenario))
  cache = tmp_path / "cache"
  cache.mkdir()
  (cache / "models").symlink_to(real_model_file.parent)
  env = {**os.environ, "CRSEC_CACHE_DIR": str(cache)}
  for key in ("CRSEC_BASE_URL", "OPENAI_BASE_URL"):
    env.pop(key, None)

  def run(out: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "crsec_concordia.cli", "run",
         str(scenario_file), "--agents", "baseline", "--steps", "1",
         "--out", str(tmp_path / out)],
        env=env, capture_output=True, text=True, timeout=900, check=False)

  first = run("first")
  assert first.returncode == 0, first.stderr[-2000:]
  assert "model: 0 calls" not in first.stdout  # The server answered.
  second = run("second")
  assert second.returncode == 0, second.stderr[-2000:]
  assert "model: 0 calls (+" in second.stdout

  cost = {"calls", "cached_calls", "failed_calls", "prompt_tokens",
          "completion_tokens", "reused_prompt_tokens"}

  def events(out: str) -> list[dict]:  # What happened, not what it cost.
    lines = (tmp_path / out / "events.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in cost}
            for line in lines]

  assert events("first") == events("second")

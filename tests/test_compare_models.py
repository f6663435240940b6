"""`crsec compare --models FILE` (and `--gm-base-url`): both arms' runs on
the same models by role, checked as `crsec run` checks them.

The first tests replace the runner by a fake (as tests/test_compare.py
does); the last plays both arms for real against two fake servers.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from crsec_concordia import cli, runner
from crsec_concordia.commands import compare
from crsec_concordia.operations.names import STATED_BELIEF
from tests import test_runner as tr
from tests.test_compare import write_known_run
from tests.test_models_by_role import two_servers

MODELS = """\
endpoints:
  large: {base_url: "http://127.0.0.1:9/v1", model: m, api_key_env: LARGE_KEY}
game_master: large
agents: {Tom Gomez: large}
"""


@pytest.fixture
def fake(monkeypatch):
  """A fake runner (every keyword it gets, by arm) and the tiny café."""
  for name in ("CRSEC_BASE_URL", "OPENAI_BASE_URL", "CRSEC_MODEL",
               "OPENAI_MODEL", "CRSEC_SCHEMA_MODE"):
    monkeypatch.delenv(name, raising=False)
  monkeypatch.setenv("LARGE_KEY", "sk-large")
  calls: dict[str, dict] = {}
  lock = threading.Lock()

  def run_episode(scenario, **kwargs):
    del scenario
    with lock:
      calls[kwargs["arm"]] = kwargs
    return write_known_run(Path(kwargs["out_dir"]), kwargs["arm"],
                           kwargs["seed"], kwargs["steps"] or 3)

  monkeypatch.setattr(runner, "run_episode", run_episode)
  monkeypatch.setattr(compare, "load_scenario", lambda name: tr.tiny())
  return calls


def models_file(tmp_path: Path, text: str = MODELS) -> Path:
  path = tmp_path / "models.yaml"
  path.write_text(text)
  return path


def test_both_arms_run_on_the_models_of_the_file(fake, tmp_path):
  out = tmp_path / "cmp"
  assert cli.main(["compare", "tiny", "--seeds", "1", "--steps", "3",
                   "--out", str(out), "--models",
                   str(models_file(tmp_path))]) == 0
  assert set(fake) == {"normative", "baseline"}
  for arm, kwargs in fake.items():
    assert kwargs["models"]["game_master"] == "large", arm
    assert kwargs["models"]["agents"] == {"Tom Gomez": "large"}
    # The referee's policy is that of the game master's model (an
    # endpoint nobody calibrated: trusting), not the embedded one's.
    assert "no calibration of" in kwargs["referee_policy"].source


def test_without_flags_the_runs_get_no_spec(fake, tmp_path):
  assert cli.main(["compare", "tiny", "--seeds", "1", "--steps", "3",
                   "--out", str(tmp_path / "cmp")]) == 0
  assert all("models" not in kwargs for kwargs in fake.values())


def test_a_bad_models_file_is_one_line_per_problem_and_nothing_runs(
    fake, tmp_path, capsys, monkeypatch):
  monkeypatch.delenv("LARGE_KEY")
  bad = models_file(tmp_path, MODELS.replace("Tom Gomez", "Nobody")
                    .replace("game_master: large", "game_master: huge"))
  out = tmp_path / "cmp"
  assert cli.main(["compare", "tiny", "--seeds", "1", "--out", str(out),
                   "--models", str(bad)]) == 2
  err = capsys.readouterr().err
  lines = err.strip().splitlines()
  assert "Traceback" not in err and not out.exists() and not fake
  for words in ("models.endpoints.large: $LARGE_KEY is not set: export it",
                "models.game_master: unknown model 'huge': use large, main",
                "models.agents: unknown agent 'Nobody': use one of"):
    assert sum(words in line for line in lines) == 1, (words, lines)
  assert len(lines) == 3


@pytest.mark.parametrize("argv,words", [
    (["--gm-base-url", "http://127.0.0.1:9/v1"], "give both"),
    (["--models", "nowhere.yaml"], "--models nowhere.yaml: cannot be read"),
])
def test_bad_model_flags_are_one_line(fake, tmp_path, capsys, argv, words):
  out = tmp_path / "cmp"
  assert cli.main(["compare", "tiny", "--seeds", "1", "--out", str(out),
                   *argv]) == 2
  err = capsys.readouterr().err
  assert words in err and len(err.strip().splitlines()) == 1
  assert not out.exists() and not fake


def test_both_arms_put_the_game_master_on_its_own_server(
    tmp_path, embedder, capsys, monkeypatch):
  del embedder  # The command loads the same one.
  monkeypatch.setenv("CRSEC_CACHE_DIR", str(tmp_path / "cache"))
  with two_servers(tmp_path) as (main, gm, scenario):
    out = tmp_path / "cmp"
    assert cli.main(["compare", str(scenario), "--seeds", "1", "--steps",
                     "2", "--out", str(out), "--jobs", "2",
                     "--base-url", main.base_url, "--model", "fake-model",
                     "--gm-base-url", gm.base_url,
                     "--gm-model", "fake-model"]) == 0, (
                         capsys.readouterr().err)
    capsys.readouterr()
    calls = {"main": 0, "game_master": 0}
    for arm in ("normative", "baseline"):
      run_dir = out / arm / "seed_1"
      info = json.loads((run_dir / "run.json").read_text())
      assert info["models"]["game_master"] == "game_master", arm
      assert info["models"]["endpoints"]["game_master"]["endpoint"] == (
          gm.base_url)
      usage = json.loads((run_dir / "usage.json").read_text())["by_model"]
      assert all(t.startswith("GM") for t in usage["game_master"]["by_tag"])
      assert not any(t.startswith("GM") for t in usage["main"]["by_tag"])
      for i in calls:  # The simulation's, and the stated-belief questions.
        calls[i] += usage[i]["totals"]["calls"] + usage[i]["by_tag"].get(
            STATED_BELIEF, {}).get("calls", 0)
    assert calls["game_master"] == len(gm.chat_requests()) > 0
    assert calls["main"] == len(main.chat_requests()) > 0

"""A scenario's `models:` block: the spec of `crsec run --models FILE`,
checked by the scenario loader and played unless a spec is given.

Two scripted cafés (tests/test_runner.py) stand for the endpoints.
"""

from __future__ import annotations

import json

import pytest

from crsec_concordia import cli, runner
from crsec_concordia.runs import model_roles
from crsec_concordia.scenarios import ScenarioError, parse_scenario
from tests import test_runner as tr

BLOCK = """\
models:
  endpoints:
    referee: {base_url: "http://127.0.0.1:9/v1", model: m, api_key_env: REFEREE_KEY}
  game_master: referee
  agents: {Carlos Gomez: referee}
"""


def with_block(block: str = BLOCK):
  return parse_scenario(tr.TINY + block, "tiny.yaml")


def test_the_block_is_read_and_dumped_and_a_scenario_without_it_is_not():
  scenario = with_block()
  assert scenario.models["game_master"] == "referee"
  assert scenario.to_dict()["models"] == scenario.models
  assert "models" not in tr.tiny().to_dict()
  assert tr.tiny().models is None


def test_its_problems_are_lines_among_the_scenarios_others():
  bad = (tr.TINY.replace("max_rounds: 1", "max_rounds: 0")
         + "models:\n  endpoints:\n"
         "    big: {base_url: 'http://user:sk-1@h/v1', api_key: sk-1}\n"
         "  game_master: huge\n  agents: {Nobody: big}\n"
         "  share: {big: 1.5}\n  colour: 1\n")
  with pytest.raises(ScenarioError) as caught:
    parse_scenario(bad, "bad.yaml")
  lines = caught.value.problems
  for words in ("conversation.max_rounds: 0 is out of range",
                "models: unknown key 'colour'; use one of",
                "models.endpoints.big: a key written out ('api_key'); name "
                "the variable holding it instead: api_key_env",
                "models.endpoints.big: no model; add",
                "models.endpoints.big.base_url: holds credentials",
                "models.game_master: unknown model 'huge'; use big, main",
                "models.agents: unknown agent 'Nobody'; use one of Abigail",
                "models.share.big: 1.5 is not a fraction"):
    assert sum(words in line for line in lines) == 1, (words, lines)
  assert all(line.startswith("bad.yaml:") for line in lines)
  # Each on the line of what it is about.
  assert any(line.startswith("bad.yaml:22: models.game_master")
             for line in lines), lines


def test_a_group_in_the_block_is_checked_against_the_drawn_population():
  with pytest.raises(ScenarioError, match="models.groups: unknown group "
                     "'visitors'; use one of"):
    with_block("models:\n  groups: {visitors: main}\n")


def test_a_run_plays_the_block_when_given_no_spec(tmp_path, embedder,
                                                  monkeypatch):
  monkeypatch.setenv("REFEREE_KEY", "x")
  models = {"main": tr.cafe(), "referee": tr.cafe()}
  run_dir = runner.run_episode(
      with_block(), arm="normative", seed=1, out_dir=tmp_path / "block",
      model=models["main"], embedder=embedder, progress=False, steps=2,
      given_models={"referee": models["referee"]})
  info = json.loads((run_dir / "run.json").read_text())
  assert info["models"]["game_master"] == "referee"
  assert info["models"]["agents"]["Carlos Gomez"] == "referee"
  assert info["model_spec"]["agents"] == {"Carlos Gomez": "referee"}
  tags = {c.tag for c in models["referee"].calls}
  assert any(t.startswith("GM") for t in tags)
  assert any("What does Carlos Gomez do next" in c.prompt
             for c in models["referee"].calls)
  assert not any(c.tag.startswith("GM") for c in models["main"].calls)


def test_a_spec_given_replaces_the_block_whole(tmp_path, embedder):
  given = {"game_master": "main"}  # One model, given: the block is not played.
  assert model_roles.spec_of(given, with_block()) == given
  assert model_roles.spec_of(None, with_block())["game_master"] == "referee"
  assert model_roles.spec_of(None, tr.tiny()) is None
  main = tr.cafe()
  run_dir = runner.run_episode(
      with_block(), arm="normative", seed=1, out_dir=tmp_path / "given",
      model=main, embedder=embedder, progress=False, steps=2, models=given)
  assert "models" not in json.loads((run_dir / "run.json").read_text())
  assert any(c.tag.startswith("GM") for c in main.calls)


def test_the_run_command_refuses_a_block_whose_key_variable_is_unset(
    tmp_path, monkeypatch, capsys):
  monkeypatch.delenv("REFEREE_KEY", raising=False)
  scenario = tmp_path / "tiny.yaml"
  scenario.write_text(tr.TINY + BLOCK)
  out = tmp_path / "r"
  assert cli.main(["run", str(scenario), "--out", str(out),
                   "--no-progress"]) == 2
  err = capsys.readouterr().err
  assert "models.endpoints.referee: $REFEREE_KEY is not set: export it" in err
  assert "Traceback" not in err and not out.exists()
  assert len(err.strip().splitlines()) == 1


def test_a_models_file_given_wins_over_the_block_on_the_command_line(
    tmp_path, monkeypatch, capsys):
  monkeypatch.delenv("REFEREE_KEY", raising=False)
  scenario = tmp_path / "tiny.yaml"
  scenario.write_text(tr.TINY + BLOCK)
  models = tmp_path / "models.yaml"
  models.write_text("game_master: nobody\n")
  assert cli.main(["run", str(scenario), "--models", str(models), "--out",
                   str(tmp_path / "r"), "--no-progress"]) == 2
  err = capsys.readouterr().err
  # The file's problem, not the block's: the block is not read.
  assert "unknown model 'nobody'" in err and "REFEREE_KEY" not in err


"""Models by role: the game master on one model, agents on one or several.

Two scripted cafés (tests/test_runner.py) stand for two endpoints: the
calls each receives are counted, every record of the run names the model
that made it, and a run whose model calls finish in other thread orders
writes the same bytes.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from crsec_concordia import cli, runner
from crsec_concordia.errors import UserError
from crsec_concordia.models import EndpointConfig
from crsec_concordia.operations import failure_notice
from crsec_concordia.operations.names import STATED_BELIEF
from crsec_concordia.runs import model_roles
from crsec_concordia.scenarios import load_scenario
from crsec_concordia.runs import session as session_lib
from crsec_concordia.sweeps import driver, grid, runjob, validate
from tests import schema_answers
from tests import test_runner as tr
from tests.fake_openai import FakeOpenAI

GM_ON_ITS_OWN = {"endpoints": {"referee": {}}, "game_master": "referee"}
MIXED = {"endpoints": {"referee": {}, "second": {}},
         "game_master": "referee", "agents": {"Carlos Gomez": "second"}}


def play(tmp_path: Path, embedder, name: str, spec, models) -> Path:
  main = models.pop("main")
  return runner.run_episode(tr.tiny(), arm="normative", seed=1,
                            out_dir=tmp_path / name, model=main,
                            embedder=embedder, progress=False, models=spec,
                            given_models=models)


def events(run_dir: Path) -> list[dict]:
  return tr.records(run_dir)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, embedder):
  models = {"main": tr.cafe(), "referee": tr.cafe(), "second": tr.cafe()}
  run_dir = play(tmp_path_factory.mktemp("mixed"), embedder, "mixed", MIXED,
                 dict(models))
  return run_dir, models


def test_the_game_masters_calls_go_to_its_model_and_the_agents_to_theirs(
    mixed):
  run_dir, models = mixed
  referee = {c.tag for c in models["referee"].calls}
  assert referee and all(t.startswith("GM") for t in referee)
  for agents_model in ("main", "second"):
    tags = {c.tag for c in models[agents_model].calls}
    assert tags and not any(t.startswith("GM") for t in tags)
  # Carlos's acts reach the second model, the others' the main one.
  assert any("What does Carlos Gomez do next" in c.prompt
             for c in models["second"].calls)
  assert not any("What does Carlos Gomez do next" in c.prompt
                 for c in models["main"].calls)
  usage = json.loads((run_dir / "usage.json").read_text())
  # The totals are the simulation's: the stated-belief questions apart.
  simulated = {i: [c for c in m.calls if c.tag != STATED_BELIEF]
               for i, m in models.items()}
  for i, calls in simulated.items():
    assert usage["by_model"][i]["totals"]["calls"] == len(calls), i
  assert usage["totals"]["calls"] == sum(map(len, simulated.values()))


def test_each_record_names_its_model(mixed):
  run_dir, _ = mixed
  records = events(run_dir)
  kinds = set()
  for r in records:
    if r["kind"] == "step":
      assert "model" not in r  # The session's, not a model's.
      continue
    kinds.add(r["kind"])
    agent = r.get("agent")
    if r["kind"] in ("action", "conversation", "talk_dropped"):
      assert r["model"] == "referee", r
    elif agent is not None:
      assert r["model"] == ("second" if agent == "Carlos Gomez"
                            else "main"), r
    else:
      assert r["model"] in ("main", "second"), r
    if r["kind"] == "action":
      assert r["actor_model"] == ("second" if r["actor"] == "Carlos Gomez"
                                  else "main")
  assert {"action", "plan"} <= kinds
  info = json.loads((run_dir / "run.json").read_text())
  assert info["models"]["game_master"] == "referee"
  assert info["models"]["agents"] == {"Abigail Chen": "main",
                                      "Carlos Gomez": "second",
                                      "Tom Gomez": "main"}
  assert set(info["models"]["endpoints"]) == {"main", "referee", "second"}


def test_a_thread_delayed_mixed_run_is_the_same_byte_for_byte(
    mixed, tmp_path, embedder):
  run_dir, _ = mixed
  for seed in (1, 2):
    models = {i: tr.jittery(tr.cafe(), seed * 10 + n)
              for n, i in enumerate(("main", "referee", "second"))}
    delayed = play(tmp_path, embedder, f"delayed{seed}", MIXED, models)
    for name in ("events.jsonl", "usage.json"):
      assert ((delayed / name).read_bytes()
              == (run_dir / name).read_bytes()), name


def test_a_spec_that_names_only_the_main_model_is_a_one_model_run(
    tmp_path, embedder):
  spec = {"game_master": "main", "agents": {"Tom Gomez": "main"}}
  one = play(tmp_path, embedder, "one", spec, {"main": tr.cafe()})
  plain = tr.run(tmp_path, embedder, name="plain")
  assert (one / "events.jsonl").read_bytes() == (
      plain / "events.jsonl").read_bytes()
  assert "models" not in json.loads((one / "run.json").read_text())
  assert "by_model" not in json.loads((one / "usage.json").read_text())


def test_a_bad_spec_says_each_problem_in_one_line():
  spec = {"game_master": "nobody", "groups": {"visitors": "main"},
          "agents": {"Zed": "main"}, "share": {"main": 1.5},
          "endpoints": {"big": {"model": "x"}}, "colour": 1}
  with pytest.raises(UserError) as e:
    model_roles.build_roles(spec, tr.tiny(), 1, tr.cafe(), {}, None)
  lines = str(e.value).splitlines()
  for words in ("unknown key 'colour'", "big: no base_url",
                "unknown model 'nobody'", "unknown group 'visitors'",
                "unknown agent 'Zed'", "1.5 is not a fraction"):
    assert sum(words in line for line in lines) == 1, (words, lines)


def test_a_share_draws_the_same_agents_for_the_same_seed():
  spec = {"endpoints": {"b": {}}, "share": {"b": 2 / 3}}
  first = model_roles.assign(spec, tr.tiny(), 7)
  assert first == model_roles.assign(spec, tr.tiny(), 7)
  assert sorted(first.values()) == ["b", "b", "main"]


def test_the_failure_notice_names_the_model_in_a_run_of_several():
  class Model:
    role_model_id = "big"
  text = failure_notice.tell_once(Model(), {"op": "Reflect", "error": "x"})
  assert text is not None and text.startswith("Reflect (model big):")
  assert failure_notice.notice({"op": "Reflect", "error": "x"}).startswith(
      "Reflect:")


def test_the_cli_refuses_a_bad_models_file(tmp_path, capsys):
  bad = tmp_path / "models.yaml"
  bad.write_text("game_master: nobody\nshare: {main: 2}\n")
  assert cli.main(["run", "--models", str(bad), "--out",
                   str(tmp_path / "r"), "--no-progress"]) == 2
  err = capsys.readouterr().err
  assert "unknown model 'nobody'" in err and "2 is not a fraction" in err
  assert not (tmp_path / "r").exists()


def test_a_mixed_run_resumes_to_the_same_end(mixed, tmp_path, embedder,
                                             monkeypatch):
  run_dir, _ = mixed
  real = session_lib.Session._on_step  # pylint: disable=protected-access

  def on_step(self, step_data):
    real(self, step_data)
    if step_data.step == 2:
      raise KeyboardInterrupt

  monkeypatch.setattr(session_lib.Session, "_on_step", on_step)
  models = {"main": tr.cafe(), "referee": tr.cafe(), "second": tr.cafe()}
  with pytest.raises(KeyboardInterrupt):
    play(tmp_path, embedder, "cut", MIXED, models)
  monkeypatch.undo()
  cut = tmp_path / "cut"
  with pytest.raises(UserError, match="given_models"):
    runner.resume_episode(cut, model=tr.cafe(), embedder=embedder,
                          progress=False)
  runner.resume_episode(cut, model=tr.cafe(), embedder=embedder,
                        progress=False, given_models={"referee": tr.cafe(),
                                                      "second": tr.cafe()})
  for name in ("events.jsonl", "usage.json"):
    assert (cut / name).read_bytes() == (run_dir / name).read_bytes(), name


@contextlib.contextmanager
def two_servers(tmp_path: Path):
  """(main server, game master's server, the tiny scenario's file): two
  fake endpoints answering every schema, stopped on leaving."""
  main, gm = FakeOpenAI().start(), FakeOpenAI().start()
  try:
    for server in (main, gm):
      server.responder = schema_answers.responder()
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(tr.TINY)
    yield main, gm, scenario
  finally:
    main.stop()
    gm.stop()


def test_the_game_master_on_its_own_server_from_the_command_line(
    tmp_path, embedder, capsys):
  del embedder  # The command loads the same one.
  with two_servers(tmp_path) as (main, gm, scenario):
    out = tmp_path / "served"
    assert cli.main(["run", str(scenario), "--steps", "2", "--out", str(out),
                     "--no-progress", "--no-cache",
                     "--base-url", main.base_url, "--model", "fake-model",
                     "--gm-base-url", gm.base_url, "--gm-model",
                     "fake-model"]) == 0
    capsys.readouterr()
    usage = json.loads((out / "usage.json").read_text())["by_model"]
    assert usage["game_master"]["totals"]["calls"] == len(gm.chat_requests())
    stated = usage["main"]["by_tag"][STATED_BELIEF]["calls"]
    assert usage["main"]["totals"]["calls"] + stated == len(
        main.chat_requests())
    assert gm.chat_requests() and main.chat_requests()
    assert all(t.startswith("GM") for t in usage["game_master"]["by_tag"])
    assert not any(t.startswith("GM") for t in usage["main"]["by_tag"])
    info = json.loads((out / "run.json").read_text())
    assert info["models"]["endpoints"]["game_master"]["endpoint"] == (
        gm.base_url)


def test_the_gm_flags_go_together(tmp_path, capsys):
  assert cli.main(["run", "--gm-base-url", "http://localhost:1/v1",
                   "--out", str(tmp_path / "r"), "--no-progress"]) == 2
  assert "give both" in capsys.readouterr().err


def test_the_report_splits_the_metrics_by_model(mixed, capsys):
  run_dir, _ = mixed
  assert cli.main(["report", str(run_dir)]) == 0
  printed = capsys.readouterr().out
  assert "model referee (ScriptedModel, the game master): " in printed
  assert "model second (ScriptedModel, 1 agent): " in printed
  assert "not calibrated: crsec calibrate" in printed
  summary = json.loads((run_dir / "metrics" / "summary.json").read_text())
  rows = {r["model"]: r for r in summary["by_model"]}
  assert set(rows) == {"main", "referee", "second"}
  assert rows["referee"]["game_master"] and rows["referee"]["agents"] == 0
  assert (rows["main"]["agents"], rows["second"]["agents"]) == (2, 1)
  usage = json.loads((run_dir / "usage.json").read_text())["by_model"]
  for i, row in rows.items():
    assert row["calls"] == usage[i]["totals"]["calls"]
    # A given model is never calibrated: the row says how to.
    assert row["calibrated"] is False and "crsec calibrate" in (
        row["calibrate_with"])
  conflicts = [r for r in tr.records(run_dir) if r["kind"] == "conflict"]
  assert sum(r["conflicts"] for r in rows.values()) == len(conflicts)
  assert "held_end.no_smoking_indoors" in rows["main"]
  assert (run_dir / "metrics" / "by_model.csv").is_file()


MIXED_SWEEP = """\
scenarios: [hobbs_cafe_mini]
seeds: 1
steps: 2
conditions:
  one: {}
  mixed:
    models:
      endpoints: {large: {base_url: "http://127.0.0.1:9/v1", model: m}}
      game_master: large
      agents: {Tom Gomez: large}
"""


def test_a_sweep_condition_puts_its_runs_on_models_by_role(tmp_path,
                                                           monkeypatch):
  spec, scenarios = validate.parse_sweep(MIXED_SWEEP, "sweep.yaml", Path("."))
  runs = grid.expand_grid(spec, [s.name for s in scenarios])
  jobs, _, _ = driver.prepare(
      tmp_path, runs, lambda r: scenarios[0],
      grid.endpoint_configs(spec, EndpointConfig), models={
          c: k.models for c, k in spec.conditions.items() if k.models})
  by_condition = {j.id.split("__")[1]: j for j in jobs}
  assert by_condition["one"].models is None
  assert by_condition["mixed"].models["game_master"] == "large"
  seen = {}
  monkeypatch.setattr(runjob.runner, "run_episode",
                      lambda scenario, **kw: seen.update(kw))
  runjob._run_fresh(by_condition["mixed"])  # pylint: disable=protected-access
  assert seen["models"]["agents"] == {"Tom Gomez": "large"}


def test_a_sweep_condition_with_a_bad_models_block_is_refused(tmp_path,
                                                              capsys):
  path = tmp_path / "bad.yaml"
  path.write_text(MIXED_SWEEP.replace("Tom Gomez", "Nobody").replace(
      "game_master: large", "game_master: huge"))
  assert cli.main(["sweep", str(path), "--out", str(tmp_path / "o")]) == 2
  err = capsys.readouterr().err
  assert "conditions.mixed.models.game_master: unknown model 'huge'; use" in (
      err)
  assert "conditions.mixed.models.agents: unknown agent 'Nobody'; use" in err
  assert "Traceback" not in err and not (tmp_path / "o").exists()


def test_calibrate_for_a_run_calibrates_each_of_its_models(
    tmp_path, embedder, monkeypatch, capsys):
  from crsec_concordia.commands import calibrate as command  # pylint: disable=import-outside-toplevel
  from tests import test_calibrate as tc  # pylint: disable=import-outside-toplevel
  run_dir = tmp_path / "run"
  run_dir.mkdir()
  big = "http://127.0.0.1:8/v1"
  (run_dir / "run.json").write_text(json.dumps({
      "scenario": "community_garden", "scenario_path": str(tc.GARDEN),
      "model": tc.ORACLE,
      "models": {"game_master": "big", "agents": {},
                 "endpoints": {"main": tc.ORACLE,
                               "big": {"endpoint": big, "model": "big-7b"}}},
      "model_spec": {"game_master": "big",
                     "endpoints": {"big": {"base_url": big,
                                           "model": "big-7b"}}}}))
  asked = []

  def make(endpoint, **kwargs):
    del kwargs
    asked.append((endpoint.base_url, endpoint.model))
    return tc.oracle_model(tc.load_scenario(str(tc.GARDEN)))

  monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
  monkeypatch.setattr(command, "make_model", make)
  monkeypatch.setattr(command, "shared_embedder", lambda: embedder)
  assert cli.main(["calibrate", "--for-run", str(run_dir), "--base-url",
                   tc.URL, "--model", "oracle-7b", "--no-norms"]) == 0
  assert asked == [(tc.URL, "oracle-7b"), (big, "big-7b")]
  files = sorted(p.name for p in (tmp_path / "data" / "crsec-concordia" /
                                  "calibrations").glob("*.json"))
  assert [f.split(".")[0] for f in files] == ["big-7b", "oracle-7b"]
  assert "calibrate: model big of" in capsys.readouterr().out


def test_a_population_group_goes_to_its_model_and_names_win_over_groups():
  scenario = load_scenario("committed_minority")
  committed = [a.name for a in scenario.agents if a.group == "committed"]
  spec = {"endpoints": {"b": {}, "c": {}}, "groups": {"committed": "b"},
          "agents": {committed[0]: "c"}}
  got = model_roles.assign(spec, scenario, 1)
  assert got[committed[0]] == "c"
  assert {got[n] for n in committed[1:]} == {"b"}
  assert {i for n, i in got.items() if n not in committed} == {"main"}


def test_the_progress_bar_follows_every_models_calls():
  models = {"main": tr.cafe(), "referee": tr.cafe()}
  roles = model_roles.build_roles(GM_ON_ITS_OWN, tr.tiny(), 1, models["main"],
                                  {}, None, {"referee": models["referee"]})
  heard = []
  stop = roles.listen(heard.append)
  models["main"].usage.record("act")
  models["referee"].usage.record("GM.adjudicate")
  stop()
  models["main"].usage.record("act")
  assert heard == ["act", "GM.adjudicate"]


def test_an_agents_failure_to_act_names_the_agents_model():
  """The game master records an agent's failure to act, but the call that
  failed was the agent's: the record names the agent's model; the
  referee's own failures name the game master's."""
  roles = model_roles.ModelRoles(
      models={}, described={}, game_master="referee",
      agents={"Ann Lee": "second"}, spec={})
  records = [
      {"kind": "failure", "agent": "Ann Lee", "op": "Act", "error": "x"},
      {"kind": "failure", "agent": "Bo Chen", "op": "Act", "error": "x"},
      {"kind": "failure", "agent": "game master", "op": "GM.adjudicate"},
      {"kind": "action", "actor": "Ann Lee"}]
  roles.stamp(records, None)
  assert [r["model"] for r in records] == ["second", "main", "referee",
                                           "referee"]
  assert records[3]["actor_model"] == "second"

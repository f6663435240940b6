"""run_episode / resume_episode and the run and resume commands.

The agents are the real CRSEC prefabs answering from the scripted café
(tests/crsec_script.py), the game master adjudicates with a scripted referee,
and the embedder is the real one (loaded once per session).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsec_concordia import cli, runner
from crsec_concordia.errors import UserError
from crsec_concordia.game_masters import adjudication
from crsec_concordia.scenarios import ScenarioError, parse_scenario
from tests import crsec_script as cs
from tests.test_game_master import referee

TINY = """
name: tiny_cafe
premise: A quiet morning at the Tiny Cafe.
setting: Tiny Cafe, a small café with a terrace
clock: {start: "09:00", end: "10:00", minutes_per_step: 10, days: 1}
max_steps: 5
conversation: {max_rounds: 1}
agents:
  - {name: Abigail Chen, role: entrepreneur, persona: A volunteer who dislikes smoke., goal: plan a food drive}
  - {name: Carlos Gomez, role: ordinary, persona: A poet who smokes., goal: write a poem}
  - {name: Tom Gomez, role: ordinary, persona: A loud student., goal: study}
behaviours:
  - {id: smoking_indoors, description: smokes inside the café}
  - {id: smoking_outside, description: smokes outside}
  - {id: loud, description: speaks loudly or shouts indoors}
  - {id: tipped, description: leaves a tip}
target_norms:
  - {id: no_smoking_indoors, text: No smoking indoors., type: injunctive, complies: [smoking_outside], violates: [smoking_indoors]}
"""

TURNS = {
    "Abigail Chen": "Abigail leaves a 15% tip for her tea.",
    "Carlos Gomez": "Carlos lights a cigarette at his table.",
    "Tom Gomez": "Tom shouts across the room to a friend.",
}


def tiny():
  return parse_scenario(TINY, "tiny.yaml")


def cafe() -> cs.ScriptedModel:
  """The scripted café: CRSEC operations, scripted turns and the referee."""
  model = cs.cafe_model()

  def act(prompt: str) -> dict[str, str]:
    if "says aloud" in prompt:  # A conversation turn.
      return {"answer": "Please smoke outside, it bothers people."}
    for name, action in TURNS.items():
      if f"What does {name} do next" in prompt:
        return {"answer": action}
    return {"answer": "sips a coffee."}

  model.add_rule(cs.ACT, act, first=True)
  model.add_rule(r"You are the referee", referee, first=True)
  return model


def run(tmp_path: Path, embedder, name: str = "run", **kwargs) -> Path:
  kwargs.setdefault("arm", "normative")
  return runner.run_episode(tiny(), seed=1, out_dir=tmp_path / name,
                            model=kwargs.pop("model", None) or cafe(),
                            embedder=embedder, progress=False, **kwargs)


def records(run_dir: Path) -> list[dict]:
  with open(run_dir / "events.jsonl", encoding="utf-8") as f:
    return [json.loads(line) for line in f]


GM_KINDS = ("action", "conversation", "step")
STAMPS = ("step", "time", "day", "clock", "evaluated_step", "evaluated_time")


def gm_records(run_dir: Path) -> list[dict]:
  """The game master's records and the step records, in order."""
  return [r for r in records(run_dir) if r["kind"] in GM_KINDS]


def agent_records(run_dir: Path) -> list[str]:
  """The agents' records, order-free (agents' threads interleave them).

  Without their stamps: the components stamp records with a NormMemory
  field another thread may not have updated yet, so two uninterrupted runs
  differ there (docs/requests-gm.md, 1). Tighten once that is fixed.
  """
  return sorted(json.dumps({k: v for k, v in r.items() if k not in STAMPS},
                           sort_keys=True)
                for r in records(run_dir) if r["kind"] not in GM_KINDS)


def norms(run_dir: Path, step: int, stamps: bool = True) -> dict:
  data = json.loads((run_dir / "norms" / f"step_{step:04d}.json").read_text())
  if not stamps:
    for db in data.values():
      db["norms"] = [{k: v for k, v in n.items() if k not in STAMPS}
                     for n in db["norms"]]
  return data


def same_run(a: Path, b: Path) -> None:
  assert gm_records(a) == gm_records(b)
  assert agent_records(a) == agent_records(b)
  assert norms(a, 5, stamps=False) == norms(b, 5, stamps=False)


def info(run_dir: Path) -> dict:
  return json.loads((run_dir / "run.json").read_text())


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, embedder) -> Path:
  return run(tmp_path_factory.mktemp("full"), embedder)


def test_a_run_writes_its_directory(uninterrupted):
  d = uninterrupted
  meta = info(d)
  assert meta["status"] == "completed" and meta["completed_steps"] == 5
  assert meta["arm"] == "normative" and meta["seed"] == 1
  assert meta["max_steps"] == 5 and meta["finished"]
  assert meta["versions"]["gdm-concordia"].startswith("2.4")
  assert json.loads((d / "scenario.json").read_text())["name"] == "tiny_cafe"
  config = json.loads((d / "config.json").read_text())
  assert [i["prefab"] for i in config["instances"]] == [
      "normative__Entity"] * 3 + ["cafe__GameMaster"]
  recs = records(d)
  steps = [r for r in recs if r["kind"] == "step"]
  assert [r["step"] for r in steps] == [1, 2, 3, 4, 5]
  assert all({"kind", "step", "time", "day", "clock"} <= set(r) for r in recs)
  assert steps[-1]["calls"] == json.loads(
      (d / "usage.json").read_text())["totals"]["calls"]
  actions = [r for r in recs if r["kind"] == "action"]
  assert len(actions) == 5
  smoking = [a for a in actions if a["actor"] == "Carlos Gomez"]
  assert smoking and all(a["behaviours"] == ["smoking_indoors"]
                         for a in smoking)
  assert any(r["kind"] == "conversation" for r in recs)
  assert any(r["kind"] == "created" for r in recs)
  assert sorted(p.name for p in (d / "norms").iterdir()) == [
      f"step_{n:04d}.json" for n in range(1, 6)]
  assert set(norms(d, 5)) == {"Abigail Chen", "Carlos Gomez", "Tom Gomez"}
  assert sorted(p.name for p in (d / "checkpoints").iterdir()) == [
      "step_4_checkpoint.json", "step_5_checkpoint.json"]
  usage = json.loads((d / "usage.json").read_text())
  assert usage["by_tag"]["GM.adjudicate"]["calls"] == 5
  assert "<html" in (d / "log.html").read_text().lower()
  assert (d / "run.log").exists()


class Crash(Exception):
  pass


def test_a_crashed_run_resumes_to_the_same_end(tmp_path, embedder,
                                                uninterrupted, monkeypatch):
  real = adjudication.Adjudication.adjudicate
  calls = []

  def crash_at_step_4(self, actor, action, situation=""):
    calls.append(actor)
    if len(calls) == 4:
      raise Crash("the machine went down")
    return real(self, actor, action, situation)

  monkeypatch.setattr(adjudication.Adjudication, "adjudicate", crash_at_step_4)
  with pytest.raises(Crash):
    run(tmp_path, embedder)
  d = tmp_path / "run"
  meta = info(d)
  assert meta["status"] == "interrupted" and meta["completed_steps"] == 3
  assert [r["step"] for r in records(d) if r["kind"] == "step"] == [1, 2, 3]
  monkeypatch.undo()

  assert runner.resume_episode(d, model=cafe(), embedder=embedder,
                               progress=False) == d
  meta = info(d)
  assert meta["status"] == "completed" and meta["completed_steps"] == 5
  assert meta["resumed"][0]["from_step"] == 3
  same_run(d, uninterrupted)
  for step in range(1, 6):
    assert (norms(d, step, stamps=False)
            == norms(uninterrupted, step, stamps=False)), step
  assert (json.loads((d / "usage.json").read_text())["totals"]
          == json.loads((uninterrupted / "usage.json").read_text())["totals"])


def test_a_resumed_run_can_be_interrupted_and_resumed_again(
    tmp_path, embedder, uninterrupted, monkeypatch):
  real = runner._Session._on_step  # pylint: disable=protected-access
  flushed = []

  def interrupt_after(limit):
    def on_step(self, step_data):
      real(self, step_data)
      flushed.append(step_data.step)
      if len(flushed) == limit:
        raise KeyboardInterrupt
    return on_step

  monkeypatch.setattr(runner._Session, "_on_step", interrupt_after(2))  # pylint: disable=protected-access
  with pytest.raises(KeyboardInterrupt):
    run(tmp_path, embedder)
  d = tmp_path / "run"
  assert info(d)["completed_steps"] == 2
  flushed.clear()
  monkeypatch.setattr(runner._Session, "_on_step", interrupt_after(2))  # pylint: disable=protected-access
  with pytest.raises(KeyboardInterrupt):
    runner.resume_episode(d, model=cafe(), embedder=embedder, progress=False)
  assert info(d)["completed_steps"] == 4
  assert info(d)["status"] == "interrupted"
  monkeypatch.undo()
  runner.resume_episode(d, model=cafe(), embedder=embedder, progress=False)
  assert info(d)["status"] == "completed"
  same_run(d, uninterrupted)


def test_the_baseline_arm_has_no_norms(tmp_path, embedder):
  d = run(tmp_path, embedder, arm="baseline", steps=3)
  assert info(d)["max_steps"] == 3 and info(d)["status"] == "completed"
  kinds = {r["kind"] for r in records(d)}
  assert kinds == {"action", "step"}
  assert not list((d / "norms").iterdir())


def test_run_refuses_bad_arguments_and_creates_nothing(tmp_path, embedder):
  with pytest.raises(UserError, match="unknown arm"):
    run(tmp_path, embedder, arm="nihilist")
  with pytest.raises(UserError, match="at least 1"):
    run(tmp_path, embedder, steps=0)
  assert not (tmp_path / "run").exists()
  (tmp_path / "run").mkdir()
  (tmp_path / "run" / "something").write_text("x")
  with pytest.raises(UserError, match="not empty"):
    run(tmp_path, embedder)


def test_resume_refuses_what_it_cannot_resume(tmp_path, uninterrupted):
  with pytest.raises(UserError, match="not a directory"):
    runner.resume_episode(tmp_path / "nowhere", model=cafe())
  with pytest.raises(UserError, match="no run.json"):
    runner.resume_episode(tmp_path, model=cafe())
  with pytest.raises(UserError, match="already completed"):
    runner.resume_episode(uninterrupted, model=cafe())
  fresh = tmp_path / "fresh"
  fresh.mkdir()
  (fresh / "run.json").write_text(json.dumps(
      {**info(uninterrupted), "status": "interrupted", "completed_steps": 0}))
  (fresh / "scenario.json").write_text(
      (uninterrupted / "scenario.json").read_text())
  with pytest.raises(UserError, match="nothing to resume"):
    runner.resume_episode(fresh, model=cafe())
  (fresh / "run.json").write_text(json.dumps(
      {**info(uninterrupted), "status": "interrupted", "completed_steps": 2}))
  with pytest.raises(UserError, match="no checkpoint"):
    runner.resume_episode(fresh, model=cafe())


def test_the_run_command_reports_a_malformed_scenario_and_creates_nothing(
    tmp_path, capsys):
  bad = tmp_path / "bad.yaml"
  bad.write_text(TINY.replace("minutes_per_step: 10", "minutes_per_step: -5")
                 .replace("role: ordinary", "role: gardener"))
  out = tmp_path / "out"
  assert cli.main(["run", str(bad), "--out", str(out)]) == 2
  err = capsys.readouterr().err
  with pytest.raises(ScenarioError) as problems:
    runner.load(bad)
  for line in problems.value.problems:
    assert line in err
  assert len(problems.value.problems) >= 2
  assert not out.exists()


def test_the_run_and_resume_commands(tmp_path, embedder, monkeypatch, capsys):
  monkeypatch.setattr(runner, "make_model", lambda *a, **k: cafe())
  monkeypatch.setattr(runner, "_embedder_for", lambda e: embedder)
  scenario_file = tmp_path / "tiny.yaml"
  scenario_file.write_text(TINY)
  out = tmp_path / "out"
  assert cli.main(["run", str(scenario_file), "--seed", "2", "--steps", "2",
                   "--out", str(out), "--no-progress"]) == 0
  printed = capsys.readouterr().out
  assert f"run directory: {out}" in printed
  assert "completed: 2/2 steps" in printed
  assert "events by behaviour:" in printed and "conversations:" in printed
  assert info(out)["seed"] == 2
  assert cli.main(["resume", str(out), "--no-progress"]) == 2
  assert "already completed" in capsys.readouterr().err


def test_a_run_that_lost_only_its_ending_is_finished_by_resume(
    tmp_path, embedder):
  d = run(tmp_path, embedder, steps=2)
  (d / "log.html").unlink()
  meta = info(d)
  (d / "run.json").write_text(json.dumps({**meta, "status": "running"}))
  before = records(d)
  model = cafe()
  runner.resume_episode(d, model=model, embedder=embedder, progress=False)
  assert info(d)["status"] == "completed" and records(d) == before
  assert (d / "log.html").is_file() and model.calls == []

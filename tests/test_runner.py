"""run_episode / resume_episode and the run and resume commands.

The agents are the real CRSEC prefabs answering from the scripted café
(tests/crsec_script.py), the game master adjudicates with a scripted referee,
and the embedder is the real one (loaded once per session).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from crsec_concordia import cli, embedding, runner
from crsec_concordia.commands import run as run_cmd
from crsec_concordia.errors import UserError
from crsec_concordia.operations.names import STATED_BELIEF
from crsec_concordia.runs import episode, session
from crsec_concordia.scenarios import ScenarioError, parse_scenario
from tests import crsec_script as cs
from tests.machine_down import down_in_slot
from tests.metrics_fixtures import RunBuilder
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
  model.add_rule(cs.LOOK, cs.look_none, first=True)
  return model


def run(tmp_path: Path, embedder, name: str = "run", **kwargs) -> Path:
  kwargs.setdefault("arm", "normative")
  return runner.run_episode(tiny(), seed=1, out_dir=tmp_path / name,
                            model=kwargs.pop("model", None) or cafe(),
                            embedder=embedder, progress=False, **kwargs)


def records(run_dir: Path) -> list[dict]:
  with open(run_dir / "events.jsonl", encoding="utf-8") as f:
    return [json.loads(line) for line in f]


def norms(run_dir: Path, step: int) -> dict:
  return json.loads((run_dir / "norms" / f"step_{step:04d}.json").read_text())


def same_run(a: Path, b: Path) -> None:
  """The same records in the same order, norm databases and usage."""
  assert records(a) == records(b)
  steps = len([r for r in records(a) if r["kind"] == "step"])
  for step in range(1, steps + 1):
    assert norms(a, step) == norms(b, step), step
  assert (json.loads((a / "usage.json").read_text())
          == json.loads((b / "usage.json").read_text()))
  # What the gates skipped: counted on from the checkpoint on a resume.
  assert (json.loads((a / "gates.json").read_text())
          == json.loads((b / "gates.json").read_text()))


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
      "normative__Entity"] * 3 + ["venue__GameMaster"]
  recs = records(d)
  steps = [r for r in recs if r["kind"] == "step"]
  assert [r["step"] for r in steps] == [1, 2, 3, 4, 5]
  assert all({"kind", "step", "time", "day", "clock"} <= set(r) for r in recs)
  assert steps[-1]["calls"] == json.loads(
      (d / "usage.json").read_text())["totals"]["calls"]
  actions = [r for r in recs if r["kind"] == "action"]
  # Every agent acted in every slot.
  assert sorted((a["step"], a["actor"]) for a in actions) == [
      (n, name) for n in range(1, 6) for name in sorted(TURNS)]
  assert all(r["actors"] == sorted(TURNS) for r in steps)
  smoking = [a for a in actions if a["actor"] == "Carlos Gomez"]
  assert smoking and all(a["behaviours"] == ["smoking_indoors"]
                         for a in smoking)
  assert any(r["kind"] == "conversation" for r in recs)
  assert any(r["kind"] == "created" for r in recs)
  assert sorted(p.name for p in (d / "norms").iterdir()) == [
      f"step_{n:04d}.json" for n in range(1, 6)]
  assert set(norms(d, 5)) == {"Abigail Chen", "Carlos Gomez", "Tom Gomez"}
  assert sorted(p.name for p in (d / "checkpoints").iterdir()) == [
      "log.jsonl", "step_4_checkpoint.json", "step_5_checkpoint.json"]
  # Concordia's raw log, a slot a line, not in the checkpoints.
  assert [e["Step"] for e in map(json.loads, open(
      d / "checkpoints" / "log.jsonl", encoding="utf-8"))] == [1, 2, 3, 4, 5]
  assert json.loads((d / "checkpoints" / "step_5_checkpoint.json")
                    .read_text())["raw_log"] == []
  usage = json.loads((d / "usage.json").read_text())
  # A continued action is carried forward, not adjudicated again.
  continued = [a for a in actions if a.get("continued")]
  # Going on with no call, or asked (news) and answering the same action.
  assert continued and all(a["act_reasons"] == ["continued"]
                           or a["act_reasons"][-1] == "went on"
                           for a in continued)
  assert usage["by_tag"]["GM.adjudicate"]["calls"] == 15 - len(continued)
  assert "<html" in (d / "log.html").read_text().lower()
  assert (d / "run.log").exists()


def test_entrepreneurs_create_their_norms_before_the_first_slot(
    tmp_path, embedder):
  """CreateNorm is setup: made before slot 1, every agent's first plan and
  act start together; its records still carry slot 1's time."""
  model = cafe()
  d = run(tmp_path, embedder, model=model, steps=1)
  tags = [c.tag for c in model.calls]
  # The agents' stated rules are asked before anything (the start's).
  first = next(i for i, t in enumerate(tags) if t != STATED_BELIEF)
  assert first > 0
  tags = tags[first:]
  assert tags[0] == "CreateNorm" and tags.count("CreateNorm") == 1
  created = [r for r in records(d) if r["kind"] == "created"]
  assert created and {(r["agent"], r["step"], r["time"]) for r in created} == {
      ("Abigail Chen", 1, "Day 1 09:00")}
  assert norms(d, 1)["Abigail Chen"]


def _crashed_in_slot_4(tmp_path, embedder, monkeypatch):
  """A run whose machine went down in slot 4; its run directory."""
  with down_in_slot(monkeypatch, 4):
    run(tmp_path, embedder)
  return tmp_path / "run"


def test_a_crashed_run_resumes_to_the_same_end(tmp_path, embedder,
                                                uninterrupted, monkeypatch):
  d = _crashed_in_slot_4(tmp_path, embedder, monkeypatch)
  meta = info(d)
  assert meta["status"] == "interrupted: error" and meta["completed_steps"] == 3
  assert [r["step"] for r in records(d) if r["kind"] == "step"] == [1, 2, 3]

  assert runner.resume_episode(d, model=cafe(), embedder=embedder,
                               progress=False) == d
  meta = info(d)
  assert meta["status"] == "completed" and meta["completed_steps"] == 5
  assert meta["resumed"][0]["from_step"] == 3
  same_run(d, uninterrupted)


def test_a_run_written_under_the_old_game_master_name_still_resumes(
    tmp_path, embedder, uninterrupted, monkeypatch):
  """The game master prefab was `cafe__GameMaster` (its clock `CafeClock`)
  until 2026-11-23; run directories checkpointed then still resume."""
  d = _crashed_in_slot_4(tmp_path, embedder, monkeypatch)
  for checkpoint in (d / "checkpoints").glob("step_*_checkpoint.json"):
    text = checkpoint.read_text()
    assert '"venue__GameMaster"' in text and '"SlotClock"' in text
    checkpoint.write_text(text.replace('"venue__GameMaster"',
                                       '"cafe__GameMaster"').replace(
                                           '"SlotClock"', '"CafeClock"'))
  runner.resume_episode(d, model=cafe(), embedder=embedder, progress=False)
  assert info(d)["status"] == "completed"
  same_run(d, uninterrupted)


def test_a_resumed_run_can_be_interrupted_and_resumed_again(
    tmp_path, embedder, uninterrupted, monkeypatch):
  real = session.Session._on_step  # pylint: disable=protected-access
  flushed = []

  def interrupt_after(limit):
    def on_step(self, step_data):
      real(self, step_data)
      flushed.append(step_data.step)
      if len(flushed) == limit:
        raise KeyboardInterrupt
    return on_step

  monkeypatch.setattr(session.Session, "_on_step", interrupt_after(2))  # pylint: disable=protected-access
  with pytest.raises(KeyboardInterrupt):
    run(tmp_path, embedder)
  d = tmp_path / "run"
  assert info(d)["completed_steps"] == 2
  flushed.clear()
  monkeypatch.setattr(session.Session, "_on_step", interrupt_after(2))  # pylint: disable=protected-access
  with pytest.raises(KeyboardInterrupt):
    runner.resume_episode(d, model=cafe(), embedder=embedder, progress=False)
  assert info(d)["completed_steps"] == 4
  assert info(d)["status"] == "interrupted: killed"
  monkeypatch.undo()
  runner.resume_episode(d, model=cafe(), embedder=embedder, progress=False)
  assert info(d)["status"] == "completed"
  same_run(d, uninterrupted)


def test_the_baseline_arm_has_no_norms(tmp_path, embedder):
  d = run(tmp_path, embedder, arm="baseline", steps=3)
  assert info(d)["max_steps"] == 3 and info(d)["status"] == "completed"
  kinds = {r["kind"] for r in records(d)}
  # Its plans (made without norms) and actions; nothing of CRSEC.
  assert kinds == {"action", "plan", "tasks", "step"}
  assert all(r["norms_observed"] == [] for r in records(d)
             if r["kind"] == "plan")
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
  monkeypatch.setattr(episode, "make_model", lambda *a, **k: cafe())
  monkeypatch.setattr(episode, "embedder_for", lambda e: embedding.of(embedder))
  scenario_file = tmp_path / "tiny.yaml"
  scenario_file.write_text(TINY)
  out = tmp_path / "out"
  assert cli.main(["run", str(scenario_file), "--seed", "2", "--steps", "2",
                   "--out", str(out), "--no-progress"]) == 0
  printed = capsys.readouterr().out
  assert f"run directory: {out}" in printed
  assert "completed: 2/2 steps" in printed
  assert "events by behaviour:" in printed and "conversations:" in printed
  # The page can be watched while a run goes (`crsec view --serve`).
  assert (f"watch it: crsec view {out} --serve (also while a run goes"
          in printed)
  # 3 agents, 2 slots of 10 minutes: a third of an agent-hour each.
  summary = runner.summarize(out)
  costs = summary["per_agent_hour"]
  calls = json.loads((out / "usage.json").read_text())["totals"]["calls"]
  assert costs["total"]["calls"] == pytest.approx(calls / (3 * 20 / 60))
  assert "per agent and simulated hour:" in printed
  assert "prompt tokens the server reused" in printed
  assert "new actions without one of the agent's own" in printed
  # In slot 2 nothing is new to anyone's act (the entrepreneur raises the
  # conflicts she notices in a talk): all three go on with no call, which
  # is not counted as a repeat.
  assert (summary["actions"], summary["continued"], summary["repeated"]) == (
      6, 3, 0)
  assert summary["act_reasons"] == {"continued": 3, "task begins": 3}
  assert "actions: 6, of them 3 going on from an earlier slot" in printed
  assert "why act calls were made: task begins 3" in printed
  # Each new action is near a behaviour and its tag the actor's own.
  assert summary["referee"] == {"spared": 0, "far_tags": 0, "not_by_actor": 0,
                                "looks": 0, "looked_tags": 0}
  assert ("new actions that repeat the agent's previous one word for word: "
          "0 of 3 (0%)") in printed
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


def jittery(model, seed: int):
  """The model, answering after a random delay: threads finish in any order."""
  rng, lock = random.Random(seed), threading.Lock()
  answer = model.sample_json

  def sample_json(*args, **kwargs):
    with lock:
      delay = rng.random() * 0.02
    time.sleep(delay)
    return answer(*args, **kwargs)

  model.sample_json = sample_json
  return model


def test_runs_whose_threads_finish_in_other_orders_are_identical(
    tmp_path, embedder, uninterrupted):
  for seed in (1, 2):
    d = run(tmp_path, embedder, name=f"jitter{seed}",
            model=jittery(cafe(), seed))
    same_run(d, uninterrupted)
    last = json.loads((d / "checkpoints" / "step_5_checkpoint.json")
                      .read_text())
    first = json.loads((uninterrupted / "checkpoints" /
                        "step_5_checkpoint.json").read_text())
    assert last["entities"] == first["entities"]
    assert last["game_masters"] == first["game_masters"]


def test_a_run_killed_mid_slot_resumes_identical(tmp_path, embedder,
                                                  uninterrupted):
  """Killed (SIGKILL: nothing flushed, nothing marked) in the middle of slot 3."""
  script = tmp_path / "victim.py"
  out = tmp_path / "killed"
  script.write_text(f"""
import os, signal, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
from tests import test_runner as tr
from crsec_concordia.embedding import shared_embedder
from crsec_concordia.game_masters import adjudication
real, calls = adjudication.Adjudication.resolve_action, []
def kill_in_slot_3(self, actor, raw_action, stamp):
  if stamp.step == 3:
    calls.append(actor)
  if len(calls) == 2:  # Slot 3's second action resolved.
    os.kill(os.getpid(), signal.SIGKILL)
  return real(self, actor, raw_action, stamp)
adjudication.Adjudication.resolve_action = kill_in_slot_3
tr.run(tr.Path({str(tmp_path)!r}), shared_embedder(), name="killed")
""")
  done = subprocess.run([sys.executable, str(script)], capture_output=True,
                        timeout=240, check=False)
  assert done.returncode == -signal.SIGKILL
  assert info(out)["completed_steps"] == 2 and info(out)["status"] == "running"
  runner.resume_episode(out, model=cafe(), embedder=embedder, progress=False)
  assert info(out)["status"] == "completed"
  same_run(out, uninterrupted)


def test_the_summary_counts_the_referees_own_checks(tmp_path, capsys):
  """Actions not put to the referee and tags it kept apart (tag_gate.py,
  doer_check.py) are counted in the run's summary."""
  b = RunBuilder(tmp_path / "run", steps=3)
  base = {"action": "x", "narration": "x", "place": "indoors",
          "evidence": "none", "behaviours": []}
  b.record("action", 1, actor="A", **base, referee_asked=False)
  b.record("action", 1, actor="B", **base, far_from_action=["loud"])
  b.record("action", 2, actor="A", **base, referee_asked=False)
  b.record("action", 2, actor="B", **base,
           not_by_actor=["loud", "tipped"])
  b.record("action", 2, actor="C", **{**base, "behaviours": ["loud"]},
           second_look={"candidates": {"loud": 0.4}, "behaviour": "loud",
                        "evidence": "x", "accepted": True})
  b.record("action", 3, actor="C", **{**base, "behaviours": ["loud"]},
           continued=True,
           second_look={"candidates": {"loud": 0.4}, "behaviour": "loud",
                        "evidence": "x", "accepted": True})
  b.record("action", 3, actor="A", **base,
           second_look={"candidates": {"loud": 0.3}, "behaviour": "none",
                        "evidence": "x", "accepted": False})
  run_cmd.print_summary(b.write())
  # A continued action's look is the one of the action it continues.
  assert runner.summarize(tmp_path / "run")["referee"] == {
      "spared": 2, "far_tags": 1, "not_by_actor": 2, "looks": 2,
      "looked_tags": 1}
  assert ("referee: 2 actions not put to it (far from every behaviour); "
          "tags kept apart: 1 far from the action, 2 not the actor's; "
          "second looks where no tag counted: 2, 1 of them tagged"
          ) in capsys.readouterr().out

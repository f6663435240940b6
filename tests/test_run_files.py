"""A run's files: recovered alike after a torn write, one writer, same bytes.

Every file a run appends to (events.jsonl, checkpoints/log.jsonl, run.log)
is cut back to the last committed slot by one function
(crsec_concordia/rundir/recovery.py); a run is written by one process at a
time (rundir/lock.py); and two runs of a seed, or a run killed and
resumed, write the same bytes. The run is test_runner's tiny café on the
scripted model, one of whose agents' act answers fails every time, so that
run.log has a line in every slot.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench import kill_resume
from crsec_concordia import cli, embedding, runner
from crsec_concordia.rundir import format as run_format
from crsec_concordia.rundir import lock, recovery
from crsec_concordia.rundir import writing as rundir
from crsec_concordia.runs import episode
from tests import crsec_script as cs
from tests import test_runner as tr
from tests.machine_down import Crash, down_in_slot

# run.json's fields that differ between two runs of a seed: their times.
TIMES = ("started", "finished", "wall_seconds")


def failing_cafe() -> cs.ScriptedModel:
  """The scripted café, where Tom's act answer never fits its schema: a
  failure record, and a line in run.log, in every slot he acts."""
  model = tr.cafe()
  model.add_rule(rf"^(?=.*{cs.ACT})(?=.*What does Tom Gomez do next)",
                 {"nothing": "fits"}, first=True)
  return model


def run(tmp_path: Path, embedder, name: str = "run", **kwargs) -> Path:
  return tr.run(tmp_path, embedder, name=name,
                model=kwargs.pop("model", None) or failing_cafe(), **kwargs)


def resume(run_dir: Path, embedder) -> Path:
  return runner.resume_episode(run_dir, model=failing_cafe(),
                               embedder=embedder, progress=False)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, embedder) -> Path:
  return run(tmp_path_factory.mktemp("full"), embedder)


def files(run_dir: Path) -> dict[str, bytes]:
  return {p.relative_to(run_dir).as_posix(): p.read_bytes()
          for p in sorted(run_dir.rglob("*")) if p.is_file()}


def test_run_log_has_each_slots_lines_led_by_the_slot(uninterrupted):
  lines = (uninterrupted / "run.log").read_text().splitlines()
  for n in range(1, 6):
    assert any(line.startswith(f"slot {n}: WARNING ")
               and f"step {n}: Act failed for Tom Gomez" in line
               for line in lines), (n, lines)


def committed_part(run_dir: Path, name: str, steps: int) -> bytes:
  """The first `steps` slots of one appended file of a whole run."""
  kept, slot = b"", 1
  for line in (run_dir / name).open("rb"):
    if name == run_format.EVENTS:
      slot = kept.count(b'"kind": "step"') + 1
    elif name == "checkpoints/log.jsonl":
      slot = json.loads(line)["Step"]
    elif not line.startswith(b" "):  # run.log: `slot 3: ...`, `after ...`
      lead = line.split(b":")[0].split()
      slot = int(lead[-1]) + (lead[0] == b"after")
    if slot > steps:
      break
    kept += line
  return kept


def test_recover_cuts_each_file_where_the_committed_slot_ends(
    tmp_path, uninterrupted):
  """Slot 3's end by each file's own marks: events.jsonl's step record,
  log.jsonl's entry, run.log's lines led by their slot; what follows
  (slots 4 and 5, a line torn in half) goes."""
  d = tmp_path / "copy"
  shutil.copytree(uninterrupted, d)
  with open(d / "run.log", "a", encoding="utf-8") as f:
    f.write("after slot 5: ERROR absl: the machine went dow")
  lengths = recovery.recover(d, {**tr.info(d), "completed_steps": 3})

  expected = {n: committed_part(uninterrupted, n, 3)
              for n in run_format.APPENDED}
  assert {n: (d / n).read_bytes() for n in expected} == expected
  assert lengths == {n: len(b) for n, b in expected.items()}
  assert sorted(p.name for p in (d / "norms").iterdir()) == [
      f"step_000{n}.json" for n in (1, 2, 3)]


def test_two_runs_of_a_seed_are_the_same_bytes(tmp_path, embedder,
                                               uninterrupted):
  """Threads finishing in another order (a jittery model) change nothing:
  every file is the same, byte for byte, but run.json's times."""
  other = run(tmp_path, embedder, model=tr.jittery(failing_cafe(), 3))
  a, b = files(uninterrupted), files(other)
  assert sorted(a) == sorted(b)
  assert [n for n in a if n != "run.json" and a[n] != b[n]] == []
  assert set(a) >= {"checkpoints/log.jsonl", "log.json", "run.log"}
  first, second = (json.loads(f["run.json"]) for f in (a, b))
  assert ({k: v for k, v in first.items() if k not in TIMES}
          == {k: v for k, v in second.items() if k not in TIMES})


def test_a_run_killed_and_resumed_is_the_same_bytes(tmp_path, embedder,
                                                    uninterrupted,
                                                    monkeypatch):
  with down_in_slot(monkeypatch, 4):
    run(tmp_path, embedder)
  d = tmp_path / "run"
  assert tr.info(d)["completed_steps"] == 3
  assert "the machine went down" in (d / "run.log").read_text()
  resume(d, embedder)
  assert kill_resume.differences(uninterrupted, d) == []
  a, b = files(uninterrupted), files(d)
  assert [n for n in a if n != "run.json" and a[n] != b[n]] == []


def said(capsys) -> list[str]:
  """What the command said on stderr (the embedder's loading bar aside)."""
  err = capsys.readouterr().err
  assert "Traceback" not in err
  return [line for line in err.splitlines() if line.startswith("crsec:")]


def tear_in_slot(monkeypatch, name: str, slot: int = 4) -> None:
  """The `slot`-th append to the run's file `name` writes half its text,
  and the machine goes down."""
  real = rundir.append_lines
  seen = []

  def append(path, lines):
    lines = list(lines)
    if Path(path).as_posix().endswith(name):
      seen.append(path)
      if len(seen) == slot:
        text = "".join(lines)
        with open(path, "a", encoding="utf-8") as f:
          f.write(text[:len(text) // 2])
        raise Crash("the machine went down in the middle of a line")
    real(path, lines)

  monkeypatch.setattr(rundir, "append_lines", append)


@pytest.mark.parametrize("name", run_format.APPENDED)
def test_a_torn_last_line_of_each_appended_file_is_recovered(
    tmp_path, embedder, uninterrupted, monkeypatch, name):
  with monkeypatch.context() as patch:
    tear_in_slot(patch, name)
    with pytest.raises(Crash):
      run(tmp_path, embedder)
  d = tmp_path / "run"
  info = tr.info(d)
  assert info["status"].startswith("interrupted") and info["completed_steps"] == 3
  torn = (d / name).read_bytes()
  assert len(torn) > len(committed_part(uninterrupted, name, 3))
  resume(d, embedder)
  assert tr.info(d)["status"] == "completed"
  assert kill_resume.differences(uninterrupted, d) == []


def test_a_file_that_cannot_be_brought_back_is_named_and_nothing_changes(
    tmp_path, embedder, monkeypatch, capsys):
  with down_in_slot(monkeypatch, 4):
    run(tmp_path, embedder)
  d = tmp_path / "run"
  events = d / "events.jsonl"
  whole = events.read_bytes()
  events.write_bytes(whole[:-200])  # Committed records lost.
  before = files(d)
  monkeypatch.setattr(episode, "make_model", lambda *a, **k: failing_cafe())
  monkeypatch.setattr(episode, "embedder_for",
                      lambda e: embedding.of(embedder))
  assert cli.main(["resume", str(d), "--no-progress"]) == 2
  err = said(capsys)
  assert len(err) == 1 and str(events) in err[0]
  assert "cannot be brought back to slot 3" in err[0]
  assert files(d) == before
  assert tr.info(d)["status"].startswith("interrupted")
  events.write_bytes(whole)
  (d / "checkpoints" / "log.jsonl").unlink()
  with pytest.raises(recovery.Unrecoverable, match="log.jsonl.*missing"):
    recovery.recover(d, tr.info(d))


def test_two_resumes_at_once_one_is_refused_and_the_run_stays_right(
    tmp_path, embedder, uninterrupted, monkeypatch, capsys):
  with down_in_slot(monkeypatch, 4):
    run(tmp_path, embedder)
  d = tmp_path / "run"
  # The first resume is held in its first model call, its lock taken.
  calling, go_on = threading.Event(), threading.Event()
  first = failing_cafe()
  answer = first.sample_json

  def held(*args, **kwargs):
    calling.set()
    go_on.wait(60)
    return answer(*args, **kwargs)

  first.sample_json = held
  done = []
  thread = threading.Thread(target=lambda: done.append(
      runner.resume_episode(d, model=first, embedder=embedder,
                            progress=False)))
  thread.start()
  try:
    assert calling.wait(60)
    monkeypatch.setattr(episode, "make_model", lambda *a, **k: failing_cafe())
    monkeypatch.setattr(episode, "embedder_for",
                      lambda e: embedding.of(embedder))
    assert cli.main(["resume", str(d), "--no-progress"]) == 2
    err = said(capsys)
    assert len(err) == 1 and "being written by another crsec process" in err[0]
  finally:
    go_on.set()
    thread.join(120)
  assert done == [d]
  assert kill_resume.differences(uninterrupted, d) == []


def test_another_process_holding_the_lock_refuses_run_and_resume(
    tmp_path, embedder, monkeypatch):
  with down_in_slot(monkeypatch, 4):
    run(tmp_path, embedder)
  d = tmp_path / "run"
  holder = subprocess.Popen(
      [sys.executable, "-c", "import fcntl, sys, time\n"
       f"f = open({str(d / run_format.RUN_LOCK)!r}, 'a')\n"
       "fcntl.flock(f, fcntl.LOCK_EX)\nprint('held', flush=True)\n"
       "sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
      text=True)
  try:
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(lock.Busy):
      resume(d, embedder)
    with pytest.raises(lock.Busy):
      with lock.held(d):
        pass
  finally:
    holder.communicate("", timeout=30)
  assert tr.info(d)["status"].startswith("interrupted")
  with lock.held(d):  # Released with its process.
    pass


def test_a_second_run_into_a_directory_being_run_is_refused(tmp_path,
                                                            embedder):
  out = tmp_path / "new"
  out.mkdir()
  with lock.held(out):
    with pytest.raises(lock.Busy):
      run(tmp_path, embedder, name="new")
  assert [p.name for p in out.iterdir()] == [run_format.RUN_LOCK]
  # Its lock file alone does not make the directory a run's.
  run(tmp_path, embedder, name="new", steps=1)
  assert tr.info(out)["status"] == "completed"

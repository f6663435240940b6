"""A run directory works with Concordia's own tools and says which code made it.

Each run writes log.json (Concordia's `SimulationLog.to_json`), the file
Concordia's `concordia-log` command reads, and run.json records the
project's version and, in a git checkout, the commit. The commit lookup
must stay silent and give null outside a checkout: a pip-installed copy
has no .git, and git's `fatal: not a git repository` must not reach a
person's terminal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from crsec_concordia import cli
from crsec_concordia.rundir import writing as rundir
from crsec_concordia.runs.resume import code_change
from tests import schema_answers

ROOT = Path(__file__).resolve().parents[1]
SERVER_URL = ""  # The fake server of the current test (set by mini_run).
CONCORDIA_LOG = next(
    (p for p in (ROOT / ".venv" / "bin" / "concordia-log",
                 Path(sys.executable).with_name("concordia-log"))
     if p.exists()), None)


def concordia_log(*args: str) -> subprocess.CompletedProcess:
  """Concordia's log command as a person runs it (script, else module)."""
  command = ([str(CONCORDIA_LOG)] if CONCORDIA_LOG is not None else
             [sys.executable, "-m",
              "concordia.command_line_interface.concordia_log"])
  return subprocess.run([*command, *args], capture_output=True, text=True,
                        timeout=120, check=False)


@pytest.fixture
def mini_run(tmp_path, server, embedder, monkeypatch) -> Path:
  """Two slots of the mini café against the fake server (seconds)."""
  del embedder  # Loaded once per session; the run reuses the shared one.
  for key in [k for k in os.environ if k.startswith(("CRSEC_", "OPENAI_"))]:
    monkeypatch.delenv(key)
  monkeypatch.setenv("CRSEC_CACHE_DIR", str(tmp_path / "cache"))
  server.responder = schema_answers.responder()
  monkeypatch.setattr(sys.modules[__name__], "SERVER_URL", server.base_url)
  run_dir = tmp_path / "run"
  assert cli.main(["run", "hobbs_cafe_mini", "--seed", "1", "--steps", "2",
                   "--out", str(run_dir), "--no-progress",
                   "--base-url", server.base_url, "--model", "fake-model"]) == 0
  return run_dir


def test_concordia_log_reads_a_mini_cafe_run(mini_run):
  log_json = mini_run / rundir.LOG_JSON
  assert log_json.is_file() and (mini_run / rundir.LOG_HTML).is_file()

  overview = concordia_log("overview", str(log_json))
  assert overview.returncode == 0, overview.stderr
  assert "Steps: 2" in overview.stdout, overview.stdout
  for name in ("Abigail Chen", "Carlos Gomez", "Tom Gomez", "Tamara Rodriguez"):
    assert name in overview.stdout, overview.stdout

  # The action concordia-log shows is the one the run recorded for the agent.
  recorded = [json.loads(line) for line in
              (mini_run / rundir.EVENTS).read_text().splitlines()]
  carlos = [r["action"] for r in recorded
            if r["kind"] == "action" and r["actor"] == "Carlos Gomez"]
  assert carlos, "the run recorded no action of Carlos Gomez"
  actions = concordia_log("actions", str(log_json), "Carlos Gomez")
  assert actions.returncode == 0, actions.stderr
  lines = [l for l in actions.stdout.splitlines() if l.startswith("Step ")]
  assert len(lines) == 2, actions.stdout + actions.stderr
  assert lines[0] == f"Step 1: {carlos[0]}", (carlos, actions.stdout)


def test_a_resumed_run_writes_the_whole_log_and_its_own_commit(mini_run):
  # As if killed after slot 1: the end of the run (log.json) was never
  # written; the resume plays slot 2 and writes the log of both slots.
  info = json.loads((mini_run / rundir.RUN_JSON).read_text())
  info.update(status="interrupted", completed_steps=1, finished=None)
  rundir.write_json(mini_run / rundir.RUN_JSON, info)
  (mini_run / rundir.LOG_JSON).unlink()
  assert cli.main(["resume", str(mini_run), "--no-progress",
                   "--base-url", SERVER_URL, "--model", "fake-model"]) == 0
  overview = concordia_log("overview", str(mini_run / rundir.LOG_JSON))
  assert overview.returncode == 0, overview.stderr
  assert "Steps: 2" in overview.stdout, overview.stdout
  # The resumed slot is numbered as the episode's slot 2, not the second
  # play's slot 1.
  actions = concordia_log("actions", str(mini_run / rundir.LOG_JSON),
                          "Tom Gomez")
  steps = [l.split(":")[0] for l in actions.stdout.splitlines()]
  assert steps == ["Step 1", "Step 2"], actions.stdout
  resumed = json.loads((mini_run / rundir.RUN_JSON).read_text())["resumed"]
  assert len(resumed) == 1 and resumed[0]["from_step"] == 1
  assert resumed[0]["version"] == info["version"]
  assert resumed[0]["commit"] == info["commit"]


def test_a_resume_after_the_last_slot_writes_the_log_it_lost(mini_run):
  # Killed after the last slot's files, before the end of the run: resume
  # plays nothing and only writes what the end would have.
  info = json.loads((mini_run / rundir.RUN_JSON).read_text())
  info.update(status="interrupted", finished=None)
  rundir.write_json(mini_run / rundir.RUN_JSON, info)
  (mini_run / rundir.LOG_JSON).unlink()
  assert cli.main(["resume", str(mini_run), "--no-progress",
                   "--base-url", SERVER_URL, "--model", "fake-model"]) == 0
  actions = concordia_log("actions", str(mini_run / rundir.LOG_JSON),
                          "Abigail Chen")
  assert actions.returncode == 0, actions.stderr
  steps = [l.split(":")[0] for l in actions.stdout.splitlines()]
  assert steps == ["Step 1", "Step 2"], actions.stdout


def test_run_json_names_the_version_and_the_commit(mini_run):
  info = json.loads((mini_run / rundir.RUN_JSON).read_text())
  assert info["version"] == rundir.importlib.metadata.version("crsec-concordia")
  head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                        capture_output=True, text=True, check=False)
  if head.returncode != 0:  # Not a checkout (an sdist, a copied tree).
    assert info["commit"] is None
  else:
    assert info["commit"] == head.stdout.strip()
    assert isinstance(info["commit_dirty"], bool)


def _git(cwd: Path, *args: str) -> None:
  subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t",
                  "-c", "init.defaultBranch=main", *args], cwd=cwd,
                 check=True, capture_output=True)


def test_no_commit_and_no_git_noise_outside_a_checkout(
    tmp_path, monkeypatch, capfd):
  monkeypatch.setattr(rundir, "_SOURCE_ROOT", tmp_path)
  found = rundir.provenance()
  assert found["commit"] is None and found["commit_dirty"] is None
  assert found["version"]  # The installed package's version, checkout or not.
  printed = capfd.readouterr()
  assert printed.out == "" and printed.err == ""


def test_another_repository_around_an_installed_copy_is_not_its_commit(
    tmp_path, monkeypatch, capfd):
  # A virtualenv inside a user's own project: that project's commit says
  # nothing about the code of crsec-concordia.
  _git(tmp_path, "init", "-q")
  (tmp_path / "a.txt").write_text("a")
  _git(tmp_path, "add", "a.txt")
  _git(tmp_path, "commit", "-q", "-m", "user's project")
  installed = tmp_path / "venv" / "site-packages"
  installed.mkdir(parents=True)
  monkeypatch.setattr(rundir, "_SOURCE_ROOT", installed)
  assert rundir.git_commit() is None
  # The checkout itself is recognised, with its commit and dirtiness.
  monkeypatch.setattr(rundir, "_SOURCE_ROOT", tmp_path.resolve())
  _served_from_the_checkout(tmp_path, monkeypatch)
  found = rundir.git_commit()
  assert found is not None and len(found["commit"]) == 40
  assert found["dirty"] is False
  (tmp_path / "a.txt").write_text("b")
  assert rundir.git_commit()["dirty"] is True
  printed = capfd.readouterr()
  assert printed.out == "" and printed.err == ""


def _served_from_the_checkout(root: Path, monkeypatch) -> dict[str, Path]:
  """The mapped packages as if this checkout's install served them."""
  folders = {name: root.resolve() / name.rsplit(".", 1)[1]
             for name in rundir.MAPPED_PACKAGES}
  monkeypatch.setattr(rundir, "served_from", lambda: dict(folders))
  return folders


def test_a_package_served_from_another_checkout_marks_the_commit_dirty(
    tmp_path, monkeypatch, caplog):
  # A worktree first on PYTHONPATH, with the editable install of another
  # checkout mapping the components to that one's folder: the commit
  # would name code that did not all run.
  worktree = tmp_path / "worktree"
  worktree.mkdir()
  _git(worktree, "init", "-q")
  (worktree / "a.txt").write_text("a")
  _git(worktree, "add", "a.txt")
  _git(worktree, "commit", "-q", "-m", "the worktree")
  monkeypatch.setattr(rundir, "_SOURCE_ROOT", worktree.resolve())
  folders = _served_from_the_checkout(worktree, monkeypatch)
  assert rundir.git_commit()["dirty"] is False
  assert rundir.foreign_packages() == []
  other = tmp_path / "main" / "components"
  folders["crsec_concordia.components"] = other.resolve()
  assert rundir.git_commit()["dirty"] is True
  assert rundir.foreign_packages() == [
      f"crsec_concordia.components ({other.resolve()})"]
  with caplog.at_level("WARNING"):
    assert rundir.provenance()["commit_dirty"] is True
  assert "crsec_concordia.components" in caplog.text
  assert "not from this checkout" in caplog.text


def test_this_checkouts_packages_are_served_from_it():
  # The suite runs from a checkout whose own install serves its packages.
  assert set(rundir.served_from()) == set(rundir.MAPPED_PACKAGES)
  assert rundir.foreign_packages() == []


def test_no_git_program_gives_no_commit(monkeypatch):
  monkeypatch.setenv("PATH", "/nonexistent")
  assert rundir.git_commit() is None


def test_a_resume_at_other_code_says_what_it_mixes():
  begun = {"commit": "a" * 40}
  assert code_change(begun, {"commit": "a" * 40}) is None
  assert code_change(begun, {"commit": None}) is None  # No checkout: unknown.
  said = code_change(begun, {"commit": "b" * 40})
  assert "played at commit aaaaaaa" in said and "at bbbbbbb" in said
  # The last resume's commit is what the latest slots were played at.
  resumed = {**begun, "resumed": [{"commit": "b" * 40}]}
  assert code_change(resumed, {"commit": "b" * 40}) is None

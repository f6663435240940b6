"""Every command that writes: a place it cannot write is one line and exit 2.

The output directory is made and test-written before any work (no model
starts, no run is played, no metric computed), and a write that fails
later is one line naming the file, with what was written before kept.
Tests may run as root, where a read-only directory does not stop writes,
so the unwritable places are under /proc (no directory can be made there)
and under a regular file used as a parent directory.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
from pathlib import Path

import pytest

from crsec_concordia import cli, outputs
from crsec_concordia.errors import UserError
from crsec_concordia.rundir import writing as run_files
from tests import schema_answers
from tests.test_cli_basics import assert_one_line_error, crsec

sys.path.insert(0, str(Path(__file__).parent))
from metrics_fixtures import ABIGAIL, CARLOS, RunBuilder  # pylint: disable=wrong-import-position

PROC = "/proc/crsec-no-such-dir/out"


@pytest.fixture
def closed_url() -> str:
  """An endpoint nobody listens on: a command that reached the model would
  fail naming it, not the output directory."""
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


@pytest.fixture(params=["proc", "file"])
def unwritable(request, tmp_path) -> tuple[str, str]:
  """(a directory that cannot be made, the reason the system gives)."""
  if request.param == "proc":
    return PROC, "No such file or directory"
  parent = tmp_path / "a-file"
  parent.write_text("not a directory")
  return str(parent / "out"), "Not a directory"


@pytest.fixture
def run_dir(tmp_path) -> Path:
  b = RunBuilder(tmp_path / "run", steps=3)
  b.hold(1, ABIGAIL, "No smoking indoors.", origin="created")
  b.conflict(1, ABIGAIL, CARLOS, "No smoking indoors.",
             "Carlos lights a cigarette.")
  b.action(2, CARLOS, ["smoking_outside"])
  return b.write()


def _says_cannot_write(line: str, flag: str, path: str, reason: str) -> None:
  assert line == (f"crsec: {flag} {path}: cannot write there ({reason}); "
                  f"{outputs.FIX}")


def _one_line(capsys, *argv: str) -> str:
  """`crsec ARGV` in this process: exit 2 and one line on stderr."""
  assert cli.main(list(argv)) == 2
  captured = capsys.readouterr()
  assert "Traceback" not in captured.err + captured.out
  lines = captured.err.strip().splitlines()
  assert len(lines) == 1, captured.err
  return lines[0]


# As a person meets them: the installed script, in a subprocess.


def test_run_out_as_a_person_meets_it(closed_url):
  line = assert_one_line_error(crsec(
      "run", "hobbs_cafe_mini", "--out", PROC, "--no-progress",
      "--base-url", closed_url, "--model", "x"))
  _says_cannot_write(line, "--out", PROC, "No such file or directory")


def test_report_publish_as_a_person_meets_it(run_dir):
  line = assert_one_line_error(crsec("report", str(run_dir), "--publish",
                                     PROC))
  _says_cannot_write(line, "--publish", PROC, "No such file or directory")
  assert not (run_dir / "metrics").exists(), "metrics computed first"


# Every command, both kinds of place.


def test_run_out(unwritable, closed_url, capsys):
  path, reason = unwritable
  line = _one_line(capsys, "run", "hobbs_cafe_mini", "--out", path,
                   "--no-progress", "--base-url", closed_url, "--model", "x")
  _says_cannot_write(line, "--out", path, reason)


def test_compare_out(unwritable, closed_url, capsys):
  path, reason = unwritable
  line = _one_line(capsys, "compare", "hobbs_cafe_mini", "--seeds", "1",
                   "--out", path, "--base-url", closed_url, "--model", "x")
  _says_cannot_write(line, "--out", path, reason)


def test_sweep_out(unwritable, closed_url, tmp_path, capsys):
  path, reason = unwritable
  sweep = tmp_path / "sweep.yaml"
  sweep.write_text("scenarios: [hobbs_cafe_mini]\nseeds: 1\n")
  line = _one_line(capsys, "sweep", str(sweep), "--out", path,
                   "--base-url", closed_url, "--model", "x")
  _says_cannot_write(line, "--out", path, reason)


def test_report_publish(unwritable, run_dir, capsys):
  path, reason = unwritable
  line = _one_line(capsys, "report", str(run_dir), "--publish", path)
  _says_cannot_write(line, "--publish", path, reason)
  assert not (run_dir / "metrics").exists(), "metrics computed first"


def test_report_out(unwritable, run_dir, capsys):
  path, reason = unwritable
  line = _one_line(capsys, "report", str(run_dir), "--out", path)
  _says_cannot_write(line, "--out", path, reason)
  assert not (run_dir / "metrics").exists(), "metrics computed first"


def test_a_run_that_cannot_start_leaves_no_directory(tmp_path, closed_url,
                                                     monkeypatch, capsys):
  for key in [k for k in os.environ if k.startswith(("CRSEC_", "OPENAI_"))]:
    monkeypatch.delenv(key)
  out = tmp_path / "run"
  line = _one_line(capsys, "run", "hobbs_cafe_mini", "--out", str(out),
                   "--no-progress", "--base-url", closed_url, "--model", "x")
  assert closed_url in line
  assert not out.exists()


def test_the_questionnaire_failing_keeps_the_metrics(run_dir, tmp_path,
                                                     embedder, capsys):
  """The check up front passes; the questionnaire's folder cannot be made
  later (a file is in its place): one line naming it, the metrics kept."""
  del embedder  # Loaded once per session.
  out = tmp_path / "report"
  out.mkdir()
  (out / "questionnaire").write_text("in the way")
  assert cli.main(["report", str(run_dir), "--out", str(out)]) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err[-1] == (f"crsec: cannot write {out / 'questionnaire'} (File "
                     "exists); what was written before is kept; "
                     f"{outputs.FIX}")
  assert not any("Traceback" in line for line in err)
  assert json.loads((run_dir / "metrics" / "summary.json").read_text())


def test_a_full_disk_mid_run_is_one_line_and_the_run_can_resume(
    tmp_path, server, embedder, monkeypatch, capsys):
  """Slot 2's usage.json meets a full disk (no file name, as a failed
  write() gives): one line naming the run directory; run.json keeps slot 1
  and says `interrupted: lost dependency`, so `crsec resume` continues once there is room."""
  del embedder
  for key in [k for k in os.environ if k.startswith(("CRSEC_", "OPENAI_"))]:
    monkeypatch.delenv(key)
  monkeypatch.setenv("CRSEC_CACHE_DIR", str(tmp_path / "cache"))
  server.responder = schema_answers.responder()
  write_json = run_files.write_json
  usage_writes = []

  def full_disk(path, data):
    if Path(path).name == run_files.USAGE_JSON:
      usage_writes.append(path)
      if len(usage_writes) == 2:
        raise OSError(errno.ENOSPC, "No space left on device")
    write_json(path, data)

  monkeypatch.setattr(run_files, "write_json", full_disk)
  out = tmp_path / "run"
  code = cli.main(["run", "hobbs_cafe_mini", "--seed", "1", "--steps", "3",
                   "--out", str(out), "--no-progress",
                   "--base-url", server.base_url, "--model", "fake-model"])
  assert code == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err[-1] == (f"crsec: a write failed while writing {out} (No space "
                     "left on device); what was written before is kept; "
                     f"make room there, then `crsec resume {out}` continues")
  assert not any("Traceback" in line for line in err)
  info = json.loads((out / run_files.RUN_JSON).read_text())
  assert info["status"] == "interrupted: lost dependency"
  assert info["completed_steps"] == 1
  monkeypatch.setattr(run_files, "write_json", write_json)  # Room again.
  assert cli.main(["resume", str(out), "--no-progress", "--base-url",
                   server.base_url, "--model", "fake-model"]) == 0
  info = json.loads((out / run_files.RUN_JSON).read_text())
  assert info["status"] == "completed" and info["completed_steps"] == 3


def test_writable_dir_creates_and_leaves_no_probe(tmp_path):
  target = tmp_path / "a" / "b"
  assert outputs.writable_dir(target, "--out") == target
  assert target.is_dir() and not any(target.iterdir())


def test_writable_dir_on_a_file_says_so(tmp_path):
  target = tmp_path / "f"
  target.write_text("x")
  with pytest.raises(UserError) as e:
    outputs.writable_dir(target, "--out")
  assert str(e.value) == (f"--out {target}: cannot write there (it is a "
                          f"file); {outputs.FIX}")


def test_reading_errors_pass_through_the_write_guard(tmp_path):
  with pytest.raises(FileNotFoundError):
    with outputs.writing(tmp_path / "out"):
      (tmp_path / "elsewhere" / "input.json").read_text()

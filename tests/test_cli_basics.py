"""`crsec` as a person meets it: the installed script, run as a subprocess.

Bad input must end in one line on stderr that names the problem and the fix,
exit code 2 and no traceback; only a real subprocess shows what argparse,
logging and the entry point really print.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fake_openai import FakeOpenAI, Reply

ROOT = Path(__file__).resolve().parents[1]
CRSEC = next((p for p in (ROOT / ".venv" / "bin" / "crsec",
                          Path(sys.executable).with_name("crsec"))
              if p.exists()), ROOT / ".venv" / "bin" / "crsec")


def crsec(*args: str, env: dict[str, str] | None = None,
          timeout: float = 60) -> subprocess.CompletedProcess:
  # The developer's own endpoint settings must not leak into the test.
  clean = {k: v for k, v in os.environ.items()
           if not k.startswith(("CRSEC_", "OPENAI_"))}
  clean.update(env or {})
  return subprocess.run([str(CRSEC), *args], capture_output=True, text=True,
                        env=clean, timeout=timeout, check=False)


def assert_one_line_error(result: subprocess.CompletedProcess) -> str:
  assert result.returncode == 2, (result.stdout, result.stderr)
  assert "Traceback" not in result.stderr + result.stdout
  lines = result.stderr.strip().splitlines()
  assert len(lines) == 1, result.stderr
  assert lines[0].startswith("crsec: ")
  return lines[0]


@pytest.fixture
def closed_url() -> str:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
  return f"http://127.0.0.1:{port}/v1"


def test_the_script_is_installed():
  assert CRSEC.exists(), "run `make setup` to install the crsec script"


@pytest.mark.parametrize("args", [
    ["--no-such-flag"],
    ["doctor", "--no-such-flag"],
    ["no-such-command"],
    ["doctor", "--timeout", "soon"],
    ["doctor", "--schema-mode", "xml"],
])
def test_a_wrong_flag_is_one_line_and_exit_2(args):
  line = assert_one_line_error(crsec(*args))
  assert "--help" in line


def test_help_lists_doctor():
  result = crsec("--help")
  assert result.returncode == 0
  assert "doctor" in result.stdout


def test_doctor_with_a_closed_port_names_the_url_and_the_fix(closed_url):
  line = assert_one_line_error(
      crsec("doctor", "--base-url", closed_url, "--model", "x"))
  assert closed_url in line
  assert "--base-url" in line and "start the server" in line


def test_an_endpoint_without_a_model_name_is_one_line(closed_url):
  line = assert_one_line_error(crsec("doctor", "--base-url", closed_url))
  assert "--model" in line and "CRSEC_MODEL" in line
  # The same through the environment.
  line = assert_one_line_error(crsec("doctor",
                                     env={"CRSEC_BASE_URL": closed_url}))
  assert closed_url in line and "--model" in line


def test_an_unknown_schema_mode_in_the_environment_is_one_line():
  line = assert_one_line_error(crsec("doctor",
                                     env={"CRSEC_SCHEMA_MODE": "xml"}))
  assert "CRSEC_SCHEMA_MODE" in line


def test_a_bad_timeout_is_one_line():
  line = assert_one_line_error(crsec("doctor", env={"CRSEC_TIMEOUT": "soon"}))
  assert "CRSEC_TIMEOUT" in line
  line = assert_one_line_error(crsec("doctor", "--timeout", "-1"))
  assert "--timeout" in line


def test_a_wrong_api_key_is_one_line(server):
  server.responder = lambda request: Reply(status=401, body={
      "error": {"message": "Incorrect API key provided"}})
  line = assert_one_line_error(
      crsec("doctor", "--base-url", server.base_url, "--model", "m",
            "--api-key", "wrong"))
  assert "API key" in line


def test_doctor_passes_against_a_working_endpoint(server):
  server.responder = lambda request: Reply(
      json.dumps({"answer": True}) if "response_format" in request.body
      else "A quiet café hums with the hiss of the espresso machine.")
  result = crsec("doctor", "--base-url", server.base_url, "--model",
                 "fake-model", "--api-key", "secret-key")
  assert result.returncode == 0, result.stdout + result.stderr
  assert "all checks passed" in result.stdout
  assert "secret-key" not in result.stdout + result.stderr
  # Nobody measured this model: its runs' referee trusts its answers.
  assert ("referee policy of its runs (auto): auto: trusting (no "
          "calibration of fake-model") in result.stdout


def test_doctor_reports_an_endpoint_that_ignores_schemas(server):
  # Free text where JSON is due: a failed check with its fix, not a crash.
  server.responder = lambda request: Reply("Yes, definitely.")
  result = crsec("doctor", "--base-url", server.base_url, "--model", "m")
  assert result.returncode == 1, result.stdout + result.stderr
  assert "Traceback" not in result.stderr
  assert "[FAIL] structured output" in result.stdout
  assert "--schema-mode" in result.stdout

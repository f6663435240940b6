"""An interrupted command sends no further model request
(crsec_concordia/models/stopping.py): not from a call that comes later,
not from one waiting for a request slot, not through a user's own model;
a request already sent is answered."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import pytest
from concordia.language_model import language_model

from crsec_concordia import cli
from crsec_concordia.models import OpenAICompatibleModel, as_structured
from crsec_concordia.models import stopping
from tests.fake_openai import FakeOpenAI, Reply

SCHEMA = {"type": "object", "additionalProperties": False,
          "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}


def _model(server: FakeOpenAI, **kwargs) -> OpenAICompatibleModel:
  return OpenAICompatibleModel(server.base_url, "key", "fake", timeout=5.0,
                               max_retries=0, **kwargs)


def _arrived(server: FakeOpenAI, count: int) -> None:
  deadline = time.monotonic() + 10
  while len(server.chat_requests()) < count:
    assert time.monotonic() < deadline, "the request never reached the server"
    time.sleep(0.01)


def test_no_request_is_sent_once_stopped_and_one_is_after_allowing(server):
  model = _model(server)
  stopping.stop_requests()
  with pytest.raises(stopping.RequestsStopped):
    model.sample_json("Is it?", SCHEMA)
  with pytest.raises(KeyboardInterrupt):  # What the run's ending reads.
    model.sample_text("Say it.")
  assert server.chat_requests() == []
  stopping.allow_requests()
  server.script(Reply('{"ok": true}'))
  assert model.sample_json("Is it?", SCHEMA) == {"ok": True}
  assert len(server.chat_requests()) == 1


def test_a_call_waiting_for_a_slot_is_not_sent_and_the_sent_one_answered(
    server):
  server.script(Reply('{"ok": true}', delay=1.0), Reply('{"ok": false}'))
  model = _model(server, max_in_flight=1)
  results: dict[str, object] = {}

  def ask(name: str) -> None:
    try:
      results[name] = model.sample_json(f"Is it, {name}?", SCHEMA)
    except BaseException as e:  # pylint: disable=broad-except
      results[name] = e

  sent = threading.Thread(target=ask, args=("first",))
  sent.start()
  _arrived(server, 1)
  waiting = threading.Thread(target=ask, args=("second",))
  waiting.start()
  stopping.stop_requests()
  sent.join(10)
  waiting.join(10)
  assert results["first"] == {"ok": True}
  assert isinstance(results["second"], stopping.RequestsStopped)
  assert len(server.chat_requests()) == 1


class _Counting(language_model.LanguageModel):
  """A user's own plain Concordia model that counts what it is asked."""

  def __init__(self):
    self.calls = 0

  def sample_text(self, prompt, **kwargs):
    del prompt, kwargs
    self.calls += 1
    return '{"ok": true}'

  def sample_choice(self, prompt, responses, *, seed=None):
    del prompt, seed
    self.calls += 1
    return 0, responses[0], {}


def test_a_users_own_model_is_not_asked_once_stopped():
  own = _Counting()
  model = as_structured(own)
  assert model.sample_json("Is it?", SCHEMA) == {"ok": True}
  stopping.stop_requests()
  with pytest.raises(stopping.RequestsStopped):
    model.sample_json("Is it?", SCHEMA)
  with pytest.raises(stopping.RequestsStopped):
    model.sample_choice("Which?", ["a", "b"])
  assert own.calls == 1


def test_the_command_lines_interrupt_stops_requests():
  with pytest.raises(KeyboardInterrupt):
    cli._interrupted(signal.SIGTERM, None)  # pylint: disable=protected-access
  assert stopping.stopping()


def test_an_ignored_ctrl_c_stays_ignored_and_both_signals_are_given_back():
  before = signal.signal(signal.SIGINT, signal.SIG_IGN)
  term = signal.getsignal(signal.SIGTERM)
  try:
    taken = cli._take_signals()  # pylint: disable=protected-access
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert set(taken) == {signal.SIGTERM}
    for signum, handler in taken.items():
      signal.signal(signum, handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    taken = cli._take_signals()  # pylint: disable=protected-access
    assert signal.getsignal(signal.SIGINT) is cli._interrupted  # pylint: disable=protected-access
    for signum, handler in taken.items():
      signal.signal(signum, handler)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) is term
  finally:
    signal.signal(signal.SIGINT, before)


def test_a_new_command_allows_requests_again(tmp_path):
  stopping.stop_requests()
  assert cli.main(["report", str(tmp_path / "no-run")]) == 2
  assert not stopping.stopping()


def test_a_second_signal_does_not_cut_the_ending_short():
  with pytest.raises(KeyboardInterrupt):
    cli._interrupted(signal.SIGINT, None)  # pylint: disable=protected-access
  cli._interrupted(signal.SIGTERM, None)  # pylint: disable=protected-access
  assert stopping.stopping()


# The command as its console script runs it, with a `main` that leaves a
# thread waiting forever (a request on the wire that is never answered).
_ENTRY = """
import sys, threading
from crsec_concordia import cli
from crsec_concordia.models import stopping
never = threading.Event()

def main():
  threading.Thread(target=never.wait).start()
  if sys.argv[1] == "interrupted":
    stopping.stop_requests()
    return 130
  never.set()
  return 0

cli.main = main
cli.entry()
"""


@pytest.mark.parametrize("how, code", [("interrupted", 130), ("done", 0)])
def test_the_command_ends_with_its_code_and_waits_only_when_not_interrupted(
    how, code):
  done = subprocess.run([sys.executable, "-c", _ENTRY, how], timeout=60,
                        capture_output=True, text=True, check=False)
  assert done.returncode == code, done.stderr

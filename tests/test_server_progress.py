"""models/server_progress.py with plain_http.py: a request whose timeout
runs out waits on while a llama.cpp server's `/slots` show its work moving,
and is given up as before when they show none, nothing new, or no /slots."""

from __future__ import annotations

import http.server
import json
import threading
import time

import openai
import pytest

from crsec_concordia.models import chat_post, server_progress

TIMEOUT = 0.3
ANSWER_AFTER = 1.2  # Four timeouts: a fixed timeout would give up.
ANSWER = {"choices": [{"message": {"content": "{}"}}], "usage": {}}


def slot(decoded: int, busy: bool = True) -> dict:
  return {"id": 0, "is_processing": busy, "id_task": 7, "n_ctx": 4096,
          "n_prompt_tokens_processed": 300,
          "next_token": [{"n_decoded": decoded}],
          "params": {"seed": decoded}}


class SlowServer:
  """Answers a chat request after ANSWER_AFTER seconds; `/slots` answers as
  `slots(n)` says for the n-th look (an int: that HTTP status)."""

  def __init__(self, slots):
    self.posts = self.looks = 0
    self.done = threading.Event()
    outer = self

    class Handler(http.server.BaseHTTPRequestHandler):
      protocol_version = "HTTP/1.1"

      def log_message(self, *args) -> None:
        pass

      def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

      def do_GET(self) -> None:
        if self.path != "/slots":
          return self._send(404, {})
        outer.looks += 1
        said = slots(outer.looks)
        if isinstance(said, int):
          return self._send(said, {"error": "no slots"})
        self._send(200, said)

      def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        outer.posts += 1
        if not outer.done.wait(ANSWER_AFTER):
          try:
            self._send(200, ANSWER)
          except OSError:  # The client gave up and closed.
            pass

    self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    self.server.daemon_threads = True
    self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
    self.thread = threading.Thread(target=self.server.serve_forever,
                                   daemon=True)
    self.thread.start()

  def close(self) -> None:
    self.done.set()
    self.server.shutdown()
    self.server.server_close()
    self.thread.join()


@pytest.fixture
def serve():
  made = []

  def start(slots) -> SlowServer:
    made.append(SlowServer(slots))
    return made[-1]
  yield start
  for server in made:
    server.close()


def poster(server: SlowServer) -> chat_post.ChatPoster:
  return chat_post.ChatPoster(
      server.url, "k", timeout=TIMEOUT, max_retries=0, trust_env=False,
      progress=server_progress.SlotsWatch(server.url))


def timed_post(server: SlowServer) -> tuple[float, object]:
  start = time.monotonic()
  try:
    said: object = poster(server).post({"model": "m", "messages": []})
  except openai.APITimeoutError as e:
    said = e
  return time.monotonic() - start, said


def test_slots_url_is_beside_v1():
  assert (server_progress.slots_url("http://127.0.0.1:8080/v1")
          == "http://127.0.0.1:8080/slots")
  assert (server_progress.slots_url("http://h:1/llm/v1/")
          == "http://h:1/llm/slots")
  assert server_progress.slots_url("http://h:1") == "http://h:1/slots"


def test_working_state_compares_the_work_not_the_settings():
  state = server_progress.working_state
  assert state([slot(5)]) == state([{**slot(5), "params": {"seed": 1}}])
  assert state([slot(5)]) != state([slot(6)])
  assert state([slot(5, busy=False)]) == ()
  assert state([{"id": 0, "state": 1, "n_decoded": 3}]) != ()  # Older form.
  assert state([{"id": 0, "state": 0}]) == ()
  assert state({"error": "x"}) is None
  assert state([1, 2]) is None


def test_a_request_is_waited_for_while_the_slots_move(serve):
  server = serve(lambda n: [slot(n)])
  post = poster(server)
  start = time.monotonic()
  said = post.post({"model": "m", "messages": []})
  seconds = time.monotonic() - start
  assert said == ANSWER
  assert server.posts == 1 and post.last_sends() == 1  # No work lost.
  assert seconds >= ANSWER_AFTER and server.looks >= 2


def test_slots_that_stand_still_give_the_request_up(serve):
  server = serve(lambda n: [slot(1)])
  seconds, said = timed_post(server)
  assert isinstance(said, openai.APITimeoutError)
  # One look to see the state, one more timeout to see it unmoved.
  assert server.looks == 2 and seconds < ANSWER_AFTER


def test_no_slot_at_work_gives_the_request_up_at_once(serve):
  server = serve(lambda n: [slot(n, busy=False)])
  seconds, said = timed_post(server)
  assert isinstance(said, openai.APITimeoutError)
  assert server.looks == 1 and seconds < 2 * TIMEOUT


def test_a_server_without_slots_keeps_the_timeout_and_is_not_asked_again(
    serve):
  server = serve(lambda n: 404)
  post = poster(server)
  for _ in range(2):
    with pytest.raises(openai.APITimeoutError):
      post.post({"model": "m", "messages": []})
  assert server.looks == 1


def test_an_unreadable_slots_answer_keeps_the_timeout(serve):
  server = serve(lambda n: {"not": "a list"})
  seconds, said = timed_post(server)
  assert isinstance(said, openai.APITimeoutError)
  assert server.looks == 1 and seconds < 2 * TIMEOUT

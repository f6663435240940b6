"""A fake OpenAI-compatible server over real HTTP on 127.0.0.1, for tests.

Mocking the `openai` client would test our assumptions about it, not the
client: its retries, timeouts, error classes and request bodies are exactly
what can break between versions. So the tests talk HTTP to this server, which
records every request and answers from a script the test writes.

Everything is bounded: delays are capped and cut short at `stop()`, sockets
time out, and `stop()` returns within seconds even with a request in flight.
"""

from __future__ import annotations

import collections
import dataclasses
import http.server
import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

MAX_DELAY = 10.0  # A scripted delay never holds a test longer than this.


@dataclasses.dataclass
class Reply:
  """One scripted answer.

  `content` becomes a chat completion with `usage`; `body` (a dict or raw
  text) replaces the whole response body, for error statuses and junk.
  """
  content: str = "ok"
  status: int = 200
  delay: float = 0.0
  prompt_tokens: int = 11
  completion_tokens: int = 7
  body: Mapping[str, Any] | str | None = None
  headers: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Request:
  """One request as the server saw it (recorded before any delay)."""
  method: str
  path: str
  headers: dict[str, str]  # Names in lower case.
  body: Any  # The parsed JSON, or None.
  arrived: float


Responder = Callable[[Request], Reply]


def error(status: int, message: str, **headers: str) -> Reply:
  """An OpenAI-style error reply."""
  return Reply(status=status, body={"error": {
      "message": message, "type": "error", "code": status}},
               headers=headers)


class LoopbackServer:
  """An HTTP server on 127.0.0.1 (a free port) in a daemon thread, serving
  the handler class `_handler()` makes; `stop()` ends held requests (they
  wait on `_stopping`) and returns within seconds. The fake server and
  tests/fault_proxy.py are both one."""

  _name = "loopback server"

  def __init__(self):
    self._stopping = threading.Event()
    self._httpd: http.server.ThreadingHTTPServer | None = None
    self._thread: threading.Thread | None = None

  def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
    raise NotImplementedError

  @property
  def base_url(self) -> str:
    assert self._httpd is not None, f"{self._name} not started"
    return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

  def start(self):
    """Starts serving; returns self."""
    self._httpd = _Server(("127.0.0.1", 0), self._handler())
    self._thread = threading.Thread(
        target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
        name=self._name, daemon=True)
    self._thread.start()
    return self

  def stop(self) -> None:
    self._stopping.set()  # Ends any held request at once.
    if self._httpd is not None:
      self._httpd.shutdown()
      self._httpd.server_close()
    if self._thread is not None:
      self._thread.join(timeout=5)


class FakeOpenAI(LoopbackServer):
  """Serves /v1/chat/completions and /v1/models from a per-test script.

  Replies come from `script` (a queue consumed in order) and then from
  `responder`, a function of the request (by default: Reply()).
  """

  _name = "fake-openai"

  def __init__(self):
    super().__init__()
    self.requests: list[Request] = []
    self.responder: Responder = lambda request: Reply()
    self._script: collections.deque[Reply] = collections.deque()
    self._lock = threading.Lock()

  # -- the test's side ---------------------------------------------------------

  def script(self, *replies: Reply) -> None:
    """Queues replies, answered in order before `responder` takes over."""
    with self._lock:
      self._script.extend(replies)

  def chat_requests(self) -> list[Request]:
    with self._lock:
      return [r for r in self.requests if r.path.endswith("/chat/completions")]

  # -- the server's side -------------------------------------------------------

  def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
    return _make_handler(self)

  def _next_reply(self, request: Request) -> Reply:
    with self._lock:
      self.requests.append(request)
      if self._script:
        return self._script.popleft()
    return self.responder(request)

  def _wait(self, seconds: float) -> None:
    self._stopping.wait(min(seconds, MAX_DELAY))


def completion(reply: Reply, model: str) -> dict[str, Any]:
  return {
      "id": "chatcmpl-fake", "object": "chat.completion",
      "created": int(time.time()), "model": model,
      "choices": [{"index": 0, "finish_reason": "stop", "message": {
          "role": "assistant", "content": reply.content}}],
      "usage": {"prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens},
  }


class _Server(http.server.ThreadingHTTPServer):
  # The default backlog of 5 drops bursts of connections, and the kernel
  # retries them a second later: concurrency tests would measure that.
  request_queue_size = 64
  daemon_threads = True


def _make_handler(fake: FakeOpenAI) -> type[http.server.BaseHTTPRequestHandler]:

  class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # Keep-alive, as the openai client expects.
    timeout = 15  # A stuck client cannot hold a handler thread forever.

    def log_message(self, format: str, *args: Any) -> None:  # pylint: disable=redefined-builtin
      del format, args  # Quiet: pytest shows failures, not access logs.

    def _send(self, status: int, body: Any,
              headers: Mapping[str, str] | None = None) -> None:
      data = (body if isinstance(body, str) else json.dumps(body)).encode()
      try:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
          self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
      except (BrokenPipeError, ConnectionResetError):
        pass  # The client gave up (a timeout test): nothing to answer.

    def _handle(self) -> None:
      length = int(self.headers.get("Content-Length") or 0)
      raw = self.rfile.read(length) if length else b""
      try:
        body = json.loads(raw) if raw else None
      except ValueError:
        body = None
      headers = {k.lower(): v for k, v in self.headers.items()}
      request = Request(self.command, self.path, headers, body,
                        time.monotonic())
      if self.path.rstrip("/").endswith("/models"):
        with fake._lock:  # pylint: disable=protected-access
          fake.requests.append(request)
        self._send(200, {"object": "list", "data": [
            {"id": "fake-model", "object": "model", "owned_by": "tests"}]})
        return
      if not self.path.rstrip("/").endswith("/chat/completions"):
        self._send(404, {"error": {"message": f"no route {self.path}"}})
        return
      reply = fake._next_reply(request)  # pylint: disable=protected-access
      if reply.delay:
        fake._wait(reply.delay)  # pylint: disable=protected-access
      model = (body or {}).get("model", "fake-model")
      payload = reply.body if reply.body is not None else completion(
          reply, model)
      self._send(reply.status, payload, reply.headers)

    def do_GET(self) -> None:  # pylint: disable=invalid-name
      self._handle()

    def do_POST(self) -> None:  # pylint: disable=invalid-name
      self._handle()

  return Handler

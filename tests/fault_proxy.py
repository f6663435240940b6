"""A fault-injecting OpenAI-compatible proxy on 127.0.0.1, for tests and benches.

Retries, failure records and "no invented answers" are claims about what a
run does when the endpoint misbehaves; a proxy that misbehaves on purpose,
in front of any upstream (the fake server in tests, a real endpoint in a
bench), makes them measurable. It forwards /v1/models and
/v1/chat/completions and fails a share of chat calls, chosen at random from
a seeded generator, with one of `KINDS`:

  timeout       holds the request past the client's timeout, then hangs up
  http_500      an OpenAI-style server error
  http_429      rate limited, with a Retry-After header
  reset         closes the connection with a TCP reset
  invalid_json  a 200 whose body is not JSON
  schema_break  the upstream's answer replaced by JSON that breaks the
                request's schema
  truncated     the upstream's answer cut in half (finish_reason "length")

It logs every chat request (with the client's `X-Chaos-Call` header, if
any, so a bench can group the attempts of one logical call) and every
content the upstream sent, marking those passed on unaltered: an answer a
run recorded must be one of those.
"""

from __future__ import annotations

import collections
import dataclasses
import http.server
import json
import random
import socket
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import urllib.error
import urllib.request

from tests.fake_openai import LoopbackServer

KINDS = ("timeout", "http_500", "http_429", "reset", "invalid_json",
         "schema_break", "truncated")
CALL_HEADER = "x-chaos-call"
# An answer no schema of ours accepts: every object schema is closed and
# requires its keys.
BROKEN = {"chaos": "this answer breaks the schema"}


@dataclasses.dataclass
class Exchange:
  """One chat request through the proxy and what became of it."""
  call: str | None  # The client's X-Chaos-Call header (a logical call's id).
  fault: str | None  # One of KINDS, or None: passed on as the upstream sent.
  upstream_content: str | None  # What the upstream answered, if asked.
  arrived: float


class FaultProxy(LoopbackServer):
  """Forwards to `upstream` and fails `rate` of chat calls with `kinds`."""

  _name = "fault-proxy"

  def __init__(self, upstream: str, *, rate: float = 0.2, seed: int = 0,
               kinds: Sequence[str] = KINDS, hold: float = 5.0,
               retry_after: int = 1, api_key: str | None = None):
    """Creates the proxy (not started).

    Args:
      upstream: the upstream's base URL, e.g. http://127.0.0.1:8000/v1.
      rate: the share of chat calls that fail.
      seed: seeds the choice of calls and kinds.
      kinds: the kinds of fault to choose from.
      hold: seconds a `timeout` fault holds the request; more than the
        client's timeout, or it is no timeout.
      retry_after: the Retry-After of a 429, in seconds.
      api_key: sent upstream instead of the client's key, if given.
    """
    unknown = set(kinds) - set(KINDS)
    if unknown or not kinds:
      raise ValueError(f"kinds must be some of {KINDS}, not {sorted(unknown)}")
    super().__init__()
    self.upstream = upstream.rstrip("/")
    self.rate, self.kinds, self.hold = rate, tuple(kinds), hold
    self.retry_after = retry_after
    self.api_key = api_key
    self.exchanges: list[Exchange] = []
    self._rng = random.Random(seed)
    self._lock = threading.Lock()
    # No proxy variables: the upstream is often on loopback.
    self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

  # -- the bench's side --------------------------------------------------------

  def log(self) -> list[Exchange]:
    with self._lock:
      return list(self.exchanges)

  def faults(self) -> dict[str, int]:
    """Faults injected so far, by kind (every kind listed)."""
    counts = collections.Counter(e.fault for e in self.log() if e.fault)
    return {kind: counts.get(kind, 0) for kind in self.kinds}

  def clean_contents(self) -> list[str]:
    """The upstream's contents the client received unaltered."""
    return [e.upstream_content for e in self.log()
            if e.fault is None and e.upstream_content is not None]

  # -- the proxy's side --------------------------------------------------------

  def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
    return _make_handler(self)

  def _choose(self) -> str | None:
    with self._lock:
      if self._rng.random() >= self.rate:
        return None
      return self._rng.choice(self.kinds)

  def _record(self, exchange: Exchange) -> None:
    with self._lock:
      self.exchanges.append(exchange)

  def _forward(self, method: str, path: str, headers: Mapping[str, str],
               raw: bytes) -> tuple[int, bytes]:
    """The upstream's (status, body) for the request."""
    sent = {k: v for k, v in headers.items()
            if k.lower() in ("content-type", "authorization", "accept")}
    if self.api_key:
      sent["Authorization"] = f"Bearer {self.api_key}"
    request = urllib.request.Request(self.upstream + path, data=raw or None,
                                     headers=sent, method=method)
    try:
      with self._opener.open(request, timeout=600) as answer:
        return answer.status, answer.read()
    except urllib.error.HTTPError as e:
      return e.code, e.read()


def _content(body: Any) -> str | None:
  try:
    return body["choices"][0]["message"]["content"]
  except (KeyError, IndexError, TypeError):
    return None


def _with_content(body: dict[str, Any], content: str,
                  finish_reason: str | None = None) -> dict[str, Any]:
  body = json.loads(json.dumps(body))
  body["choices"][0]["message"]["content"] = content
  if finish_reason:
    body["choices"][0]["finish_reason"] = finish_reason
  return body


def _make_handler(proxy: FaultProxy
                  ) -> type[http.server.BaseHTTPRequestHandler]:

  class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30

    def log_message(self, format: str, *args: Any) -> None:  # pylint: disable=redefined-builtin
      del format, args

    def _send(self, status: int, data: bytes,
              headers: Mapping[str, str] | None = None) -> None:
      try:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
          self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
      except (BrokenPipeError, ConnectionResetError):
        pass

    def _reset(self) -> None:
      """A TCP reset: SO_LINGER with a zero timeout, then close."""
      self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 struct.pack("ii", 1, 0))
      self.close_connection = True
      self.connection.close()

    def _path(self) -> str:
      """The request's path below the base URL (/v1 stripped)."""
      path = self.path
      return path[3:] if path.startswith("/v1/") else path

    def _handle(self) -> None:
      length = int(self.headers.get("Content-Length") or 0)
      raw = self.rfile.read(length) if length else b""
      headers = dict(self.headers.items())
      path = self._path()
      if not path.rstrip("/").endswith("/chat/completions"):
        self._send(*proxy._forward(self.command, path, headers, raw))  # pylint: disable=protected-access
        return
      call = self.headers.get(CALL_HEADER)
      fault = proxy._choose()  # pylint: disable=protected-access
      exchange = Exchange(call, fault, None, time.monotonic())
      if fault in ("timeout", "http_500", "http_429", "reset",
                   "invalid_json"):
        proxy._record(exchange)  # pylint: disable=protected-access
        self._fail(fault)
        return
      status, data = proxy._forward("POST", path, headers, raw)  # pylint: disable=protected-access
      try:
        body = json.loads(data)
      except ValueError:
        body = None
      exchange.upstream_content = _content(body)
      proxy._record(exchange)  # pylint: disable=protected-access
      if fault is None or exchange.upstream_content is None:
        if fault is not None:  # Nothing to break: an upstream error.
          exchange.fault = None
        self._send(status, data)
        return
      content = exchange.upstream_content
      if fault == "schema_break":
        body = _with_content(body, json.dumps(BROKEN))
      else:  # truncated
        body = _with_content(body, content[:len(content) // 2], "length")
      self._send(200, json.dumps(body).encode())

    def _fail(self, fault: str) -> None:
      if fault == "timeout":
        proxy._stopping.wait(proxy.hold)  # pylint: disable=protected-access
        self._reset()
      elif fault == "http_500":
        self._send(500, json.dumps({"error": {
            "message": "chaos: internal server error", "type": "server_error",
            "code": 500}}).encode())
      elif fault == "http_429":
        self._send(429, json.dumps({"error": {
            "message": "chaos: rate limited", "type": "rate_limit",
            "code": 429}}).encode(),
                   {"Retry-After": str(proxy.retry_after)})
      elif fault == "reset":
        self._reset()
      else:  # invalid_json
        self._send(200, b'{"id": "chatcmpl-chaos", "choices": [{"mess')

    def do_GET(self) -> None:  # pylint: disable=invalid-name
      self._handle()

    def do_POST(self) -> None:  # pylint: disable=invalid-name
      self._handle()

  return Handler

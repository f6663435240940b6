"""models/plain_http.py: the request http.client sends, in one send, and
the answer read as HTTP/1.1 frames it (length, chunks, to the end), on a
connection kept per thread and replaced once when the server dropped it."""

from __future__ import annotations

import http.client
import socket
import threading

import pytest

from crsec_concordia.models import plain_http

HEADERS = {"Authorization": "Bearer k", "Content-Type": "application/json",
           "Accept": "application/json"}
BODY = b'{"model": "m", "messages": []}'


class RawServer:
  """Serves scripted raw answers, one per request, and keeps the requests
  (each read whole by its Content-Length)."""

  def __init__(self, answers: list[bytes], close_after: set[int] = frozenset()):
    self.answers, self.close_after = list(answers), close_after
    self.requests: list[bytes] = []
    self.connections = self.served = 0
    self.lock = threading.Lock()
    self.open: list[socket.socket] = []
    self.handlers: list[threading.Thread] = []
    self.sock = socket.create_server(("127.0.0.1", 0))
    self.port = self.sock.getsockname()[1]
    self.thread = threading.Thread(target=self._serve, daemon=True)
    self.thread.start()

  def _serve(self) -> None:
    while True:
      try:
        conn, _ = self.sock.accept()
      except OSError:  # Closed: the test is over.
        return
      with self.lock:
        self.connections += 1
        self.open.append(conn)
      handler = threading.Thread(target=self._answer, args=(conn,),
                                 daemon=True)
      self.handlers.append(handler)
      handler.start()

  def close(self) -> None:
    """Ends every thread of the server (no thread outlives its test)."""
    try:
      self.sock.shutdown(socket.SHUT_RDWR)  # Wakes the blocked accept.
    except OSError:
      pass
    self.sock.close()
    with self.lock:
      for conn in self.open:
        try:
          conn.shutdown(socket.SHUT_RDWR)
        except OSError:
          pass
    self.thread.join()
    for handler in self.handlers:
      handler.join()

  def _answer(self, conn: socket.socket) -> None:
    reader = conn.makefile("rb")
    while True:
      head = b""
      while not head.endswith(b"\r\n\r\n"):
        byte = reader.read(1)
        if not byte:
          break
        head += byte
      if not head.endswith(b"\r\n\r\n"):
        break
      length = int([l for l in head.split(b"\r\n")
                    if l.lower().startswith(b"content-length")][0]
                   .split(b":")[1])
      with self.lock:
        self.requests.append(head + reader.read(length))
        answer = self.answers.pop(0)
        self.served += 1
        last = self.served in self.close_after
      conn.sendall(answer)
      if last:
        break
    reader.close()
    conn.close()

  def url(self) -> str:
    return f"http://127.0.0.1:{self.port}/v1/chat/completions"


@pytest.fixture(autouse=True)
def _servers(monkeypatch):
  """Every RawServer a test starts is closed after it."""
  made: list[RawServer] = []
  start = RawServer.__init__

  def started(self, *args, **kwargs):
    start(self, *args, **kwargs)
    made.append(self)
  monkeypatch.setattr(RawServer, "__init__", started)
  yield
  for server in made:
    server.close()


OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


def test_the_request_is_http_clients_in_one_piece():
  server = RawServer([OK + b"Content-Length: 2\r\n\r\n{}"] * 2)
  kept = plain_http.KeptConnections(server.url(), timeout=10)
  assert kept.post(BODY, HEADERS)[0] == 200
  connection = http.client.HTTPConnection("127.0.0.1", server.port)
  connection.request("POST", "/v1/chat/completions", body=BODY,
                     headers=dict(HEADERS))
  assert connection.getresponse().read() == b"{}"
  assert server.requests[0] == server.requests[1]
  assert server.requests[0] == kept.request(BODY, HEADERS)


@pytest.mark.parametrize("answer,body", [
    (OK + b"Content-Length: 5\r\n\r\nhello", b"hello"),
    (OK + b"Transfer-Encoding: chunked\r\n\r\n3;x=y\r\nhel\r\n2\r\nlo\r\n"
     b"0\r\nTrailer: t\r\n\r\n", b"hello"),
    (b"HTTP/1.1 100 Continue\r\n\r\n" + OK + b"Content-Length: 2\r\n\r\nok",
     b"ok"),
    (b"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", b"")])
def test_answers_framed_every_way_keep_the_connection(answer, body):
  server = RawServer([answer, OK + b"Content-Length: 2\r\n\r\n{}"])
  kept = plain_http.KeptConnections(server.url(), timeout=10)
  assert kept.post(BODY, HEADERS)[2] == body
  assert kept.post(BODY, HEADERS)[2] == b"{}"
  assert server.connections == 1


@pytest.mark.parametrize("answer", [
    OK + b"Connection: close\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
    OK + b"\r\nok"])  # No length: the body runs to the connection's end.
def test_an_answer_that_ends_the_connection_gets_a_new_one(answer):
  server = RawServer([answer, OK + b"Content-Length: 2\r\n\r\n{}"],
                     close_after={1})
  kept = plain_http.KeptConnections(server.url(), timeout=10)
  status, said, body = kept.post(BODY, HEADERS)
  assert (status, body) == (200, b"ok")
  assert kept.post(BODY, HEADERS)[2] == b"{}"
  assert server.connections == 2


def test_a_connection_the_server_dropped_is_replaced_once():
  server = RawServer([OK + b"Content-Length: 2\r\n\r\nok",
                      OK + b"Content-Length: 2\r\n\r\n{}"], close_after={1})
  kept = plain_http.KeptConnections(server.url(), timeout=10)
  assert kept.post(BODY, HEADERS)[2] == b"ok"  # Kept; the server closes.
  assert kept.post(BODY, HEADERS)[2] == b"{}"
  assert server.connections == 2


def test_an_error_status_keeps_its_headers():
  server = RawServer([b"HTTP/1.1 429 Too Many\r\nRetry-After: 2\r\n"
                      b"Content-Length: 4\r\n\r\nslow"])
  kept = plain_http.KeptConnections(server.url(), timeout=10)
  status, said, body = kept.post(BODY, HEADERS)
  assert status == 429 and ("Retry-After", "2") in said and body == b"slow"


@pytest.mark.parametrize("answer,error", [
    (b"garbage\r\n\r\n", http.client.BadStatusLine),
    (OK + b"Content-Length: 9\r\n\r\nshort", http.client.IncompleteRead),
    (OK + b"Content-Length: x\r\n\r\n", http.client.HTTPException)])
def test_a_malformed_answer_is_http_clients_exception(answer, error):
  server = RawServer([answer], close_after={1})
  kept = plain_http.KeptConnections(server.url(), timeout=10)
  with pytest.raises(error):
    kept.post(BODY, HEADERS)


def test_a_header_that_would_break_the_request_is_refused():
  kept = plain_http.KeptConnections("http://127.0.0.1:9/v1", timeout=1)
  with pytest.raises(ValueError):
    kept.request(BODY, {"Authorization": "Bearer k\r\nX-Evil: 1"})


def test_a_bad_chunk_size_is_http_clients_exception():
  server = RawServer(
      [OK + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n"],
      close_after={1})
  kept = plain_http.KeptConnections(server.url(), timeout=10)
  with pytest.raises(http.client.HTTPException):
    kept.post(BODY, HEADERS)


def test_a_server_that_closes_without_answering_is_disconnected():
  server = RawServer([b""], close_after={1})
  kept = plain_http.KeptConnections(server.url(), timeout=10)
  with pytest.raises(http.client.RemoteDisconnected):
    kept.post(BODY, HEADERS)
  assert server.connections == 1  # A fresh connection's failure: no retry.


def test_a_post_with_a_breaking_header_sends_nothing():
  server = RawServer([])
  kept = plain_http.KeptConnections(server.url(), timeout=10)
  with pytest.raises(ValueError):
    kept.post(BODY, {"X-Evil\r\nHost": "h"})
  assert server.requests == []

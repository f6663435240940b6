"""Plain-HTTP keep-alive posts for a local endpoint: one send, h11's read.

For an `http://` endpoint reached without a proxy (a server on this
machine or the local network: vLLM, llama.cpp, the embedded one),
models/chat_post.py posts each request on a connection kept per thread.
`http.client` sent a request's headers and body in two sends (two trips
through the loopback's TCP stack, the server woken twice) and read the
answer's headers through the `email` package's parser, CPU that a
thousand agents' calls a slot turn into a tenth of a run's
(docs/measurements.md). Here `h11`, python-hyper's HTTP/1.1 state
machine (httpx's own), frames the request (the request line and headers
`http.client` sent, `Host` and `Content-Length` among them) for one
`sendall`, and reads the answer as HTTP/1.1 says: by `Content-Length`,
chunks, or to the end of the connection, and whether the connection may
serve the next request. A malformed answer raises `http.client`'s
exceptions, so chat_post.py reads a failure as before.
"""

from __future__ import annotations

import http.client
import socket
import threading
import urllib.parse
from collections.abc import Mapping

import h11

# What one `recv` asks for: an answer of a few kilobytes in one read.
_READ = 65536


class _Connection:
  """One socket and its h11 state machine."""

  def __init__(self, host: str, port: int, timeout: float):
    self.sock = socket.create_connection((host, port), timeout=timeout)
    self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    self.http = h11.Connection(our_role=h11.CLIENT)
    self.ended = False  # The server ended the connection (h11 reads on).

  def close(self) -> None:
    self.sock.close()

  def answer(self) -> tuple[int, list[tuple[str, str]], bytes]:
    """The answer's status, headers and body (1xx answers skipped);
    raises http.client.RemoteDisconnected when the server closed before
    a byte of it, http.client.HTTPException when it is malformed."""
    status, said, parts, heard = 0, [], [], False
    try:
      while True:
        event = self.http.next_event()
        kind = type(event)
        if kind is h11.Data:
          parts.append(event.data)
        elif kind is h11.EndOfMessage:
          return status, said, b"".join(parts)
        elif kind is h11.Response:
          status = event.status_code
          said = [(name.decode("iso-8859-1"), value.decode("iso-8859-1"))
                  for name, value in event.headers.raw_items()]
        elif event is h11.NEED_DATA:
          data = self.sock.recv(_READ)
          if not data and not heard:
            raise http.client.RemoteDisconnected(
                "Remote end closed connection without response")
          heard, self.ended = True, not data
          self.http.receive_data(data)  # b"": the end of the connection.
    except h11.RemoteProtocolError as e:
      raise http.client.HTTPException(f"malformed answer: {e}") from e

  def reusable(self) -> bool:
    """Whether the connection may carry the next request, and if so
    readies it (an answer read to the connection's end leaves both sides
    DONE in h11, the connection gone)."""
    if (not self.ended and self.http.our_state is h11.DONE
        and self.http.their_state is h11.DONE):
      self.http.start_next_cycle()
      return True
    return False


def _framed(http: h11.Connection, target: str, host: str, content: bytes,
            headers: Mapping[str, str]) -> bytes:
  """The request's bytes, through `http`: line, headers (in http.client's
  order), body. ValueError for a header that would break the request's
  lines, as http.client raises."""
  fields = [("Host", host), ("Accept-Encoding", "identity"),
            ("Content-Length", str(len(content)))]
  fields.extend(headers.items())
  try:
    return (http.send(h11.Request(method="POST", target=target,
                                  headers=fields))
            + http.send(h11.Data(data=content))
            + http.send(h11.EndOfMessage()))
  except h11.LocalProtocolError as e:
    raise ValueError(f"Invalid header: {e}") from e


class KeptConnections:
  """Plain-HTTP keep-alive connections, one per thread.

  A connection the server closed while it was idle is replaced once, at
  once, as `httpx2` and `http.client` users do.
  """

  def __init__(self, url: str, timeout: float):
    parts = urllib.parse.urlsplit(url)
    self._host, self._port = parts.hostname or "", parts.port or 80
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    self._target = path or "/"
    # The Host header as http.client writes it: the port only if not 80.
    self._host_field = (
        f"[{self._host}]" if ":" in self._host else self._host) + (
            f":{self._port}" if self._port != 80 else "")
    self._timeout = timeout
    self._local = threading.local()

  def request(self, content: bytes, headers: Mapping[str, str]) -> bytes:
    """The request's bytes as `post` sends them on a fresh connection."""
    return _framed(h11.Connection(our_role=h11.CLIENT), self._target,
                   self._host_field, content, headers)

  def post(self, content: bytes, headers: Mapping[str, str]
           ) -> tuple[int, list[tuple[str, str]], bytes]:
    """(status, headers, body); raises OSError (TimeoutError for a
    timeout), http.client.HTTPException, or ValueError for a header that
    would break the request."""
    for attempt in range(2):
      connection = getattr(self._local, "connection", None)
      kept = connection is not None
      try:
        if connection is None:
          connection = self._local.connection = _Connection(
              self._host, self._port, self._timeout)
        connection.sock.sendall(_framed(
            connection.http, self._target, self._host_field, content,
            headers))
        answer = connection.answer()
      except (OSError, http.client.HTTPException, ValueError) as e:
        if connection is not None:
          connection.close()
        self._local.connection = None
        stale = isinstance(e, (http.client.RemoteDisconnected,
                               ConnectionResetError, BrokenPipeError))
        if kept and stale and attempt == 0:
          continue
        raise
      if not connection.reusable():
        connection.close()
        self._local.connection = None
      return answer
    raise AssertionError("unreachable")

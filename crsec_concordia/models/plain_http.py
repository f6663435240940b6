"""Plain-HTTP keep-alive posts for a local endpoint: one send, a lean read.

For an `http://` endpoint reached without a proxy (a server on this
machine or the local network: vLLM, llama.cpp, the embedded one),
models/chat_post.py posts each request on a connection kept per thread.
`http.client` sent a request's headers and body in two sends (two trips
through the loopback's TCP stack, the server woken twice) and read the
answer's headers through the `email` package's parser, about 400
microseconds of CPU per request where this takes about 150
(docs/measurements.md): at a thousand agents' worth of calls a slot, a
tenth of the run's CPU. The request is the one `http.client` sent (the
same request line and headers, `Host` and `Content-Length` among them), in
one `sendall`; the answer is read as HTTP/1.1 says, by `Content-Length`,
chunks, or to the end of the connection, whichever it uses. A malformed
answer raises `http.client`'s exceptions, so chat_post.py reads a failure
as before. Given a way to see the server's work (`progress`,
models/server_progress.py), a request whose timeout runs out before its
answer begins waits on while that work moves.
"""

from __future__ import annotations

import http.client
import socket
import threading
import urllib.parse
from collections.abc import Callable, Hashable, Mapping

# As `http.client` bounds them: a line, and the headers of one answer.
_MAX_LINE = 65536
_MAX_HEADERS = 100
# Statuses whose answers have no body, whatever their headers say.
_NO_BODY = (204, 304)


class _Connection:
  """One socket and its buffered reader."""

  def __init__(self, host: str, port: int, timeout: float):
    self.sock = socket.create_connection((host, port), timeout=timeout)
    self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    self.reader = self.sock.makefile("rb")

  def close(self) -> None:
    try:
      self.reader.close()
    finally:
      self.sock.close()

  def line(self) -> bytes:
    found = self.reader.readline(_MAX_LINE + 1)
    if len(found) > _MAX_LINE:
      raise http.client.LineTooLong("header line")
    return found

  def exactly(self, size: int) -> bytes:
    data = self.reader.read(size)
    if len(data) < size:
      raise http.client.IncompleteRead(data, size - len(data))
    return data


def await_answer(sock: socket.socket,
                 progress: Callable[[], Hashable | None]) -> None:
  """Returns when the answer's first byte has come (or the server closed),
  each wait as long as the socket's timeout; raises TimeoutError once the
  server's work, looked at after each wait, is unknown, idle, or as it was
  at the look before. Peeked, so the reader still reads the answer whole."""
  seen: Hashable | None = None
  while True:
    try:
      sock.recv(1, socket.MSG_PEEK)
      return
    except TimeoutError:
      now = progress()
      if not now or now == seen:
        raise
      seen = now


def _status(connection: _Connection) -> tuple[str, int]:
  """The status line's version and code (1xx answers skipped)."""
  while True:
    line = connection.line()
    if not line:
      raise http.client.RemoteDisconnected(
          "Remote end closed connection without response")
    version, _, rest = line.decode("iso-8859-1").partition(" ")
    code = rest.strip().split(" ", 1)[0]
    if not version.startswith("HTTP/") or not code.isdigit():
      raise http.client.BadStatusLine(line.decode("iso-8859-1").strip())
    status = int(code)
    if not 100 <= status < 200 or status == 101:
      return version, status
    _headers(connection)  # An interim answer's headers: skipped.


def _headers(connection: _Connection) -> list[tuple[str, str]]:
  headers: list[tuple[str, str]] = []
  while True:
    line = connection.line()
    if line in (b"\r\n", b"\n", b""):
      return headers
    if len(headers) >= _MAX_HEADERS:
      raise http.client.HTTPException(
          f"got more than {_MAX_HEADERS} headers")
    name, colon, value = line.decode("iso-8859-1").partition(":")
    if not colon:
      raise http.client.HTTPException(f"malformed header line {line!r}")
    headers.append((name.strip(), value.strip()))


def _chunked(connection: _Connection) -> bytes:
  parts = []
  while True:
    size_line = connection.line().split(b";", 1)[0].strip()
    try:
      size = int(size_line, 16)
    except ValueError:
      raise http.client.IncompleteRead(b"".join(parts)) from None
    if size == 0:
      _headers(connection)  # Trailers, up to the blank line.
      return b"".join(parts)
    parts.append(connection.exactly(size))
    connection.exactly(2)  # The chunk's CRLF.


class KeptConnections:
  """Plain-HTTP keep-alive connections, one per thread.

  A connection the server closed while it was idle is replaced once, at
  once, as `httpx2` and `http.client` users do.
  """

  def __init__(self, url: str, timeout: float,
               progress: Callable[[], Hashable | None] | None = None):
    parts = urllib.parse.urlsplit(url)
    self._host, self._port = parts.hostname or "", parts.port or 80
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    # The Host header as http.client writes it: the port only if not 80.
    host = (f"[{self._host}]" if ":" in self._host else self._host) + (
        f":{self._port}" if self._port != 80 else "")
    self._head = f"POST {path or '/'} HTTP/1.1\r\nHost: {host}\r\n"
    self._timeout = timeout
    self._progress = progress
    self._local = threading.local()

  def request(self, content: bytes, headers: Mapping[str, str]) -> bytes:
    """The request's bytes: line, headers (in http.client's order), body.
    ValueError for a header that would break the request's lines, as
    http.client raises."""
    lines = [self._head, "Accept-Encoding: identity\r\n",
             f"Content-Length: {len(content)}\r\n"]
    for name, value in headers.items():
      if any(c in f"{name}{value}" for c in "\r\n\0"):
        raise ValueError(f"Invalid header {name!r}")
      lines.append(f"{name}: {value}\r\n")
    lines.append("\r\n")
    return "".join(lines).encode("iso-8859-1") + content

  def post(self, content: bytes, headers: Mapping[str, str]
           ) -> tuple[int, list[tuple[str, str]], bytes]:
    """(status, headers, body); raises OSError (TimeoutError for a
    timeout) or http.client.HTTPException."""
    sent = self.request(content, headers)
    for attempt in range(2):
      connection = getattr(self._local, "connection", None)
      kept = connection is not None
      try:
        if connection is None:
          connection = self._local.connection = _Connection(
              self._host, self._port, self._timeout)
        connection.sock.sendall(sent)
        if self._progress is not None:
          await_answer(connection.sock, self._progress)
        version, status = _status(connection)
        said = _headers(connection)
        body, closes = _body(connection, version, status, said)
      except (OSError, http.client.HTTPException) as e:
        if connection is not None:
          connection.close()
        self._local.connection = None
        stale = isinstance(e, (http.client.RemoteDisconnected,
                               ConnectionResetError, BrokenPipeError))
        if kept and stale and attempt == 0:
          continue
        raise
      if closes:
        connection.close()
        self._local.connection = None
      return status, said, body
    raise AssertionError("unreachable")


def _body(connection: _Connection, version: str, status: int,
          said: list[tuple[str, str]]) -> tuple[bytes, bool]:
  """The answer's body, and whether the connection ends after it."""
  fields = {name.lower(): value for name, value in said}
  tokens = {t.strip().lower()
            for t in fields.get("connection", "").split(",")}
  closes = "close" in tokens or (version == "HTTP/1.0"
                                 and "keep-alive" not in tokens)
  if status in _NO_BODY:
    return b"", closes
  if "chunked" in fields.get("transfer-encoding", "").lower():
    return _chunked(connection), closes
  length = fields.get("content-length")
  if length is not None:
    try:
      size = int(length)
    except ValueError:
      raise http.client.HTTPException(
          f"bad Content-Length {length!r}") from None
    if size < 0:
      raise http.client.HTTPException(f"bad Content-Length {length!r}")
    return connection.exactly(size), closes
  return connection.reader.read(), True  # To the end of the connection.

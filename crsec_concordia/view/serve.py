"""Serving the page on localhost with the standard library, following the
run while it goes.

Two addresses, on 127.0.0.1 only (a run's transcripts are not for the
network): the page, made from the run as it is now, and live.json, which
the page polls for a newer version of its data (live.py). Nothing else of
the directory is served.
"""

from __future__ import annotations

import http.server
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

from crsec_concordia.errors import UserError
from crsec_concordia.view import live


def _handler(watch: live.Watch, name: str) -> type:
  class Handler(http.server.BaseHTTPRequestHandler):
    """GET the page or live.json; anything else is not found."""

    def log_message(self, format, *args):  # pylint: disable=redefined-builtin
      del format, args

    def do_GET(self):  # pylint: disable=invalid-name
      url = urlsplit(self.path)
      try:
        if url.path == f"/{live.LIVE}":
          have = parse_qs(url.query).get("v", [""])[0]
          self._send(watch.answer(have), "application/json")
        elif url.path in ("/", f"/{name}"):
          self._send(watch.html(), "text/html; charset=utf-8")
        else:
          self.send_error(404)
      except UserError as e:
        self.send_error(503, str(e))

    def _send(self, body: bytes, kind: str) -> None:
      self.send_response(200)
      self.send_header("Content-Type", kind)
      self.send_header("Content-Length", str(len(body)))
      self.send_header("Cache-Control", "no-store")
      self.end_headers()
      self.wfile.write(body)

  return Handler


def serve(watch: live.Watch, name: str, port: int,
          ready: Callable[[str], None] = print) -> None:
  """Serves `watch`'s page at http://127.0.0.1:PORT/NAME until
  interrupted; `ready` gets the URL once the socket is open (port 0: any
  free port)."""
  with http.server.ThreadingHTTPServer(("127.0.0.1", port),
                                       _handler(watch, name)) as httpd:
    ready(f"http://127.0.0.1:{httpd.server_address[1]}/{name}")
    try:
      httpd.serve_forever()
    except KeyboardInterrupt:
      pass

"""Serving a written page on localhost with the standard library.

Only the page's own directory is served, on 127.0.0.1 (never on another
interface): a run's transcripts are not for the network.
"""

from __future__ import annotations

import functools
import http.server
from collections.abc import Callable
from pathlib import Path


class _Quiet(http.server.SimpleHTTPRequestHandler):
  def log_message(self, format, *args):  # pylint: disable=redefined-builtin
    del format, args


def serve(page: Path, port: int,
          ready: Callable[[str], None] = print) -> None:
  """Serves `page` at http://127.0.0.1:PORT/NAME until interrupted;
  `ready` gets the URL once the socket is open (port 0: any free port)."""
  handler = functools.partial(_Quiet, directory=str(page.parent))
  with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as httpd:
    ready(f"http://127.0.0.1:{httpd.server_address[1]}/{page.name}")
    try:
      httpd.serve_forever()
    except KeyboardInterrupt:
      pass

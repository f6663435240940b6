"""Whether a llama.cpp server is still at work: its `/slots`, read when a
request's timeout runs out.

A request's timeout is there to find a server that stopped working, not to
cut off a slow one. On a small machine a few long prompts at once take
minutes each (docs/measurements.md), longer than a timeout sized for
ordinary requests, and a request given up is sent again with the work done
on it lost, so a fixed timeout either waits long on a dead server or throws
away a live server's work. llama.cpp's server shows what each slot is doing
(`/slots`: its task, the prompt tokens read, the tokens written), so a
request that has waited its timeout looks there, and waits one timeout more
while the slots moved since its last look. It is given up when no slot is
at work, when nothing moved, or when the server has no `/slots` (another
kind of server: the timeout stands as given).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Hashable

# Statuses that say a server has no `/slots` (another kind of server, or
# llama.cpp started with it off): not asked again.
_NO_SLOTS = (404, 405, 501)
# A slot's field that changes with every request it is given, not with its
# work: left out of the state compared.
_SETTINGS = "params"


def slots_url(base_url: str) -> str:
  """The server's `/slots`, beside its OpenAI-compatible `/v1`."""
  parts = urllib.parse.urlsplit(base_url)
  path = parts.path.rstrip("/")
  if path.endswith("/v1"):
    path = path[:-len("/v1")]
  return urllib.parse.urlunsplit(
      (parts.scheme, parts.netloc, f"{path}/slots", "", ""))


def working_state(slots: object) -> Hashable | None:
  """What the slots at work are doing (equal only if none moved), or None
  for an answer that is not a list of slots. An empty state: none at work."""
  if not isinstance(slots, list) or not all(isinstance(s, dict)
                                            for s in slots):
    return None
  # `is_processing` in today's llama.cpp, `state` (0 idle) in older ones.
  busy = [s for s in slots if s.get("is_processing", s.get("state", 0))]
  return tuple(sorted(
      json.dumps({k: v for k, v in s.items() if k != _SETTINGS},
                 sort_keys=True, default=str) for s in busy))


class SlotsWatch:
  """Reads one server's `/slots` on demand; thread-safe (no state but
  whether the server has none, which only goes one way)."""

  def __init__(self, base_url: str, timeout: float = 10.0):
    self.url = slots_url(base_url)
    self._timeout = timeout
    self._missing = False
    # Loopback and local servers: a proxy variable must not send them away.
    self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

  def __call__(self) -> Hashable | None:
    """The server's working state now, or None when it cannot be read."""
    if self._missing:
      return None
    try:
      with self._opener.open(self.url, timeout=self._timeout) as answer:
        return working_state(json.loads(answer.read()))
    except urllib.error.HTTPError as e:
      if e.code in _NO_SLOTS:
        self._missing = True
      return None
    except (OSError, ValueError):
      return None

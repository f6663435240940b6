"""What the OpenAI-compatible client sends and reads, apart from the client.

The details of the chat-completions wire that are not the client's work:
whether an endpoint is on this machine (then no proxy may be involved),
stop sequences in a stable order (they are part of the cache key), text
cut at terminators a server did not take, and the prompt tokens a server
says it reused from its cache, in either dialect.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Collection, Sequence
from typing import Any


def is_loopback(url: str) -> bool:
  """Whether `url` names this machine (where no proxy should be involved)."""
  host = urllib.parse.urlsplit(url).hostname or ""
  if host == "localhost":
    return True
  try:
    return ipaddress.ip_address(host).is_loopback
  except ValueError:
    return False


def stop_sequences(terminators: Collection[str]) -> tuple[str, ...]:
  """Terminators in a stable order, without blanks or repeats.

  A set iterates in a per-process order (string hashing is randomised), which
  would change the cache key and the four stops sent from one run to the next.
  """
  if not isinstance(terminators, Sequence):
    terminators = sorted(terminators)
  return tuple(dict.fromkeys(t for t in terminators if t))


def truncate_at_terminators(text: str, terminators: Collection[str]) -> str:
  """`text` up to the first of `terminators` (servers take at most four)."""
  cut = len(text)
  for t in terminators:
    if t and (i := text.find(t)) != -1:
      cut = min(cut, i)
  return text[:cut]


def reused_prompt_tokens(response: Any) -> int:
  """Prompt tokens the server took from its prompt cache, if it says
  (`response`: the client's answer object, or the answer's JSON).

  OpenAI-style servers (vLLM, hosted APIs, recent llama.cpp) report them as
  `usage.prompt_tokens_details.cached_tokens`; llama.cpp's own `timings`
  has `cache_n`. A server that says neither reused none we know of.
  """
  if isinstance(response, dict):  # The answer's JSON, as chat_post reads it.
    usage = response.get("usage")
    details = usage.get("prompt_tokens_details") if isinstance(
        usage, dict) else None
    timings = response.get("timings")
  else:
    details = getattr(getattr(response, "usage", None),
                      "prompt_tokens_details", None)
    timings = (getattr(response, "model_extra", None) or {}).get("timings")
  cached = getattr(details, "cached_tokens", None)
  if cached is None and isinstance(details, dict):
    cached = details.get("cached_tokens")
  if cached is None and isinstance(timings, dict):
    cached = timings.get("cache_n")
  try:
    return max(0, int(cached or 0))
  except (TypeError, ValueError):
    return 0

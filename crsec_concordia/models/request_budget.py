"""What one request holds: batched questions and memories cut to fit the context.

A call that asks several questions at once (a place's slot judged by the
referee, game_masters/referee/batch.py; a slot's DetectConflict questions,
operations/detect_conflict_batch.py) must fit its prompt and its answers
into one request: the embedded server's context per request. A crowded
slot is cut here, in the order the caller gives, so the cut never depends
on which thread asked first. A prompt that shows an agent's latest
memories (the interviews) grows with the run, since a memory is a whole
slot's observation: it shows the newest that fit (`newest_fitting`),
counted by `prompt_tokens`, which errs high so that what fits here fits
on the server (docs/design.md, "Interviews").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from crsec_concordia.models.embedded import ServerSettings

# The budget of one request: the embedded server's context per request.
CONTEXT_TOKENS = ServerSettings.n_ctx_per_slot
# The characters a prompt token is counted at where a prompt must fit: under
# the fewest a token took, system line and chat template included, over a
# café run's logged requests on the embedded model (docs/design.md,
# "Interviews").
CHARS_PER_PROMPT_TOKEN = 3
# What marks a memory shown cut to its end.
CUT = "..."


def prompt_tokens(text: str) -> int:
  """`text`'s tokens as a request's budget counts them (erring high)."""
  return math.ceil(len(text) / CHARS_PER_PROMPT_TOKEN)


def newest_fitting(texts: Sequence[str], room: int, mark: str = "- "
                   ) -> list[str]:
  """The newest of `texts` (given oldest first) whose lines (`mark`, the
  text) together fit `room` tokens, oldest first; when not even the newest
  fits whole, its end cut to fit (after CUT), so the latest memory is never
  lost to an old one; nothing when there is no room at all."""
  kept: list[str] = []
  used = 0
  for text in reversed(texts):
    line = f"{mark}{text}"
    cost = prompt_tokens(line + "\n")
    if used + cost > room:
      break
    kept.append(line)
    used += cost
  head = f"{mark}{CUT}"
  if not kept and texts and room > prompt_tokens(head + "\n"):
    chars = (room - prompt_tokens(head + "\n")) * CHARS_PER_PROMPT_TOKEN
    kept.append(head + texts[-1][-chars:])
  return kept[::-1]


def in_batches(items: Sequence[Any], tokens: Callable[[Sequence[Any]], int],
               budget: int = CONTEXT_TOKENS) -> list[list[Any]]:
  """`items` in batches, in their order, each as large as fits `budget`
  (`tokens`: a batch's prompt and answers); an item too large alone is a
  batch of its own."""
  batches: list[list[Any]] = []
  for item in items:
    if batches and tokens([*batches[-1], item]) <= budget:
      batches[-1].append(item)
    else:
      batches.append([item])
  return batches

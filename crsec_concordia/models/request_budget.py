"""What one request holds: batched questions cut to fit the model's context.

A call that asks several questions at once (a place's slot judged by the
referee, game_masters/referee/batch.py; a slot's DetectConflict questions,
operations/detect_conflict_batch.py) must fit its prompt and its answers
into one request: the embedded server's context per request. A crowded
slot is cut here, in the order the caller gives, so the cut never depends
on which thread asked first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from crsec_concordia.models.embedded import ServerSettings

# The budget of one request: the embedded server's context per request.
CONTEXT_TOKENS = ServerSettings.n_ctx_per_slot


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

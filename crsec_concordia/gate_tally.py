"""What each similarity gate skipped, counted: nothing dropped in silence.

A gate that reads a cosine decides, without asking the model, that a deed
is judged against no held norm, that a candidate norm is a duplicate, that
the referee need not be asked about an action, or that a model's answer
does not count. Which embedder is in use moves those decisions, so each
one is counted where it is made: the component keeps a `GateTally`, shows
each skip on its Concordia logging channel (a "skipped" entry with the
count) and hands the totals over through the agent's port (`gate_counts`),
which a run writes to gates.json each slot and the report states. The
counts are sums, so they do not depend on which thread finished first; a
component keeps them in its state, so a resumed run counts on from its
checkpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

# The gates, by the name gates.json and the report use.
RELEVANCE_FLOOR = "relevance_floor"        # ConflictDetector
DUPLICATE_PRECHECK = "duplicate_precheck"  # ImmediateEvaluation
SPARED_FAR_ACTION = "spared_far_action"    # the referee, not asked
TAG_FLOOR = "tag_floor"                    # the referee's tag gate
LOOK_FLOOR = "look_floor"                  # the second look, not asked
LOOK_NEAREST_RULE = "look_nearest_rule"    # the second look's answer refused
OCCASION_FLOOR = "occasion_floor"          # the occasion check's answer refused
JUDGE_FLOOR_SKIPS = "judge_floor"          # the matcher's judge, not asked
GATE_ORDER = (RELEVANCE_FLOOR, DUPLICATE_PRECHECK, SPARED_FAR_ACTION,
              TAG_FLOOR, LOOK_FLOOR, LOOK_NEAREST_RULE, OCCASION_FLOOR,
              JUDGE_FLOOR_SKIPS)
SKIPPED = "skipped"  # The measurement's key on a component's channel.


class GateTally:
  """Counts of skips by gate; safe across threads."""

  def __init__(self) -> None:
    self._lock = threading.Lock()
    self._counts: dict[str, int] = {}

  def add(self, gate: str, count: int = 1,
          log: Callable[[Mapping[str, Any]], None] | None = None) -> None:
    """Counts `count` skips of `gate` (nothing if 0) and, given the
    component's logging channel, shows them there."""
    if count <= 0:
      return
    with self._lock:
      total = self._counts[gate] = self._counts.get(gate, 0) + int(count)
    if log is not None:
      log({"Key": SKIPPED, "Summary": f"{SKIPPED}: {count} by {gate}",
           "Value": {"gate": gate, "count": int(count), "total": total}})

  def counts(self) -> dict[str, int]:
    """The totals so far, by gate (only those that skipped something)."""
    with self._lock:
      return dict(sorted(self._counts.items()))

  def restore(self, counts: Mapping[str, Any] | None) -> None:
    """The totals of a checkpoint (a component's set_state)."""
    with self._lock:
      self._counts = {str(k): int(v) for k, v in dict(counts or {}).items()}


def summed(many: Iterable[Mapping[str, int]]) -> dict[str, int]:
  """Several tallies' counts added up, by gate."""
  total: dict[str, int] = {}
  for counts in many:
    for gate, n in counts.items():
      total[gate] = total.get(gate, 0) + int(n)
  return dict(sorted(total.items()))

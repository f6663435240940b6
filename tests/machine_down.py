"""The machine going down in the middle of a slot, for the resume tests.

Every resume test needs the same accident: a run that stops while a slot's
actions are being resolved, as a kill or a power cut would stop it, so
that `crsec resume` has a half-played slot to throw away and play again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from crsec_concordia.game_masters import adjudication


class Crash(Exception):
  """The machine went down."""


@contextlib.contextmanager
def down_in_slot(monkeypatch, step: int) -> Iterator[pytest.MonkeyPatch]:
  """The run played inside this block stops with `Crash` when the first
  action of slot `step` is resolved (adjudicated or carried forward: a slot
  in which every agent goes on has no adjudication). Yields the patch, for
  more changes that should end with the block."""
  real = adjudication.Adjudication.resolve_action

  def resolve(self, actor, raw_action, stamp):
    if stamp.step == step:
      raise Crash("the machine went down")
    return real(self, actor, raw_action, stamp)

  with monkeypatch.context() as patch:
    patch.setattr(adjudication.Adjudication, "resolve_action", resolve)
    with pytest.raises(Crash):
      yield patch

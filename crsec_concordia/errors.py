"""Errors meant for a person: one line naming the problem and the fix."""

from __future__ import annotations

import importlib
from types import ModuleType


class UserError(Exception):
  """Bad input (a flag, a file, a run directory). The CLI exits with code 2."""


class MissingExtra(UserError):
  """A feature whose optional dependencies (a pip extra) are not installed."""

  def __init__(self, feature: str, extra: str):
    super().__init__(
        f"{feature} needs the '{extra}' extra: pip install "
        f"'crsec-concordia[{extra}]'")
    self.feature = feature
    self.extra = extra


def require(module: str, extra: str, feature: str) -> ModuleType:
  """Imports an optional dependency, or raises `MissingExtra` naming its extra.

  The core installs without torch, llama.cpp, Ray or the model weights; a
  feature that needs one of them imports it through here, late, so that a
  user without the extra gets one line with the install command.
  """
  try:
    return importlib.import_module(module)
  except ModuleNotFoundError as e:
    root = module.split(".")[0]
    if e.name is not None and e.name.split(".")[0] != root:
      raise  # The extra is there but broken: show the real error.
    raise MissingExtra(feature, extra) from None

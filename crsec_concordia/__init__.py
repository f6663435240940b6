"""crsec-concordia: the CRSEC normative architecture for Concordia agents."""

import importlib
import importlib.metadata
from typing import Any

try:
  __version__ = importlib.metadata.version("crsec-concordia")
except importlib.metadata.PackageNotFoundError:  # A source tree, not installed.
  __version__ = "0.0.0+unknown"

__all__ = ["RunData", "__version__", "load_run"]

# Reading a run needs pandas; importing a component must not pay for it
# (PEP 562: the names load on first use).
_LAZY = {"RunData": "crsec_concordia.analysis",
         "load_run": "crsec_concordia.analysis"}


def __getattr__(name: str) -> Any:
  if name in _LAZY:
    return getattr(importlib.import_module(_LAZY[name]), name)
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

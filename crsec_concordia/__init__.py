"""crsec-concordia: the CRSEC normative architecture for Concordia agents."""

import importlib.metadata

try:
  __version__ = importlib.metadata.version("crsec-concordia")
except importlib.metadata.PackageNotFoundError:  # A source tree, not installed.
  __version__ = "0.0.0+unknown"

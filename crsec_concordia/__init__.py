"""crsec-concordia: the CRSEC normative architecture for Concordia agents."""

import importlib.metadata

try:
  __version__ = importlib.metadata.version("crsec-concordia")
except importlib.metadata.PackageNotFoundError:  # A source tree, not installed.
  __version__ = "0.0.0+unknown"

# pylint: disable=wrong-import-position
from crsec_concordia.analysis import RunData, load_run  # noqa: E402

__all__ = ["RunData", "__version__", "load_run"]

"""The exact `crsec calibrate` command that calibrates a run's model and venue.

A report that cannot correct a share says why and what to run, in words a
person can paste: the venue as the command takes it (a shipped scenario's
name, or the scenario file a held-out venue's probe file sits beside) or,
for a venue with no labelled cases, the labelling sheet written from the
run itself; and the run's endpoint (none for the embedded model), each
quoted for a shell.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crsec_concordia.calibration import probes
from crsec_concordia.calibration.identity import EMBEDDED, ModelIdentity


def model_flags(described: Mapping[str, Any]) -> str:
  """The endpoint flags of a run's model (run.json's `model`)."""
  identity = ModelIdentity.of_described(described)
  if identity.endpoint == EMBEDDED:
    return ""
  url = described.get("endpoint") if identity.endpoint != "given" else None
  return (f" --base-url {shlex.quote(str(url)) if url else 'URL'} "
          f"--model {shlex.quote(identity.name)}")


def command(described: Mapping[str, Any], venue: str,
            scenario_path: str | None = None,
            run_dir: str | Path | None = None) -> str:
  """`crsec calibrate ...` for this model on this venue."""
  flags = model_flags(described)
  if venue in probes.probed_venues():
    return f"crsec calibrate {venue}{flags}"
  if scenario_path and probes.probes_path_of(Path(scenario_path)).is_file():
    return f"crsec calibrate {shlex.quote(str(scenario_path))}{flags}"
  run = shlex.quote(str(run_dir)) if run_dir else "RUN_DIR"
  return (f"crsec calibrate --sheet {run} --out SHEET.csv, label it, then "
          "crsec calibrate --labels SHEET.csv")


def not_calibrated(described: Mapping[str, Any], venue: str,
                   scenario_path: str | None = None,
                   run_dir: str | Path | None = None) -> str:
  """The line a report shows where no calibration holds."""
  identity = ModelIdentity.of_described(described)
  return (f"not calibrated for {identity.name} on {venue}: run "
          f"{command(described, venue, scenario_path, run_dir)}; behaviour "
          "shares are raw (not corrected)")

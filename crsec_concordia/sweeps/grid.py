"""The grid: a sweep file expanded to runs, each with a stable id and place.

A run's id is made of its coordinates only
(`hobbs_cafe_mini__no_talk__vllm__normative__seed3`), never of a counter or
a time, so the same sweep file names the same runs every time: a rerun
finds its completed runs where it left them, and adding a seed or a
condition adds runs without moving the others. Its directory is
SWEEP_DIR/runs/<id>/.

sweep.json, in the sweep directory, records the expanded grid and each
run's status as the sweep goes (written atomically, so it is never half a
file): see docs/design.md, "Sweeps".
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from crsec_concordia.models import EndpointConfig
from crsec_concordia.models.base import redact_url
from crsec_concordia.rundir.format import SWEEP_JSON
from crsec_concordia.rundir.format import SWEEP_RUNS as RUNS
from crsec_concordia.rundir.writing import now
from crsec_concordia.sweeps import spec as spec_lib


@dataclasses.dataclass(frozen=True)
class RunSpec:
  """One point of the grid."""
  id: str
  scenario: str
  condition: str
  endpoint: str
  arm: str
  seed: int
  steps: int | None
  run_dir: str  # Relative to the sweep directory.

  def coordinates(self) -> dict[str, Any]:
    return {"scenario": self.scenario, "condition": self.condition,
            "endpoint": self.endpoint, "arm": self.arm, "seed": self.seed}

  @property
  def cell(self) -> tuple[str, str, str]:
    """The runs aggregated together over seeds (with both arms)."""
    return (self.scenario, self.condition, self.endpoint)


def _slug(text: str) -> str:
  return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "x"


def run_id(scenario: str, condition: str, endpoint: str, arm: str,
           seed: int) -> str:
  return "__".join((_slug(scenario), condition, endpoint, arm, f"seed{seed}"))


def default_layout(run: RunSpec) -> str:
  return f"{RUNS}/{run.id}"


def _excluded(point: Mapping[str, Any],
              rules: Iterable[spec_lib.Exclude]) -> bool:
  for rule in rules:
    given = rule.model_dump(exclude_none=True)
    if given and all(point[k] == v for k, v in given.items()):
      return True
  return False


def expand_grid(spec: spec_lib.SweepFile, scenario_names: list[str],
                layout: Callable[[RunSpec], str] = default_layout
                ) -> list[RunSpec]:
  """Every run of the grid, in a stable order: scenario, condition,
  endpoint, seed, arm (a seed's arms next to each other, so that paired
  results arrive together)."""
  runs = []
  for scenario in scenario_names:
    for condition in spec.conditions:
      for endpoint in spec.endpoints:
        for seed in spec.seeds:
          for arm in spec.arms:
            point = {"scenario": scenario, "condition": condition,
                     "endpoint": endpoint, "arm": arm, "seed": seed}
            if _excluded(point, spec.exclude):
              continue
            run = RunSpec(run_id(scenario, condition, endpoint, arm, seed),
                          scenario, condition, endpoint, arm, seed,
                          spec.steps, "")
            runs.append(dataclasses.replace(run, run_dir=layout(run)))
  return runs


def endpoint_config(endpoint: spec_lib.Endpoint) -> EndpointConfig:
  """The EndpointConfig a run gets (the key read from the environment; a
  factory imported now, so a wrong one stops the sweep before any run)."""
  if endpoint.factory:
    return EndpointConfig.resolve(
        endpoint.base_url, timeout=float(endpoint.timeout),
        max_in_flight=endpoint.max_in_flight, factory=endpoint.factory)
  if not endpoint.base_url:
    return EndpointConfig(schema_mode=endpoint.schema_mode,
                          timeout=float(endpoint.timeout),
                          max_in_flight=endpoint.max_in_flight)
  key = os.environ.get(endpoint.api_key_env) if endpoint.api_key_env else None
  return EndpointConfig(base_url=endpoint.base_url, api_key=key,
                        model=endpoint.model,
                        schema_mode=endpoint.schema_mode,
                        timeout=float(endpoint.timeout),
                        max_in_flight=endpoint.max_in_flight)


def endpoint_configs(spec: spec_lib.SweepFile,
                     default: Callable[[], EndpointConfig]
                     ) -> dict[str, EndpointConfig]:
  """Per endpoint name; a file without `endpoints:` gets `default()` (the
  command's flags and environment, as for `crsec run`)."""
  if "endpoints" not in spec.model_fields_set:
    return {name: default() for name in spec.endpoints}
  return {name: endpoint_config(e) for name, e in spec.endpoints.items()}


# -- sweep.json ----------------------------------------------------------------


def read_manifest(sweep_dir: Path) -> dict[str, Any] | None:
  try:
    return json.loads((sweep_dir / SWEEP_JSON).read_text(encoding="utf-8"))
  except (OSError, ValueError):
    return None


def manifest(name: str, sweep_file: str | None, spec: spec_lib.SweepFile,
             scenarios: Mapping[str, str | None],
             endpoints: Mapping[str, EndpointConfig], runs: list[RunSpec],
             previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
  """sweep.json for this grid; what a previous run of the sweep learnt
  about each run (status, error, attempts) is kept by run id."""
  before = {r["id"]: r for r in (previous or {}).get("runs", [])}
  entries = []
  for run in runs:
    entry = {**dataclasses.asdict(run), "status": "pending", "error": None,
             "attempts": 0, "wall_seconds": None, "finished": None}
    old = before.get(run.id)
    if old:
      entry.update({k: old.get(k) for k in (
          "status", "error", "attempts", "wall_seconds", "finished",
          "action", "node") if k in old})
    entries.append(entry)
  return {
      "kind": "crsec-sweep", "name": name, "sweep_file": sweep_file,
      "created": (previous or {}).get("created") or now(), "updated": now(),
      "status": "running",
      "spec": _shown(spec),
      "reference": spec.reference_condition,
      "scenarios": dict(scenarios),
      "endpoints": {n: e.describe() for n, e in endpoints.items()},
      "runs": entries,
  }


def _shown(spec: spec_lib.SweepFile) -> dict[str, Any]:
  """The sweep file's data as sweep.json keeps it: endpoints' base URLs
  without credentials."""
  data = spec.model_dump(mode="json")
  for endpoint in data.get("endpoints", {}).values():
    endpoint["base_url"] = redact_url(endpoint.get("base_url"))
  for condition in data.get("conditions", {}).values():
    if condition.get("models") is None:  # As before models by role.
      condition.pop("models", None)
    for endpoint in ((condition.get("models") or {}).get("endpoints")
                     or {}).values():
      if isinstance(endpoint, dict) and endpoint.get("base_url"):
        endpoint["base_url"] = redact_url(endpoint["base_url"])
  return data


def runs_of(data: Mapping[str, Any]) -> list[RunSpec]:
  """The grid recorded in a sweep.json."""
  fields = {f.name for f in dataclasses.fields(RunSpec)}
  return [RunSpec(**{k: v for k, v in r.items() if k in fields})
          for r in data.get("runs", [])]

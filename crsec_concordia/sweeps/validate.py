"""Reading and checking a sweep file: every problem, one line each.

A sweep can take days on a cluster, so the file is checked completely
before anything starts, every problem reported at once, one line each, as
the scenario loader does (and with its helpers: the same YAML rules, line
numbers and wording):

  sweep.yaml:9: conditions.no_talk.crsec.modules.comunication: unknown key 'comunication' (did you mean communication?); remove it or ...

The file's models are in spec.py, the explanations of their errors in
explain.py and the checks across keys (conditions built for every
scenario among them) in checks.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pydantic
import yaml

from crsec_concordia.scenarios.loader import (MAX_FILE_BYTES, Scenario,
                                              ScenarioError, parse_scenario)
from crsec_concordia.scenarios.problems import Problem
from crsec_concordia.scenarios.yaml_reading import YamlLoader, duplicate_keys
from crsec_concordia.sweeps import checks
from crsec_concordia.sweeps.explain import explain_sweep_error
from crsec_concordia.sweeps.spec import SweepError, SweepFile


# -- YAML and loading ----------------------------------------------------------


def _read_yaml(text: str, source: str) -> tuple[Any, yaml.Node | None]:
  """Data and node tree, with the scenario loader's YAML rules."""
  parser = None
  try:
    # Inside the try: the reader checks every character as it is built (a
    # NUL byte or a control character fails here).
    parser = YamlLoader(text)
    root = parser.get_single_node()
    data = None if root is None else parser.construct_document(root)
  except (yaml.YAMLError, RecursionError):
    # The scenario loader reads YAML with the same rules and explains every
    # kind of syntax error in one line; it fails at the same place.
    parse_scenario(text, source)
    raise
  finally:
    if parser is not None:
      parser.dispose()
  return data, root


def _render(problems: list, source: str, root: yaml.Node | None
            ) -> list[tuple[int, str]]:
  return [p.render(source, root) if isinstance(p, Problem) else p
          for p in problems]


def _without(data: Any, locs: list[tuple]) -> SweepFile | None:
  """The sweep without what is wrong in it (a condition, an endpoint, an
  exclude rule, or else a top-level key), for the cross-checks; None when
  what they need (scenarios) is wrong."""
  if not isinstance(data, Mapping):
    return None
  kept = dict(data)
  for loc in locs:
    head = loc[0] if loc else None
    value = kept.get(head)
    if len(loc) > 1 and isinstance(value, Mapping) and head in (
        "conditions", "endpoints"):
      kept[head] = {k: v for k, v in value.items() if k != loc[1]}
    elif len(loc) > 1 and isinstance(value, list) and head == "exclude":
      kept[head] = [v for i, v in enumerate(value) if i != loc[1]]
    else:
      kept.pop(head, None)
  if "scenarios" not in kept:
    return None
  if "seeds" not in kept:
    kept["seeds"] = [1]
  try:
    return SweepFile.model_validate(kept)
  except pydantic.ValidationError:
    return None


def parse_sweep(text: str, source: str = "<string>",
                base: Path | None = None,
                overrides: Mapping[str, Any] | None = None
                ) -> tuple[SweepFile, list[Scenario]]:
  """A validated sweep and its scenarios, or SweepError with every problem.

  `overrides` replace top-level keys (the command's --steps).
  """
  try:
    data, root = _read_yaml(text, source)
  except ScenarioError as e:
    raise SweepError(e.problems) from None
  if data is None:
    raise SweepError([f"{source}:1: (top level): the file is empty; start "
                      "from examples/sweeps/mini_ablation.yaml"])
  if overrides and isinstance(data, Mapping):
    data = {**data, **overrides}
  problems: list[Any] = []
  spec = partial = None
  try:
    spec = partial = SweepFile.model_validate(data)
  except pydantic.ValidationError as e:
    problems += [explain_sweep_error(err) for err in e.errors()]
    partial = _without(data, [tuple(err["loc"]) for err in e.errors()])
  problems += list(duplicate_keys(root))
  scenarios: list[Scenario] = []
  if partial is not None:
    # What the other keys say is checked even when some key is wrong, so
    # that one pass over the file reports every problem.
    more, scenarios = checks.cross_check_sweep(partial, base or Path("."))
    problems += more
  if problems:
    rendered = dict.fromkeys(_render(problems, source, root))
    raise SweepError([text for _, text in sorted(rendered,
                                                 key=lambda r: r[0])])
  assert spec is not None
  return spec, scenarios


def load_sweep(path: str | Path, overrides: Mapping[str, Any] | None = None
               ) -> tuple[SweepFile, list[Scenario]]:
  """Loads and validates a sweep file and the scenarios it names."""
  path = Path(path).expanduser()
  source = str(path)
  if path.is_dir() or not path.is_file():
    raise SweepError([f"{source}: no such sweep file; give the path of a "
                      ".yaml file (e.g. examples/sweeps/mini_ablation.yaml)"])
  try:
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
      raise SweepError([f"{source}: is {size / 1e6:.1f} MB, too big for a "
                        "sweep file; check the path"])
    text = path.read_text(encoding="utf-8")
  except UnicodeDecodeError as e:
    raise SweepError([f"{source}: is not UTF-8 text ({e.reason} at byte "
                      f"{e.start}); save it as UTF-8"]) from None
  except OSError as e:
    raise SweepError([f"{source}: cannot be read ({e.strerror}); check the "
                      "path and its permissions"]) from None
  return parse_sweep(text, source, path.resolve().parent, overrides)

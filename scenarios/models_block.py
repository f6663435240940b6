"""The `models:` block of a scenario file, and what any models spec must be.

  models:                          # as `crsec run --models FILE` takes it
    endpoints:
      big: {base_url: http://host:8000/v1, model: qwen-7b, api_key_env: KEY}
      lab: {factory: mymodule:make}  # a Concordia model of your own
    game_master: big
    groups: {visitors: big}

A run plays the block unless it is given a spec of its own (`--models`,
`--gm-base-url`, a sweep condition's `models:`), which replaces the block
whole; runs/model_roles.py builds the models. The problems of a spec are
found here, on raw data, so that the scenario loader (checks.py) and a
models file given on the command line say the same things, one each.
Why no key in a scenario's block, only the variable holding it
(`api_key_env`): a scenario is shared and copied into every run's
scenario.json, where a key would be read by anyone the run is shown to.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia.scenarios.problems import Problem

MODELS_KEY = "models"
MAIN_MODEL = "main"
SPEC_KEYS = ("endpoints", "game_master", "groups", "agents", "share")
ENDPOINT_KEYS = ("base_url", "model", "api_key_env", "schema_mode",
                 "timeout", "max_in_flight", "embedded", "factory")


def models_problems(spec: Any, agents: Sequence[str], groups: Sequence[str],
                    given: Mapping[str, Any] | None = None,
                    environ: Mapping[str, str] | None = None) -> list[Problem]:
  """Every problem of a models spec, each located under `models`.

  Args:
    agents, groups: the names the spec may give a model.
    given: ready models by id (a program's), whose endpoints go unchecked.
    environ: the environment each `api_key_env` must be set in; None (a
      scenario file, read long before and away from its run): unchecked.
  """
  here = (MODELS_KEY,)
  if not isinstance(spec, Mapping):
    return [Problem(here, "not a mapping",
                    f"give the keys {', '.join(SPEC_KEYS)}")]
  problems = [Problem(here, f"unknown key {k!r}",
                      f"use one of {', '.join(SPEC_KEYS)}")
              for k in spec if k not in SPEC_KEYS]
  endpoints = spec.get("endpoints") or {}
  if not isinstance(endpoints, Mapping):
    return problems + [Problem(here + ("endpoints",), "not a mapping",
                               "map each model id to its base_url and model")]
  for i, e in endpoints.items():
    if i == MAIN_MODEL:
      problems.append(Problem(
          here + ("endpoints",), f"{MAIN_MODEL!r} is the run's own model "
          "(--base-url/--model)", "name this one otherwise"))
    elif i not in (given or {}):
      problems += _endpoint_problems(here + ("endpoints", i), e, environ)
  ids = {MAIN_MODEL, *endpoints}
  known = f"use {', '.join(sorted(ids, key=str))}"
  gm = spec.get("game_master", MAIN_MODEL)
  if gm not in ids:
    problems.append(Problem(here + ("game_master",), f"unknown model {gm!r}",
                            known))
  for key, names in (("groups", groups), ("agents", agents)):
    block = spec.get(key) or {}
    if not isinstance(block, Mapping):
      problems.append(Problem(here + (key,), "not a mapping",
                              "map each name to a model id"))
      continue
    for name, i in block.items():
      if name not in names:
        problems.append(Problem(
            here + (key,), f"unknown {key[:-1]} {name!r}",
            f"use one of {', '.join(names) or '(none declared)'}"))
      if i not in ids:
        problems.append(Problem(here + (key, name), f"unknown model {i!r}",
                                known))
  return problems + _share_problems(spec.get("share") or {}, ids, known)


def _endpoint_problems(loc: tuple, e: Any,
                       environ: Mapping[str, str] | None) -> list[Problem]:
  if not isinstance(e, Mapping):
    return [Problem(loc, "not a mapping",
                    "give base_url and model, or embedded: true")]
  problems = [Problem(loc, "a key written out ('api_key')",
                      "name the variable holding it instead: api_key_env: "
                      "VAR") if k == "api_key" else
              Problem(loc, f"unknown key {k!r}",
                      f"use one of {', '.join(ENDPOINT_KEYS)}")
              for k in e if k not in ENDPOINT_KEYS]
  factory = e.get("factory")
  if factory is not None and (e.get("base_url") or e.get("embedded")):
    problems.append(Problem(loc, "a factory and an endpoint", "keep one"))
  elif factory is not None and ":" not in str(factory):
    problems.append(Problem(loc, f"factory {factory!r} is not "
                            "module:function", "name a function of your "
                            "module returning a Concordia LanguageModel"))
  elif not e.get("embedded") and not e.get("base_url") and factory is None:
    problems.append(Problem(loc, "no base_url", "add base_url (e.g. "
                            "http://localhost:8000/v1), embedded: true or "
                            "factory: module:function"))
  if e.get("base_url") and not e.get("model"):
    problems.append(Problem(loc, "no model",
                            "add the name the server serves"))
  key_env = e.get("api_key_env")
  if environ is not None and key_env and key_env not in environ:
    problems.append(Problem(loc, f"${key_env} is not set",
                            "export it or drop api_key_env"))
  return problems


def _share_problems(share: Any, ids: set, known: str) -> list[Problem]:
  here = (MODELS_KEY, "share")
  if not isinstance(share, Mapping):
    return [Problem(here, "not a mapping", "map each model id to a fraction")]
  problems = []
  for i, f in share.items():
    if i not in ids:
      problems.append(Problem(here, f"unknown model {i!r}", known))
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 <= f <= 1:
      problems.append(Problem(here + (i,), f"{f!r} is not a fraction",
                              "use a number from 0 to 1"))
  if all(isinstance(f, (int, float)) for f in share.values()) and sum(
      share.values()) > 1:
    problems.append(Problem(here, "the fractions add up to more than 1",
                            "lower them"))
  return problems


def models_block_problems(data: Mapping[str, Any]) -> list[Problem]:
  """The problems of a scenario's `models:` block (checks.py runs it on
  the raw data, its population drawn): those of any spec, and a base_url
  with credentials in it."""
  if data.get(MODELS_KEY) is None:
    return []
  spec = data[MODELS_KEY]
  raw = data.get("agents")
  listed = [a for a in (raw if isinstance(raw, list) else [])
            if isinstance(a, Mapping)]
  agents = [str(a["name"]) for a in listed if a.get("name")]
  groups = list(dict.fromkeys(str(a["group"]) for a in listed
                              if a.get("group")))
  problems = models_problems(spec, agents, groups)
  endpoints = spec.get("endpoints") if isinstance(spec, Mapping) else None
  for i, e in (endpoints.items() if isinstance(endpoints, Mapping) else ()):
    url = e.get("base_url") if isinstance(e, Mapping) else None
    if isinstance(url, str) and "@" in _netloc(url):
      problems.append(Problem(
          (MODELS_KEY, "endpoints", i, "base_url"), "holds credentials "
          "(user:key@)", "drop them and name the variable holding the key "
          "with api_key_env"))
  return problems


def _netloc(url: str) -> str:
  try:
    return urllib.parse.urlsplit(url).netloc
  except ValueError:
    return url

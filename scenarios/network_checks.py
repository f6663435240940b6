"""What a scenario's `network:` block must be, and the edges it generates.

Like the other checks across fields this works on raw data, whatever
shape the rest of the file has (checks.py runs it): edges between agents
of the network, generator parameters that fit its size, groups that
exist, and recorded edges (a run's scenario.json) that the generator
still gives. `generate` is the one place the graph library is called:
the edges are a pure function of the generator, its parameters, the seed
and the agents' names in file order.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia.scenarios.problems import Problem, show

NETWORK_KEY = "network"
_GUIDE = "docs/design.md, 'Social ties'"
GENERATORS: tuple[str, ...] = ("ring", "small_world", "scale_free", "random")
# The literal fields of the block and what each allows (explain.py).
NETWORK_CHOICES: dict[str, tuple[str, ...]] = {
    "generator": GENERATORS, "talk": ("place", "tied"),
    "attend": ("all", "tied_first")}
# Which parameters each generator reads, and their defaults.
PARAMS: dict[str, dict[str, Any]] = {
    "ring": {"k": 2}, "small_world": {"k": 4, "p": 0.1},
    "scale_free": {"m": 1}, "random": {"p": 0.1}}
MAX_DEGREE = 10_000


# -- generating ------------------------------------------------------------------


def generate(generator: str, names: Sequence[str], *, k: int | None = None,
             p: float | None = None, m: int | None = None,
             seed: int = 0) -> list[list[str]]:
  """The edges `generator` gives over `names` (in that order), each
  [earlier, later] by that order, sorted: the same arguments, the same
  edges. Raises ValueError for parameters it cannot use."""
  import networkx as nx  # pylint: disable=import-outside-toplevel
  given = {"k": k, "p": p, "m": m}
  params = {key: default if given[key] is None else given[key]
            for key, default in PARAMS[generator].items()}
  n = len(names)
  if generator == "ring":
    graph = nx.watts_strogatz_graph(n, params["k"], 0.0, seed=seed)
  elif generator == "small_world":
    graph = nx.watts_strogatz_graph(n, params["k"], params["p"], seed=seed)
  elif generator == "scale_free":
    graph = nx.barabasi_albert_graph(n, params["m"], seed=seed)
  elif generator == "random":
    graph = nx.gnp_random_graph(n, params["p"], seed=seed)
  else:
    raise ValueError(f"no generator {generator!r}; use one of {GENERATORS}")
  pairs = sorted({(min(u, v), max(u, v)) for u, v in graph.edges() if u != v})
  return [[names[u], names[v]] for u, v in pairs]


def _agents(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
  agents = data.get("agents")
  return [a for a in agents if isinstance(a, Mapping)] if isinstance(
      agents, list) else []


def members(data: Mapping[str, Any], groups: Sequence[str]) -> list[str]:
  """The network's agents in file order: all, or those of `groups`."""
  return list(dict.fromkeys(
      a["name"].strip() for a in _agents(data)
      if isinstance(a.get("name"), str)
      and (not groups or a.get("group") in groups)))


def filled(data: Any) -> Any:
  """`data` with a generated network's edges written in (when the block
  is well formed; else as it is, and `network_problems` says why)."""
  block = data.get(NETWORK_KEY) if isinstance(data, Mapping) else None
  if (not isinstance(block, Mapping) or block.get("edges") is not None
      or network_problems(data)):
    return data
  edges = _generated(block, members(data, list(block.get("groups") or [])))
  return (data if edges is None
          else {**data, NETWORK_KEY: {**block, "edges": edges}})


def _generated(block: Mapping[str, Any],
               names: list[str]) -> list[list[str]] | None:
  """The edges the block's generator gives over `names`; None if the
  block has field errors (reported as such) or no generator."""
  generator = block.get("generator")
  k, m, seed = (_whole(block.get(key)) for key in ("k", "m", "seed"))
  p = probability(block.get("p"))
  if (generator not in GENERATORS or None in [
      v for key, v in (("k", k), ("m", m), ("p", p))
      if block.get(key) is not None]):
    return None  # Field errors, reported as such.
  try:
    return generate(generator, names, k=k, m=m, p=p, seed=seed or 0)
  except Exception:  # pylint: disable=broad-except
    return None  # networkx refused parameters the checks let through.


def probability(value: Any) -> float | None:
  """A probability: a number from 0 to 1, or a percentage ("10%")."""
  if isinstance(value, str) and value.strip().endswith("%"):
    try:
      value = float(value.strip()[:-1]) / 100
    except ValueError:
      return None
  if (isinstance(value, (int, float)) and not isinstance(value, bool)
      and 0 <= value <= 1):
    return float(value)
  return None


# -- checking --------------------------------------------------------------------


def _whole(value: Any) -> int | None:
  if isinstance(value, int) and not isinstance(value, bool):
    return value
  return None


def _edge_problems(edges: list, known: list[str]) -> list[Problem]:
  problems: list[Problem] = []
  seen: dict[frozenset[str], int] = {}
  for i, edge in enumerate(edges):
    loc = (NETWORK_KEY, "edges", i)
    if not (isinstance(edge, (list, tuple)) and len(edge) == 2
            and all(isinstance(e, str) for e in edge)):
      problems.append(Problem(loc, f"{show(edge)} is not a pair of names",
                              "write [First Agent, Second Agent]"))
      continue
    a, b = (e.strip() for e in edge)
    for j, name in enumerate((a, b)):
      if name not in known:
        near = difflib.get_close_matches(name, known, n=1)
        guess = f" (did you mean {near[0]}?)" if near else ""
        problems.append(Problem(
            (*loc, j), f"{show(name)} is not an agent of the network{guess}",
            f"use one of: {', '.join(known[:12])}"
            + (", ..." if len(known) > 12 else "")))
    if a == b:
      problems.append(Problem(loc, f"ties {show(a)} to itself",
                              "remove it: an edge joins two agents"))
    elif frozenset((a, b)) in seen:
      problems.append(Problem(
          loc, f"repeats edges[{seen[frozenset((a, b))]}]", "remove it"))
    else:
      seen[frozenset((a, b))] = i
  return problems


def _generator_problems(block: Mapping[str, Any], generator: str,
                        n: int) -> list[Problem]:
  problems: list[Problem] = []
  wanted = PARAMS[generator]
  for key in ("k", "p", "m"):
    if block.get(key) is not None and key not in wanted:
      problems.append(Problem(
          (NETWORK_KEY, key), f"does not apply to the {generator} generator",
          f"remove it ({generator} reads "
          f"{', '.join(wanted) or 'no parameter'})"))
  k, m = _whole(block.get("k", wanted.get("k"))), _whole(block.get("m", wanted.get("m")))
  if "k" in wanted and k is not None:
    if k % 2:
      problems.append(Problem((NETWORK_KEY, "k"), f"{k} is odd; each agent "
                              "is tied to k/2 neighbours on each side",
                              f"use an even number, e.g. {max(2, k - 1)}"))
    elif k >= n >= 3:
      problems.append(Problem(
          (NETWORK_KEY, "k"),
          f"{k} is not less than the {n} agents of the network",
          f"use an even number from 2 to {n - 1 - (n - 1) % 2}"))
  if "m" in wanted and m is not None and m >= n >= 2:
    problems.append(Problem(
        (NETWORK_KEY, "m"),
        f"{m} is not less than the {n} agents of the network",
        f"use a whole number from 1 to {n - 1}"))
  return problems


def network_problems(data: Mapping[str, Any]) -> list[Problem]:
  """What the block must be against the rest of the file: edges between
  agents of the network, generator parameters that fit its size, groups
  that exist, and recorded edges that the generator still gives. A value
  of the wrong type is a field error, not reported again here."""
  block = data.get(NETWORK_KEY)
  if not isinstance(block, Mapping):
    return []
  groups = block.get("groups") or []
  groups = [g for g in groups if isinstance(g, str)] if isinstance(
      groups, list) else []
  known_groups = list(dict.fromkeys(
      a.get("group") for a in _agents(data) if isinstance(a.get("group"), str)))
  problems: list[Problem] = []
  for i, gid in enumerate(groups):
    if gid not in known_groups:
      problems.append(Problem(
          (NETWORK_KEY, "groups", i),
          f"{show(gid)} is not a group of this scenario",
          f"use one of: {', '.join(known_groups)}" if known_groups else
          "remove `groups` (no agent has a group)"))
  names = members(data, [g for g in groups if g in known_groups])
  generator, edges = block.get("generator"), block.get("edges")
  if generator is None and edges is None:
    return problems + [Problem(
        (NETWORK_KEY,), "gives neither edges nor a generator",
        "add `generator: ring` (or small_world, scale_free, random), or "
        f"`edges: [[First Agent, Second Agent], ...]` ({_GUIDE})")]
  if len(names) < 2:
    return problems + [Problem(
        (NETWORK_KEY,),
        f"has {len(names)} agent(s); a network ties at least two",
        "add agents, or name more groups under `groups`")]
  if isinstance(edges, list):
    problems += _edge_problems(edges, names)
  if generator in GENERATORS:
    problems += _generator_problems(block, generator, len(names))
    if isinstance(edges, list) and not problems:
      problems += _recorded_problems(block, generator, names, edges)
  return problems


def _recorded_problems(block: Mapping[str, Any], generator: str,
                       names: list[str], edges: list) -> list[Problem]:
  """Edges given beside a generator (a run's scenario.json) are the ones
  it gives: else the graph library or the agents changed since."""
  expected = _generated(block, names)
  if expected is None:
    return []  # The parameters' own problems are reported field by field.
  if [[a.strip(), b.strip()] for a, b in edges] != expected:
    return [Problem(
        (NETWORK_KEY, "edges"),
        f"are not the {len(expected)} edges the {generator} "
        "generator gives for these agents and seed (the graph library or "
        "the agents changed since they were recorded)",
        "remove `edges` to draw them anew, or remove `generator` and keep "
        "the edges as written")]
  return []

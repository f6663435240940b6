"""Runs as Ray tasks, on a local Ray instance or a cluster (`--address`).

Each run is one task asking for the sweep's `resources` (one CPU by
default: a run mostly waits on HTTP). The embedded model is different: two
llama.cpp servers on the same cores are far slower than one
(docs/trials/runs-and-sweeps.md), so each node gets one `EmbeddedHost`
actor (no CPU of its own, pinned to the node, owned by the driver so that
it ends with the sweep), which starts the server on first use; the runs on
that node ask it for its loopback URL and pass it on in
`EndpointConfig.embedded_base_url`.

Run directories are written by the workers, so on a cluster the sweep
directory must be on a file system every node mounts at the same path;
`check_shared_directory` asks every node before anything runs.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crsec_concordia.errors import UserError, require
from crsec_concordia.models import embedded
from crsec_concordia.sweeps.runjob import Outcome, RunJob, error_line, play
from crsec_concordia.sweeps.spec import Resources

NAMESPACE = "crsec-sweep"
HOST_PREFIX = "crsec-embedded-"
_HOST_WAIT = 120.0  # Seconds a task waits for its node's host to appear.


SWEEP_FEATURE = "crsec sweep (its runs are Ray tasks)"


def _ray() -> Any:
  # Optional and heavy (the `sweep` extra): imported only when a sweep runs.
  return require("ray", "sweep", SWEEP_FEATURE)


def _node_affinity() -> Any:
  """Ray's NodeAffinitySchedulingStrategy (imported late, as `_ray`)."""
  return require("ray.util.scheduling_strategies", "sweep",
                 SWEEP_FEATURE).NodeAffinitySchedulingStrategy


def start_embedded() -> Any:
  """The embedded llama.cpp server (it has `base_url`), started."""
  return embedded.EmbeddedServer().start()


class EmbeddedHost:
  """Owns one node's embedded llama.cpp server (a Ray actor).

  `start` builds the server (tests pass a stand-in: no test starts the
  real model).
  """

  def __init__(self, start: Callable[[], Any] | None = None):
    self._start = start or start_embedded
    self._server = None
    self.starts = 0

  def base_url(self) -> str:
    # Ray runs one method at a time: the first call starts the server and
    # the others wait for it.
    if self._server is None:
      self._server = self._start()
      self.starts += 1
    return self._server.base_url

  def started(self) -> int:
    """How many servers this host started (one, or none yet)."""
    return self.starts


def _node_hosts_url(ray: Any, node: str) -> str:
  deadline = time.monotonic() + _HOST_WAIT
  while True:
    try:
      host = ray.get_actor(HOST_PREFIX + node, namespace=NAMESPACE)
      return ray.get(host.base_url.remote())
    except ValueError:  # Not created yet (a node that joined just now).
      if time.monotonic() > deadline:
        raise UserError(f"no embedded-model host on node {node[:12]} after "
                        f"{_HOST_WAIT:.0f}s; rerun the sweep") from None
      time.sleep(2.0)


def run_task(job: RunJob) -> Outcome:
  """The body of a run's Ray task."""
  ray = _ray()
  node = ray.get_runtime_context().get_node_id()
  if job.endpoint.embedded and not job.endpoint.embedded_base_url:
    try:
      url = _node_hosts_url(ray, node)
    except Exception as e:  # pylint: disable=broad-except
      return Outcome(job.id, "failed", "none", error=error_line(e),
                     error_kind=type(e).__name__, node=node)
    job = dataclasses.replace(
        job, endpoint=dataclasses.replace(job.endpoint,
                                          embedded_base_url=url))
  return play(job, node=node)


def _token_auth_if_available() -> None:
  """`ray start` (2.60) turns token authentication on and keeps the token
  in ~/.ray/auth_token, but a driver joining with ray.init(address=...)
  sends it only with RAY_AUTH_MODE=token: set it when a token is at hand
  and the person has not chosen (RAY_AUTH_MODE=disabled still wins)."""
  if "RAY_AUTH_MODE" in os.environ:
    return
  if (os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")
      or (Path.home() / ".ray" / "auth_token").is_file()):
    os.environ["RAY_AUTH_MODE"] = "token"


def _visible(path: str) -> bool:
  return Path(path).is_file()


class RayBackend:
  """Schedules jobs as Ray tasks; the cluster decides where they go."""

  def __init__(self, *, address: str | None, num_cpus: int | None,
               resources: Resources, retries: int, embedded: bool,
               verbose: bool = False,
               host_start: Callable[[], Any] | None = None):
    # Ray reports usage statistics to its makers unless told not to; a
    # sweep sends nothing anywhere but to its endpoints.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address:
      _token_auth_if_available()  # Read when ray is imported.
    ray = self.ray = _ray()
    self.resources = resources
    options: dict[str, Any] = dict(
        include_dashboard=False, log_to_driver=verbose,
        namespace=NAMESPACE, logging_level=(logging.INFO if verbose
                                            else logging.ERROR))
    if address:
      options["address"] = address
    else:
      # A new local instance ("local": never one found on this machine or
      # in RAY_ADDRESS), with a small object store (runs pass little data).
      options.update(address="local", num_cpus=num_cpus,
                     object_store_memory=100 * 2**20)
      # Ray starts its workers at nice 15, and the embedded model's host is
      # one: beside any other work on the machine its llama.cpp threads
      # (which spin-wait on each other) get a fraction of the cores
      # (docs/trials/runs-and-sweeps.md). A local instance is this
      # machine's own job; its workers run at normal priority.
      os.environ.setdefault("RAY_worker_niceness", "0")
    try:
      ray.init(**options)
    except ConnectionError as e:
      raise UserError(f"cannot join the Ray cluster at {address}: "
                      f"{error_line(e)}; check --address (ray start --head "
                      "prints it) and that this machine has the cluster's "
                      "token (~/.ray/auth_token from the head, or "
                      "RAY_AUTH_TOKEN)") from None
    task_options: dict[str, Any] = dict(
        num_cpus=resources.num_cpus, max_retries=retries,
        retry_exceptions=False)
    if resources.memory_gb:
      task_options["memory"] = int(resources.memory_gb * 2**30)
    if resources.custom:
      task_options["resources"] = dict(resources.custom)
    self._task = ray.remote(run_task).options(**task_options)
    self._hosts: dict[str, Any] = {}
    self._host_start = host_start
    self._room, self._room_at = 1, -math.inf
    self.embedded = embedded
    if embedded:
      self._start_hosts()

  # -- the embedded model -----------------------------------------------------

  def _nodes(self) -> list[dict[str, Any]]:
    return [n for n in self.ray.nodes()
            if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) > 0]

  def _start_hosts(self) -> None:
    """One host per node with CPUs, created now (they start lazily)."""
    node_affinity = _node_affinity()
    actor = self.ray.remote(num_cpus=0)(EmbeddedHost)
    for node in self._nodes():
      node_id = node["NodeID"]
      if node_id in self._hosts:
        continue
      # Ray gives a worker without CPUs OMP_NUM_THREADS=1; the server is
      # to use the whole node (llama.cpp takes its thread count itself,
      # but an OpenMP build must not be capped).
      threads = str(max(1, int(node["Resources"]["CPU"])))
      self._hosts[node_id] = actor.options(
          name=HOST_PREFIX + node_id, namespace=NAMESPACE,
          get_if_exists=True,
          runtime_env={"env_vars": {"OMP_NUM_THREADS": threads}},
          scheduling_strategy=node_affinity(
              node_id, soft=False)).remote(self._host_start)

  def hosts(self) -> dict[str, Any]:
    """The embedded-model host of each node, by node id."""
    return dict(self._hosts)

  # -- the cluster ------------------------------------------------------------

  def check_shared_directory(self, probe: Path) -> None:
    """Every node must see the sweep directory (workers write the runs)."""
    node_affinity = _node_affinity()
    check = self.ray.remote(num_cpus=0)(_visible)
    refs = {n["NodeManagerAddress"]: check.options(
        scheduling_strategy=node_affinity(
            n["NodeID"], soft=False)).remote(str(probe.resolve()))
            for n in self._nodes()}
    blind = [addr for addr, ref in refs.items() if not self.ray.get(ref)]
    if blind:
      raise UserError(f"the sweep directory {probe.parent} is not visible on "
                      f"node(s) {', '.join(blind)}: put --out on a file "
                      "system every node mounts at the same path (NFS)")

  def capacity(self) -> int:
    """Runs the cluster holds at once, looked up every 10 s (nodes come
    and go)."""
    if time.monotonic() - self._room_at < 10.0:
      return self._room
    total = self.ray.cluster_resources()
    room = int(total.get("CPU", 0) // self.resources.num_cpus)
    for name, need in self.resources.custom.items():
      room = min(room, int(total.get(name, 0) // need))
    if self.embedded:
      self._start_hosts()  # Nodes that joined since.
    self._room, self._room_at = max(1, room), time.monotonic()
    return self._room

  def submit(self, job: RunJob) -> Any:
    return self._task.remote(job)

  def wait(self, handles, timeout):
    ray = self.ray
    ready, rest = ray.wait(handles, num_returns=1, timeout=timeout)
    if ready and rest:
      more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
      ready += more
    out = []
    for ref in ready:
      try:
        out.append((ref, ray.get(ref)))
      except Exception as e:  # pylint: disable=broad-except
        # The worker died (out of memory, a lost node) after its retries.
        out.append((ref, Outcome("?", "failed", "none",
                                 error=error_line(e).replace("\n", " "),
                                 error_kind=type(e).__name__)))
    return out

  def close(self) -> None:
    self._hosts.clear()
    self.ray.shutdown()

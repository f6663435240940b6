"""`crsec sweep` on a local Ray instance against the fake OpenAI server.

The whole path, as a person runs it: the CLI in its own process (so it can
be killed like one), a local Ray instance with 2 CPUs (2 runs at once),
the real runner and CRSEC agents, and a fake endpoint over loopback that
answers every request with schema-valid JSON (tests/schema_answers.py).
A tiny two-agent café and `--steps 2` keep it to about a minute.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import types
from pathlib import Path

import pandas as pd
import pytest

from crsec_concordia.models import EndpointConfig, embedded
from crsec_concordia.scenarios import parse_scenario
from crsec_concordia.sweeps import runjob
from crsec_concordia.sweeps.ray_backend import RayBackend
from crsec_concordia.sweeps.spec import Resources
from tests import schema_answers
from tests.fake_openai import FakeOpenAI

TINY = """\
name: tiny_cafe
premise: A quiet morning at the Tiny Cafe.
setting: Tiny Cafe, a small café with a terrace
clock: {start: "09:00", end: "10:00", minutes_per_step: 10, days: 1}
conversation: {max_rounds: 1}
crsec: {initial_norm_count: 2}
agents:
  - {name: Abigail Chen, role: entrepreneur, persona: A volunteer who dislikes smoke., goal: plan a food drive}
  - {name: Carlos Gomez, role: ordinary, persona: A poet who smokes., goal: write a poem}
behaviours:
  - {id: smoking_indoors, description: smokes inside the café}
  - {id: smoking_outside, description: smokes outside}
target_norms:
  - {id: no_smoking_indoors, text: No smoking indoors., type: injunctive, complies: [smoking_outside], violates: [smoking_indoors]}
"""

SWEEP = """\
name: tiny_ablation
scenarios: [tiny.yaml]
seeds: 1-2
arms: [normative, baseline]
conditions:
  full: {{}}
  no_talk: {{crsec: {{modules: {{communication: false}}}}}}
endpoints:
  fake: {{base_url: "{url}", model: fake-model, timeout: 30}}
"""

# A second endpoint nobody listens on, used by exactly one run.
DOWN = """\
  down: {{base_url: "http://127.0.0.1:{port}/v1", model: fake-model, timeout: 5}}
exclude:
  - {{endpoint: down, condition: no_talk}}
  - {{endpoint: down, arm: normative}}
  - {{endpoint: down, seed: 2}}
"""

IDS = [f"tiny_cafe__{c}__fake__{a}__seed{s}" for c in ("full", "no_talk")
       for s in (1, 2) for a in ("normative", "baseline")]


@pytest.fixture
def fake():
  server = FakeOpenAI().start()
  # A little latency, so that a run lasts long enough to be interrupted.
  server.responder = schema_answers.responder(latency=0.15)
  try:
    yield server
  finally:
    server.stop()


def _closed_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _env(tmp_path: Path) -> dict[str, str]:
  env = {k: v for k, v in os.environ.items()
         if not k.startswith(("CRSEC_", "OPENAI_"))}
  env.update(CRSEC_CACHE_DIR=str(tmp_path / "cache"),
             RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1")
  return env


def _sweep(tmp_path: Path, out: Path, log: Path) -> subprocess.Popen:
  with open(log, "ab") as f:
    return subprocess.Popen(
        [sys.executable, "-m", "crsec_concordia.cli", "sweep",
         str(tmp_path / "sweep.yaml"), "--out", str(out), "--num-cpus", "2",
         "--steps", "2"],
        cwd=tmp_path, env=_env(tmp_path), stdout=f, stderr=subprocess.STDOUT,
        start_new_session=True)


def _statuses(out: Path) -> dict[str, str]:
  try:
    data = json.loads((out / "sweep.json").read_text())
  except (OSError, ValueError):
    return {}
  return {r["id"]: r["status"] for r in data["runs"]}


def _ours(marker: str) -> list[int]:
  """Processes of this test (Ray's workers too): they carry its cache dir."""
  pids = []
  for proc in Path("/proc").iterdir():
    if not proc.name.isdigit() or int(proc.name) == os.getpid():
      continue
    try:
      if marker.encode() in (proc / "environ").read_bytes():
        pids.append(int(proc.name))
    except OSError:
      continue
  return pids


def _kill_all(proc: subprocess.Popen, marker: str) -> None:
  """As a machine that goes down: SIGKILL to the sweep's process group and
  to Ray's workers (in groups of their own, found by their environment),
  so that the runs in flight stop mid-slot."""
  os.killpg(proc.pid, signal.SIGKILL)
  deadline = time.monotonic() + 20
  while (left := _ours(marker)) and time.monotonic() < deadline:
    for pid in left:
      try:
        os.kill(pid, signal.SIGKILL)
      except ProcessLookupError:
        pass
    time.sleep(0.2)
  proc.wait(timeout=30)


def _run_info(run_dir: Path) -> dict:
  try:
    return json.loads((run_dir / "run.json").read_text())
  except (OSError, ValueError):
    return {}


def _fingerprint(run_dir: Path) -> tuple:
  info = json.loads((run_dir / "run.json").read_text())
  return (info["started"], info["finished"],
          (run_dir / "events.jsonl").stat().st_mtime_ns)


def test_sweep_killed_restarted_with_a_failing_endpoint(fake, tmp_path):
  (tmp_path / "tiny.yaml").write_text(TINY)
  (tmp_path / "sweep.yaml").write_text(SWEEP.format(url=fake.base_url))
  out, log = tmp_path / "out", tmp_path / "sweep.log"
  marker = f"CRSEC_CACHE_DIR={tmp_path / 'cache'}"

  # 1. Start, and kill it hard once two runs are completed and one is
  # half-way (its first slot saved), or at the latest at six completed.
  proc = _sweep(tmp_path, out, log)
  deadline = time.monotonic() + 120
  midway: list[str] = []
  try:
    while time.monotonic() < deadline and proc.poll() is None:
      infos = {i: _run_info(out / "runs" / i) for i in IDS}
      completed = [i for i, r in infos.items() if r.get("status") ==
                   "completed"]
      midway = [i for i, r in infos.items() if r.get("status") == "running"
                and r.get("completed_steps") == 1]
      if len(completed) >= 6 or (len(completed) >= 2 and midway):
        break
      time.sleep(0.1)
  finally:
    finished_early = proc.poll() is not None
    _kill_all(proc, marker)
  assert not finished_early, log.read_text()[-3000:]
  statuses = _statuses(out)
  assert sorted(statuses) == sorted(IDS)  # The grid, before any run ends.
  grid = json.loads((out / "sweep.json").read_text())["runs"]
  assert {r["run_dir"] for r in grid} == {f"runs/{i}" for i in IDS}
  # Runs may have completed after the driver died: their run.json says so.
  done = [i for i in IDS
          if _run_info(out / "runs" / i).get("status") == "completed"]
  assert 2 <= len(done) < 8, statuses
  before = {i: _fingerprint(out / "runs" / i) for i in done}
  # The slot each half-way run had saved when the kill landed (it may have
  # saved one more between the poll and the kill).
  saved = {i: _run_info(out / "runs" / i).get("completed_steps")
           for i in set(midway) - set(done)}

  # 2. The same sweep plus a run on an endpoint that is down.
  (tmp_path / "sweep.yaml").write_text(
      SWEEP.format(url=fake.base_url) + DOWN.format(port=_closed_port()))
  proc = _sweep(tmp_path, out, log)
  try:
    code = proc.wait(timeout=180)
  finally:
    if proc.poll() is None:
      _kill_all(proc, marker)
  text = log.read_text()
  assert code == 1, text[-3000:]  # Some run failed, the others completed.
  assert f"({len(done)} already completed, {9 - len(done)} to run)" in text

  # No completed run was played again.
  for run_id, fingerprint in before.items():
    assert _fingerprint(out / "runs" / run_id) == fingerprint, run_id
  manifest = json.loads((out / "sweep.json").read_text())
  by_id = {r["id"]: r for r in manifest["runs"]}
  down = "tiny_cafe__full__down__baseline__seed1"
  assert sorted(by_id) == sorted(IDS + [down])
  assert by_id[down]["status"] == "failed"
  assert "cannot reach" in by_id[down]["error"]
  assert all(by_id[i]["status"] == "completed" for i in IDS), by_id
  assert all(by_id[i]["action"] == "reused" for i in done)
  # Runs in flight at the kill were resumed from their last slot, or
  # started again when they had saved none; the others ran.
  assert {by_id[i]["action"] for i in IDS if i not in done} <= {
      "resumed", "restarted", "ran"}
  for run_id in set(midway) - set(done):
    assert by_id[run_id]["action"] == "resumed", by_id[run_id]
    info = _run_info(out / "runs" / run_id)
    assert info["resumed"][0]["from_step"] == saved[run_id] >= 1
  for run_id in IDS:
    info = json.loads((out / "runs" / run_id / "run.json").read_text())
    assert info["status"] == "completed" and info["completed_steps"] == 2
  assert manifest["status"] == "partial"
  assert "sweep: 8/9 done, 1 failed, 0 running" in text
  assert "calls" in text and "tokens" in text

  # The aggregate: 2 seeds per arm in each of the two cells.
  summary = json.loads((out / "sweep_summary.json").read_text())
  cells = {(c["condition"], c["endpoint"]): c for c in summary["cells"]}
  assert set(cells) == {("full", "fake"), ("no_talk", "fake")}
  for cell in cells.values():
    assert cell["runs"] == {"normative": 2, "baseline": 2}
    assert cell["seeds"] == [1, 2]
  assert [f["id"] for f in summary["failed"]] == [down]
  table = pd.read_parquet(out / "sweep_summary.parquet")
  conflicts = table[table["metric"] == "conflicts_total"]
  assert len(conflicts) == 4 and set(conflicts["n"]) == {2}
  effects = pd.read_csv(out / "sweep_effects.csv")
  ablation = effects[(effects["comparison"] == "no_talk - full")
                     & (effects["metric"] == "conflicts_total")]
  assert set(ablation["arm"]) == {"normative", "baseline"}
  assert set(ablation["n"]) == {2}


def test_the_embedded_model_is_one_server_per_node_shared_by_its_runs(
    fake, tmp_path, monkeypatch):
  """Runs on the embedded model get the URL of their node's host, which
  starts its server once. The host's server here is a stand-in (the fake
  endpoint): no test starts llama.cpp."""
  for name, value in _env(tmp_path).items():
    monkeypatch.setenv(name, value)
  url = fake.base_url
  backend = RayBackend(
      address=None, num_cpus=2, resources=Resources(), retries=0,
      embedded=True,
      host_start=lambda: types.SimpleNamespace(base_url=url))
  try:
    scenario = parse_scenario(TINY, "tiny.yaml")
    jobs = [runjob.RunJob(id=f"b{seed}", run_dir=tmp_path / f"b{seed}",
                          scenario=scenario, arm="baseline", seed=seed,
                          steps=1, endpoint=EndpointConfig(),
                          endpoint_name="embedded") for seed in (1, 2)]
    pending = [backend.submit(job) for job in jobs]
    outcomes = []
    deadline = time.monotonic() + 120
    while pending and time.monotonic() < deadline:
      for handle, outcome in backend.wait(pending, 5):
        pending.remove(handle)
        outcomes.append(outcome)
    (host,) = backend.hosts().values()
    assert backend.ray.get(host.started.remote()) == 1
  finally:
    backend.close()
  assert all(o.status == "completed" for o in outcomes), outcomes
  for job in jobs:
    info = json.loads((job.run_dir / "run.json").read_text())
    assert info["model"]["endpoint"] == "embedded"
    assert info["model"]["sha256"] == embedded.MODEL_SHA256
  assert len(fake.chat_requests()) > 0  # The runs talked to the host's URL.

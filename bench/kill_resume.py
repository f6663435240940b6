"""Runs killed at random moments and resumed end as uninterrupted ones.

`crsec resume` promises that a run killed at any moment (power cut,
SIGKILL: nothing flushed, nothing marked) continues to the run an
uninterrupted one with the same seed would have been. This bench plays an
uninterrupted reference run, then N runs (default 20) of the same seed,
each in a subprocess killed with SIGKILL at a random moment, and resumes
each with `resume_episode`. Moments alternate between two kinds:

  call   when the endpoint receives the K-th model call of the run (K
         random over the reference's calls): mid-slot, calls in flight;
  write  at the J-th write to the run directory (J random over the
         reference's writes): inside a slot's flush, between its files,
         an append (events.jsonl, checkpoints/log.jsonl, run.log) cut
         part way through its text, down to half a line.

A run killed before its first slot was complete cannot be resumed (resume
says so); it is started again, as resume tells a person to. Each resumed
run must equal the reference in every file it holds, byte for byte, but
run.json's times and history (`differences`). The
scenario is scenarios/open_day.yaml, which has places, social ties and an
announcement. Prints `N/N identical` or what differed, and exits 1 then.

By default the model is the fake server with tests/schema_answers.py (the
same prompt gets the same answer, so no response cache is needed);
--base-url/--model use a real endpoint with the response cache, whose
replayed answers make the resumed slot repeat the killed one (its calls
then count as cached: the counters are left out of the comparison).

  .venv/bin/python bench/kill_resume.py               # 20 kills, open day
  .venv/bin/python bench/kill_resume.py --runs 3 --steps 2
  .venv/bin/python bench/kill_resume.py --moments-seed 7
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crsec_concordia import runner  # noqa: E402
from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.errors import UserError  # noqa: E402
from crsec_concordia.models import EndpointConfig  # noqa: E402
from crsec_concordia.rundir import writing as rundir  # noqa: E402
from tests import schema_answers  # noqa: E402
from tests.fake_openai import FakeOpenAI  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# Places, ties and an announcement: every file a run can write.
OPEN_DAY = ROOT / "scenarios" / "open_day.yaml"
# run.json's fields that differ between two runs of one seed: times, the
# machine and checkout, and a resumed run's history.
VOLATILE_RUN_FIELDS = ("started", "finished", "wall_seconds", "versions",
                       "commit", "commit_dirty", "version", "scenario_path",
                       "resumed")
VICTIM_TIMEOUT = 600  # Seconds; a victim never holds the bench longer.


class WriteCounter:
  """Counts the run directory's writes; kills the process at the J-th."""

  def __init__(self, kill_at: int | None = None, cut: float = 0.5):
    self.writes = 0
    self.kill_at, self.cut = kill_at, cut
    self._lock = threading.Lock()

  def _tick(self) -> bool:
    with self._lock:
      self.writes += 1
      return self.writes == self.kill_at

  def install(self) -> None:
    write_json, append = rundir.write_json, rundir.append_lines
    counter = self

    def counted_write_json(path, data):
      if counter._tick():  # pylint: disable=protected-access
        os.kill(os.getpid(), signal.SIGKILL)
      write_json(path, data)

    def counted_append(path, lines):
      lines = list(lines)
      if counter._tick():  # pylint: disable=protected-access
        text = "".join(lines)
        with open(path, "a", encoding="utf-8") as f:
          f.write(text[:int(len(text) * counter.cut)])
          f.flush()
          os.fsync(f.fileno())
        os.kill(os.getpid(), signal.SIGKILL)
      append(path, lines)

    rundir.write_json = counted_write_json
    rundir.append_lines = counted_append


def endpoint_of(base_url: str, model: str, api_key: str | None
                ) -> EndpointConfig:
  return EndpointConfig(base_url=base_url, api_key=api_key or "bench",
                        model=model, schema_mode="json_schema")


def victim(args: argparse.Namespace) -> int:
  """The subprocess: plays the run until it is killed (or ends)."""
  counter = WriteCounter(args.kill_at_write, args.cut)
  counter.install()
  runner.run_episode(
      args.scenario, arm="normative", seed=args.seed, out_dir=args.out,
      steps=args.steps, endpoint=endpoint_of(args.base_url, args.model,
                                             args.api_key),
      cache=args.cache, progress=False)
  return 0


def first_difference(a: Path, b: Path) -> str:
  """Where two events.jsonl files part: the record and its differing keys."""
  def records(d: Path) -> list[dict[str, Any]]:
    with open(d / runner.EVENTS, encoding="utf-8") as f:
      return [json.loads(line) for line in f if line.strip()]
  ra, rb = records(a), records(b)
  for n, (x, y) in enumerate(zip(ra, rb)):
    if x != y:
      who = x.get("actor") or x.get("agent") or x.get("initiator") or ""
      keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
      return (f"record {n + 1}: {x.get('kind')} of slot {x.get('step')} "
              f"{who}: {', '.join(keys)}")
  return f"{len(ra)} records against {len(rb)}"


def _without(data: Any, keys: Sequence[str]) -> Any:
  """`data` with `keys` left out of every mapping in it."""
  if isinstance(data, dict):
    return {k: _without(v, keys) for k, v in data.items() if k not in keys}
  if isinstance(data, list):
    return [_without(v, keys) for v in data]
  return data


def comparable(path: Path, name: str, counters: bool) -> Any:
  """What of a run's file must be the same in every run of its seed: all
  of it but run.json's times and history and, when `counters` is false (a
  run with the response cache, whose replayed calls count as cached), the
  call and token counters."""
  apart = () if counters else (*rundir.USAGE_FIELDS, "by_model")
  if name == runner.RUN_JSON:
    return _without(rundir.read_json(path), (*VOLATILE_RUN_FIELDS, *apart))
  if not counters and name == runner.USAGE_JSON:
    return _without(rundir.read_json(path), apart)
  if not counters and name == runner.EVENTS:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [_without(json.loads(line), apart) for line in lines
            if line.strip()]
  return path.read_bytes()


def files_of(run_dir: Path) -> set[str]:
  """Every file of a run directory, by its path in it."""
  return {p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*")
          if p.is_file()}


def differences(a: Path, b: Path, counters: bool = True) -> list[str]:
  """What differs between two run directories (empty: identical): every
  file either holds, compared as `comparable` says."""
  found = []
  for name in sorted(files_of(a) ^ files_of(b)):
    found.append(f"{name} only in {a.name if (a / name).is_file() else b.name}")
  for name in sorted(files_of(a) & files_of(b)):
    if (comparable(a / name, Path(name).name, counters)
        != comparable(b / name, Path(name).name, counters)):
      found.append(f"{name} ({first_difference(a, b)})"
                   if name == runner.EVENTS else name)
  info = rundir.read_json(b / runner.RUN_JSON)
  if info["status"] != "completed":
    found.append(f"run.json status {info['status']}")
  return found


def kill_and_resume(i: int, kind: str, moment: int, out: Path,
                    args: argparse.Namespace, upstream: "Upstream",
                    embedder) -> dict[str, Any]:
  """One victim, killed at `moment` (a call or a write), then resumed."""
  run_dir = out / f"kill_{i:02d}"
  command = [sys.executable, str(Path(__file__).resolve()), "--victim",
             "--out", str(run_dir), "--scenario", str(args.scenario),
             "--seed", str(args.seed), "--base-url", upstream.base_url,
             "--model", upstream.model, "--cut", str(random.random())]
  if args.steps:
    command += ["--steps", str(args.steps)]
  if args.api_key:
    command += ["--api-key", args.api_key]
  if args.base_url:
    command += ["--cache"]
  if kind == "write":
    command += ["--kill-at-write", str(moment)]
  child = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
  if kind == "call":
    upstream.kill_at(moment, child.pid)
  try:
    _, err = child.communicate(timeout=VICTIM_TIMEOUT)
  finally:
    upstream.kill_at(None, None)
  killed = child.returncode == -signal.SIGKILL
  if not killed:
    return {"run": i, "kind": kind, "moment": moment, "killed": False,
            "differs": [f"victim exited {child.returncode}: "
                        f"{(err or '').strip()[-300:]}"]}
  info = rundir.read_json(run_dir / runner.RUN_JSON) if (
      run_dir / runner.RUN_JSON).is_file() else {}
  at = f"{int(info.get('completed_steps') or 0)} slots done"
  endpoint = endpoint_of(upstream.base_url, upstream.model, args.api_key)
  how = "resumed"
  try:
    runner.resume_episode(run_dir, endpoint=endpoint, progress=False,
                          embedder=embedder)
  except UserError as e:
    if "already completed" in str(e):
      how = "already complete"
    else:  # Killed before its first slot was complete: start again.
      how = "run again"
      run_dir = out / f"kill_{i:02d}_again"
      runner.run_episode(args.scenario, arm="normative", seed=args.seed,
                         out_dir=run_dir, steps=args.steps,
                         endpoint=endpoint, cache=bool(args.base_url),
                         progress=False, embedder=embedder)
  return {"run": i, "kind": kind, "moment": moment, "killed": True,
          "at": at, "how": how,
          "differs": differences(args.reference, run_dir,
                                 counters=not args.base_url)}


class Upstream:
  """The model endpoint; kills the victim at its K-th chat request."""

  def __init__(self, args: argparse.Namespace):
    self.fake = None
    self.requests = 0
    self._kill: tuple[int, int] | None = None
    self._lock = threading.Lock()
    if args.base_url:
      self.base_url, self.model = args.base_url, args.model
      return  # A real endpoint: kills by call need the fake server.
    answer = schema_answers.responder()
    self.fake = FakeOpenAI().start()
    # A killed victim resets its connections: no traceback for each.
    self.fake._httpd.handle_error = lambda *a: None  # pylint: disable=protected-access
    self.base_url, self.model = self.fake.base_url, "fake-model"

    def respond(request):
      with self._lock:
        self.requests += 1
        kill = self._kill
        if kill is not None and self.requests == kill[0]:
          os.kill(kill[1], signal.SIGKILL)
      return answer(request)

    self.fake.responder = respond

  def kill_at(self, request: int | None, pid: int | None) -> None:
    """Kills `pid` when the `request`-th chat request from now arrives."""
    with self._lock:
      self._kill = (None if request is None
                    else (self.requests + request, pid))

  def stop(self) -> None:
    if self.fake is not None:
      self.fake.stop()


def main(argv: Sequence[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--runs", type=int, default=20)
  parser.add_argument("--scenario", default=str(OPEN_DAY))
  parser.add_argument("--steps", type=int, default=None)
  parser.add_argument("--seed", type=int, default=1)
  parser.add_argument("--moments-seed", type=int, default=0,
                      help="seeds the choice of kill moments")
  parser.add_argument("--base-url", default=None)
  parser.add_argument("--model", default=None)
  parser.add_argument("--api-key", default=None)
  parser.add_argument("--moments", default=None,
                      help="chosen kills instead of random ones, e.g. "
                      "write:14,call:20 (reproduces a run the bench reported)")
  parser.add_argument("--keep", default=None,
                      help="keep the run directories here (default: removed)")
  # The victim's own options.
  parser.add_argument("--victim", action="store_true", help=argparse.SUPPRESS)
  parser.add_argument("--out", help=argparse.SUPPRESS)
  parser.add_argument("--kill-at-write", type=int, help=argparse.SUPPRESS)
  parser.add_argument("--cut", type=float, default=0.5, help=argparse.SUPPRESS)
  parser.add_argument("--cache", action="store_true", help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.victim:
    return victim(args)
  if args.base_url and not args.model:
    parser.error("--base-url needs --model")
  embedder = shared_embedder()
  random.seed(args.moments_seed)
  upstream = Upstream(args)
  results = []
  try:
    with tempfile.TemporaryDirectory() as tmp:
      out = Path(args.keep or tmp)
      out.mkdir(parents=True, exist_ok=True)
      args.reference = out / "reference"
      writes = WriteCounter()
      writes.install()
      before = upstream.requests
      runner.run_episode(
          args.scenario, arm="normative", seed=args.seed,
          out_dir=args.reference, steps=args.steps,
          endpoint=endpoint_of(upstream.base_url, upstream.model,
                               args.api_key),
          cache=bool(args.base_url), progress=False, embedder=embedder)
      rundir.write_json, rundir.append_lines = _REAL_WRITES
      calls = upstream.requests - before
      print(f"reference: {calls} model calls, {writes.writes} writes to the "
            "run directory", flush=True)
      chosen = [(k, int(m)) for k, m in (
          x.split(":") for x in args.moments.split(","))] if args.moments else []
      for i in range(1, (len(chosen) or args.runs) + 1):
        kind = "write" if (i % 2 == 0 or upstream.fake is None) else "call"
        moment = random.randint(1, writes.writes if kind == "write"
                                else calls)
        if chosen:
          kind, moment = chosen[i - 1]
        r = kill_and_resume(i, kind, moment, out, args, upstream, embedder)
        results.append(r)
        state = "identical" if not r["differs"] else (
            "DIFFERS: " + ", ".join(r["differs"]))
        print(f"run {i}: killed at {kind} {moment} ({r.get('at', '-')}), "
              f"{r.get('how', 'not killed')}: {state}", flush=True)
  finally:
    upstream.stop()
  same = sum(not r["differs"] for r in results)
  print(f"{same}/{len(results)} identical")
  return 0 if same == len(results) else 1


_REAL_WRITES = (rundir.write_json, rundir.append_lines)

if __name__ == "__main__":
  sys.exit(main())

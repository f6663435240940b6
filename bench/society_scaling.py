"""How a society's slot time grows with its size: the slot engine's scaling.

Against a fake OpenAI-compatible server on loopback that answers every
request with a schema-valid JSON answer after a fixed latency, with no limit
on parallel requests, it plays 2 slots for societies of 1, 5, 10, 25 and 50
agents (personas from a template; every third agent a norm entrepreneur)
and prints for each size: wall time per slot and its ratio to 1 agent, mean
requests in flight during the act phase (from the first agent's act to the
last one's end, within the part of the slot where every agent observes and
acts; the progress line also gives it over that whole agent phase), LLM
calls per agent per slot by operation, and the framework's overhead (the
share of wall time when no model call is in flight). A run whose slots are played in parallel shows a
slot time nearly flat in the size of the society; a sequential one grows
linearly.

A slot's time is its whole cycle, as a run lives through it: playing it
(observe, act, resolve) and recording it (Concordia's checkpoint, the
records, norm snapshots and usage). The session writes a slot's files in
the background while the next slot's agents act, so the last slot's cycle
ends when its files are on disk. The fake server runs in a process of its
own, as a real endpoint does: inside the bench's process its HTTP handling
and answer generation held the GIL against the agents and counted as the
framework's overhead. Each size's progress line gives the bench process's
CPU seconds per slot (over the slot cycles): the figure to watch on a busy
machine, where wall times are noisy.

  .venv/bin/python bench/society_scaling.py            # 1, 5, 10, 25, 50
  .venv/bin/python bench/society_scaling.py --quick    # 1 and 10, < 1 min
  .venv/bin/python bench/society_scaling.py --sizes 50 # one size only
  .venv/bin/python bench/society_scaling.py --embedded # 1 and 4, real model

`--quick` exits non-zero if any agent lacks an action record (or a recorded
failure) in any slot, and ends with `slot time ratio 10/1 agents: X.XX` and
`calls per agent per slot, quiet slots: X.XX`: a 10-agent society whose
fake answers bring nothing new (no conflict, no talk, hour-long tasks)
played for 6 slots, its calls from slot 3 on (bench/quiet_society.py): what
plan-driven acting costs when nothing happens.
`--embedded` plays the same on the embedded model (slow: minutes).

`--town` plays towns of 10, 100 and 1,000 agents in places of 10
(bench/town_society.py: held norms broken in every place, a bag-of-words
embedder), each size in a process of its own, against one fake server,
and prints per size the calls and tokens per agent per simulated hour, the
mean and largest prompt tokens, the peak resident memory and what each
agent added to it, the share of wall time with a request in flight, the
most threads at once, and the places that saw conflicts, talks and new
norms; then `town cost ratio 1000/10 agents: X.XX` (calls or tokens per
agent-hour, the larger ratio), `prompt tokens ratio 1000/10 agents:
X.XX` and per size `town of N: CPU X.X ms per agent-slot, peak threads
N` (the process's CPU time over the whole run, set-up included: the
figure to compare between commits on a busy machine). `--max-in-flight N` sets the endpoint's bound (default: an
OpenAI-compatible endpoint's).

  .venv/bin/python bench/society_scaling.py --town          # a few minutes
  .venv/bin/python bench/society_scaling.py --town --sizes 10 100
  .venv/bin/python bench/society_scaling.py --town --sizes 41 1000 --keep DIR

`--keep DIR` keeps each town's run directory as DIR/town_N (else they are
removed): bench/view_page.py measures the page of `crsec view` on them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crsec_concordia import prefabs, runner  # noqa: E402
# The referee as the embedded model runs it: the costs are its own.
from crsec_concordia.calibration.run_policy import ALL_ON  # noqa: E402
from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.models import EndpointConfig, embedded  # noqa: E402
from crsec_concordia.runs import session as session_lib  # noqa: E402
from crsec_concordia.runs import slot_engine  # noqa: E402
from crsec_concordia.scenarios import Scenario  # noqa: E402
from call_timing import Calls, busy_time  # noqa: E402  (bench/, beside this file)
import quiet_society  # noqa: E402  (bench/, beside this file)
import town_society  # noqa: E402  (bench/, beside this file)
from tests import fake_openai  # noqa: E402
from tests.fake_openai import FakeOpenAI  # noqa: E402

FIRST = ("Ada", "Ben", "Cleo", "Dan", "Eva", "Finn", "Gia", "Hal", "Ines",
         "Jon")
LAST = ("Abbott", "Baker", "Cole", "Dunn", "Ellis")
SLOTS = 2


def society(size: int, slots: int = SLOTS) -> Scenario:
  """A venue of `size` agents, one habit each, no venue-specific wording,
  played for `slots` slots of 10 minutes (a day running to 11:00)."""
  habits = ("talks loudly on the phone", "leaves cups on the tables",
            "keeps to a quiet corner", "tidies up after others")
  agents = []
  for i in range(size):
    name = f"{FIRST[i % len(FIRST)]} {LAST[i // len(FIRST) % len(LAST)]}"
    if i >= len(FIRST) * len(LAST):
      name += f" {i}"
    agents.append({
        "name": name, "role": "entrepreneur" if i % 3 == 0 else "ordinary",
        "persona": f"{name} is a regular here who {habits[i % len(habits)]}.",
        "goal": "spend the morning reading and meeting people"})
  return Scenario.from_dict({
      "name": f"society_{size}",
      "premise": "A morning in a shared reading room.",
      "setting": "The Reading Room, a shared room with a small courtyard",
      "clock": {"start": "09:00", "end": "11:00", "minutes_per_step": 10,
                "days": 1},
      "max_steps": slots,
      "conversation": {"max_rounds": 1},
      # One reflection per three slots' worth of others' behaviour, as in
      # the shipped scenarios: the bench measures the engine at a fixed
      # amount of thinking per agent and hour, whatever the society's size.
      "crsec": {"initial_norm_count": 3,
                "reflect_every": max(6, 3 * (size - 1))},
      "agents": agents,
      "behaviours": [
          {"id": "loud", "description": "speaks loudly or makes noise"},
          {"id": "messy", "description": "leaves things lying around"},
          {"id": "tidy", "description": "cleans up after themselves"}],
      "target_norms": [
          {"id": "quiet", "text": "Keep your voice down.", "type": "injunctive",
           "complies": [], "violates": ["loud"]}],
  })


class SlotTimer:
  """Times each slot's cycle, its play and its agent phase (patched into
  the slot engine), with the process's CPU time over the cycles.

  A cycle runs from the start of a slot's play to the end of its step
  callback (the run directory's records, snapshots and usage; Concordia's
  checkpoint comes just before it): what a slot costs a run.
  """

  def __init__(self):
    self.slots: list[tuple[float, float]] = []
    self.plays: list[tuple[float, float]] = []
    self.agent_phases: list[tuple[float, float]] = []
    # Each slot's act phase: its agents' first act start to last act end.
    self.act_phases: list[tuple[float, float]] = []
    self.cpu: list[float] = []
    self._open: tuple[float, float] | None = None
    self._last: tuple[float, float] | None = None
    self._acts: list[tuple[float, float]] = []
    self._in_slot = threading.local()
    self._lock = threading.Lock()

  def _start_cycle(self) -> None:
    with self._lock:
      if self._open is None:
        self._open = (time.monotonic(), time.process_time())

  def _end_cycle(self) -> None:
    with self._lock:
      if self._open is not None:
        start, cpu = self._open
        self.slots.append((start, time.monotonic()))
        self.cpu.append(time.process_time() - cpu)
        self._last, self._open = self._open, None

  def _writes_done(self) -> None:
    """The run's files are on disk: after the last slot, its cycle ends."""
    with self._lock:
      if self._open is None and self._last is not None:
        start, cpu = self._last
        self.slots[-1] = (start, time.monotonic())
        self.cpu[-1] = time.process_time() - cpu

  @contextlib.contextmanager
  def installed(self):
    engine = slot_engine.SlotEngine
    play, real, loop = engine.play_slot, engine.run_agents, engine.run_loop
    live = engine._live_slot  # pylint: disable=protected-access
    agent_class = prefabs.AGENT_CLASS
    act = agent_class.act
    flush = session_lib.Session.flush
    timer = self

    def live_slot(self, *args, **kwargs):
      timer._in_slot.on = True  # pylint: disable=protected-access
      try:
        return live(self, *args, **kwargs)
      finally:
        timer._in_slot.on = False  # pylint: disable=protected-access

    def timed_act(self, *args, **kwargs):
      if not getattr(timer._in_slot, "on", False):  # pylint: disable=protected-access
        return act(self, *args, **kwargs)  # A conversation's turn.
      start = time.monotonic()
      try:
        return act(self, *args, **kwargs)
      finally:
        with timer._lock:  # pylint: disable=protected-access
          timer._acts.append((start, time.monotonic()))  # pylint: disable=protected-access

    def flushed(self):
      try:
        return flush(self)
      finally:
        timer._writes_done()  # pylint: disable=protected-access

    def play_slot(self, game_master, entities):
      timer._start_cycle()  # pylint: disable=protected-access
      start = time.monotonic()
      try:
        return play(self, game_master, entities)
      finally:
        with timer._lock:  # pylint: disable=protected-access
          timer.plays.append((start, time.monotonic()))

    def run_agents(self, tasks):
      start = time.monotonic()
      try:
        return real(self, tasks)
      finally:
        with timer._lock:  # pylint: disable=protected-access
          timer.agent_phases.append((start, time.monotonic()))
          acts, timer._acts = timer._acts, []  # pylint: disable=protected-access
          if acts:
            timer.act_phases.append((min(a for a, _ in acts),
                                     max(b for _, b in acts)))

    def run_loop(self, *args, step_callback=None, **kwargs):
      def recorded(step_data):
        try:
          if step_callback is not None:
            step_callback(step_data)
        finally:
          timer._end_cycle()  # pylint: disable=protected-access
      return loop(self, *args, step_callback=recorded, **kwargs)

    engine.play_slot, engine.run_agents = play_slot, run_agents
    engine.run_loop = run_loop
    engine._live_slot = live_slot  # pylint: disable=protected-access
    agent_class.act = timed_act
    session_lib.Session.flush = flushed
    try:
      yield self
    finally:
      engine.play_slot, engine.run_agents, engine.run_loop = play, real, loop
      engine._live_slot = live  # pylint: disable=protected-access
      agent_class.act = act
      session_lib.Session.flush = flush


def measure(size: int, endpoint: EndpointConfig, calls_of, out: Path,
            embedder) -> dict:
  """Plays SLOTS slots of a society of `size`; returns its figures."""
  scenario = society(size)
  timer = SlotTimer()
  with timer.installed():
    run_dir = runner.run_episode(
        scenario, arm="normative", seed=1, out_dir=out / f"society_{size}",
        endpoint=endpoint, cache=False, progress=False, embedder=embedder,
        referee_policy=ALL_ON)
  records = [json.loads(line) for line in
             open(run_dir / runner.EVENTS, encoding="utf-8")]
  names = set(scenario.agent_names)
  missing = []
  for step in range(1, SLOTS + 1):
    covered = {r.get("actor") for r in records
               if r["kind"] == "action" and r["step"] == step}
    covered |= {r.get("agent") for r in records
                if r["kind"] == "failure" and r["step"] == step
                and r.get("op") == "Act"}
    missing += [(step, n) for n in sorted(names - covered)]
  usage = json.loads((run_dir / runner.USAGE_JSON).read_text())["by_tag"]
  wall = sum(b - a for a, b in timer.slots)
  intervals = calls_of()
  lo, hi = timer.slots[0][0], timer.slots[-1][1]
  busy, _ = busy_time(intervals, lo, hi)
  def in_flight(phases):
    length = sum(b - a for a, b in phases)
    area = sum(busy_time(intervals, a, b)[1] for a, b in phases)
    return area / length if length else 0.0

  return {
      "agents": size, "slot_seconds": wall / SLOTS,
      "in_flight": in_flight(timer.act_phases),
      "in_flight_agent_phase": in_flight(timer.agent_phases),
      "in_flight_by_slot": [round(in_flight([p]), 1)
                            for p in timer.act_phases],
      "overhead": (wall - busy) / wall if wall else 0.0,
      "calls_per_agent_slot": {
          tag: c["calls"] / (size * SLOTS) for tag, c in usage.items()},
      "missing": missing,
      "slots": [round(b - a, 2) for a, b in timer.slots],
      "plays": [round(b - a, 2) for a, b in timer.plays],
      "agent_phases": [round(b - a, 2) for a, b in timer.agent_phases],
      "act_phases": [round(b - a, 2) for a, b in timer.act_phases],
      "cpu_per_slot": sum(timer.cpu) / SLOTS,
  }


def print_table(rows: list[dict]) -> None:
  base = rows[0]["slot_seconds"]
  print(f"{'agents':>6} {'s/slot':>7} {'ratio':>6} {'in flight':>10} "
        f"{'/agents':>8} {'overhead':>9}  calls per agent per slot")
  for r in rows:
    ops = ", ".join(f"{tag} {n:.2f}" for tag, n in
                    sorted(r["calls_per_agent_slot"].items()))
    print(f"{r['agents']:>6} {r['slot_seconds']:>7.2f} "
          f"{r['slot_seconds'] / base:>6.2f} {r['in_flight']:>10.1f} "
          f"{r['in_flight'] / r['agents']:>8.2f} {r['overhead']:>8.1%}  {ops}")


def serve(latency: float, quiet: bool = False, town: bool = False) -> int:
  """The fake server's process: prints its base URL, serves until stdin
  closes (`quiet`: answers that bring nothing new, quiet_society.py)."""
  # Unlimited parallelism: a burst of 50+ first connections must not meet
  # a full listen backlog (the kernel retries those a second later).
  fake_openai._Server.request_queue_size = 1024  # pylint: disable=protected-access
  # A fixed latency: the handler writes headers and body apart, and with
  # Nagle's algorithm the body waited for the client's delayed ACK.
  socketserver.StreamRequestHandler.disable_nagle_algorithm = True
  fake = FakeOpenAI().start()
  # Every agent begins a 10-minute task, and so acts, in every slot (the
  # load whose scaling is measured); quiet: nothing new happens.
  fake.responder = (town_society.responder(latency) if town else
                    quiet_society.responder(latency, quiet=quiet))
  if town:
    # A town's requests are not kept (tens of thousands of prompts).
    fake.requests = _Forgetful()
  print(fake.base_url, flush=True)
  try:
    sys.stdin.read()
  finally:
    fake.stop()
  return 0


class _Forgetful(list):
  """A request list that keeps nothing."""

  def append(self, item) -> None:
    del item


def start_fake_server(latency: float, quiet: bool = False, town: bool = False
                      ) -> tuple[subprocess.Popen, str]:
  """The fake server in a process of its own, and its base URL."""
  server = subprocess.Popen(
      [sys.executable, str(Path(__file__).resolve()), "--serve",
       "--latency", str(latency)] + (["--quiet"] if quiet else [])
      + (["--town"] if town else []),
      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
  assert server.stdout is not None
  base_url = server.stdout.readline().strip()
  if not base_url.startswith("http"):
    server.kill()
    raise RuntimeError("the fake server did not start")
  return server, base_url


def stop_fake_server(server: subprocess.Popen) -> None:
  assert server.stdin is not None
  server.stdin.close()
  try:
    server.wait(timeout=10)
  except subprocess.TimeoutExpired:
    server.kill()
    server.wait()


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  group = parser.add_mutually_exclusive_group()
  group.add_argument("--quick", action="store_true",
                     help="1 and 10 agents only; checks every agent acted")
  group.add_argument("--embedded", action="store_true",
                     help="1 and 4 agents on the embedded model")
  group.add_argument("--town", action="store_true",
                     help="towns of 10, 100 and 1,000 agents in places of 10")
  parser.add_argument("--max-in-flight", type=int, metavar="N",
                      help="--town: the endpoint's bound on requests at once")
  parser.add_argument("--keep", type=Path, metavar="DIR",
                      help="--town: keep each town's run directory as "
                      "DIR/town_N")
  parser.add_argument("--measure-town", type=int, help=argparse.SUPPRESS)
  parser.add_argument("--base-url", help=argparse.SUPPRESS)
  parser.add_argument("--latency", type=float, default=0.2,
                      help="the fake server's answer latency in seconds")
  parser.add_argument("--sizes", type=int, nargs="+", metavar="N",
                      help="these society sizes only (e.g. --sizes 50)")
  parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
  parser.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.serve:
    return serve(args.latency, args.quiet, args.town)
  if args.measure_town:
    return measure_town(args.measure_town, args.base_url, args.max_in_flight,
                        args.keep)
  if args.town:
    return towns(tuple(args.sizes or (10, 100, 1000)), args.latency,
                 args.max_in_flight, args.keep)
  sizes = (1, 10) if args.quick else (1, 4) if args.embedded else (
      1, 5, 10, 25, 50)
  if args.sizes:
    sizes = tuple(args.sizes)
  embedder = shared_embedder()
  embedder.encode(["warm-up"])
  rows = []
  calls = Calls()
  with tempfile.TemporaryDirectory() as tmp, calls.installed():
    server = None
    if args.embedded:
      host = embedded.shared_server(lambda m: print(f"bench: {m}"))
      endpoint = EndpointConfig(base_url=host.base_url, api_key="local",
                                model="embedded", schema_mode="json_schema")
    else:
      server, base_url = start_fake_server(args.latency)
      endpoint = EndpointConfig(base_url=base_url, api_key="bench",
                                model="fake-model", schema_mode="json_schema")
    try:
      for size in sizes:
        rows.append(measure(size, endpoint, calls, Path(tmp), embedder))
        r = rows[-1]
        print(f"bench: {size} agents: slots {r['slots']} s (playing "
              f"{r['plays']}, of which observing and acting "
              f"{r['agent_phases']}, acting {r['act_phases']}), in flight "
              f"{r['in_flight_by_slot']} acting, "
              f"{r['in_flight_agent_phase']:.1f} observing and acting, CPU "
              f"{r['cpu_per_slot']:.2f} s/slot "
              f"({r['cpu_per_slot'] / size:.3f} per agent)", flush=True)
    finally:
      if server is not None:
        stop_fake_server(server)
  print_table(rows)
  missing = [(r["agents"], m) for r in rows for m in r["missing"]]
  for size, (step, name) in missing:
    print(f"MISSING: {size} agents, slot {step}: no action record and no "
          f"recorded failure for {name}")
  if len(rows) > 1 and any(r["agents"] == 1 for r in rows):
    by_size = {r["agents"]: r["slot_seconds"] for r in rows}
    top = max(by_size)
    print(f"slot time ratio {top}/1 agents: {by_size[top] / by_size[1]:.2f}")
  if args.quick:
    quiet = measure_quiet(args.latency, embedder)
    print(f"calls per agent per slot, quiet slots: {quiet:.2f}")
  return 1 if missing else 0


def measure_quiet(latency: float, embedder, size: int = 10) -> float:
  """Calls per agent per slot from slot 3 on, in a society where nothing
  new happens (quiet_society.py)."""
  server, base_url = start_fake_server(latency, quiet=True)
  endpoint = EndpointConfig(base_url=base_url, api_key="bench",
                            model="fake-model", schema_mode="json_schema")
  try:
    with tempfile.TemporaryDirectory() as tmp:
      run_dir = runner.run_episode(
          society(size, quiet_society.QUIET_SLOTS), arm="normative", seed=1,
          out_dir=Path(tmp) / "quiet", endpoint=endpoint, cache=False,
          progress=False, embedder=embedder,
          referee_policy=ALL_ON)
      usage = json.loads((run_dir / runner.USAGE_JSON).read_text())["by_tag"]
      print("bench: quiet society, calls per agent over "
            f"{quiet_society.QUIET_SLOTS} slots: " + ", ".join(
                f"{t} {c['calls'] / size:.1f}" for t, c in sorted(usage.items())))
      return quiet_society.quiet_calls_per_agent_slot(run_dir, size)
  finally:
    stop_fake_server(server)


def measure_town(size: int, base_url: str, in_flight: int | None,
                 keep: Path | None = None) -> int:
  """One town, in this process: its figures as one JSON line (its run
  directory kept as KEEP/town_N when `keep` is given)."""
  endpoint = EndpointConfig(base_url=base_url, api_key="bench",
                            model="fake-model", schema_mode="json_schema",
                            max_in_flight=in_flight)
  with (contextlib.nullcontext(str(keep)) if keep
        else tempfile.TemporaryDirectory()) as tmp:
    row = town_society.measure(size, endpoint, Path(tmp))
  print(json.dumps(row), flush=True)
  return 0


def towns(sizes: tuple[int, ...], latency: float, in_flight: int | None,
          keep: Path | None = None) -> int:
  """Each town in a process of its own against one fake server."""
  began = time.monotonic()
  server, base_url = start_fake_server(latency, town=True)
  rows = []
  try:
    for size in sizes:
      command = [sys.executable, str(Path(__file__).resolve()),
                 "--measure-town", str(size), "--base-url", base_url]
      if in_flight:
        command += ["--max-in-flight", str(in_flight)]
      if keep:
        command += ["--keep", str(keep.resolve())]
      done = subprocess.run(command, stdout=subprocess.PIPE, text=True,
                            check=True)
      rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
      r = rows[-1]
      print(f"bench: town of {size}: {r['wall']:.1f} s ({r['cpu']:.1f} s "
            f"CPU), {r['places']} places, {r['slots']} slots, at most "
            f"{r['max_in_flight']} requests in flight, {r['failures']} "
            "failure records", flush=True)
  finally:
    stop_fake_server(server)
  town_society.print_rows(rows)
  for line in town_society.ratio_lines(rows) + town_society.cpu_lines(rows):
    print(line)
  print(f"bench: {time.monotonic() - began:.0f} s in all")
  return 0


if __name__ == "__main__":
  sys.exit(main())

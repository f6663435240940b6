"""A town for the scaling bench: places of ten agents, norms held and broken.

society_scaling.py --town plays towns of 10, 100 and 1,000 agents against
a fake endpoint; this module builds the town and the fake's answers. The
town is a Scenario built in code: N agents in N/10 places (each place its
own, seeing into none), each agent's home set, in every place an
entrepreneur and two ordinary agents who start holding a norm, an
entrepreneur whose norms CreateNorm writes, and two agents whose habit
breaks the held norm. The fake answers (schema_answers, shaped as
quiet_society.py's busy society: 10-minute tasks, so everyone acts every
slot) make the breakers' actions the deed the norm is about, keep every
action at the actor's place, and otherwise answer at random: conflicts,
talks and new norms come in every place. The sentence embedder is a bag
of words (a deed that shares the norm's words is near it), cheap and
deterministic, as the tests' are. A `population:` block in a scenario file
can build the same town once scenarios have one.
"""

from __future__ import annotations

import json
import os
import re
import resource
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from crsec_concordia import runner
# The referee as the embedded model runs it: the costs are its own.
from crsec_concordia.calibration.run_policy import ALL_ON
from crsec_concordia.models import EndpointConfig
from crsec_concordia.runs import session as session_lib
from crsec_concordia.runs import slot_engine
from crsec_concordia.scenarios import Scenario
from call_timing import Calls, busy_time  # noqa: E402  (bench/, beside this file)
import quiet_society  # noqa: E402  (bench/, beside this file)
from tests import schema_answers
from tests.fake_openai import Reply, Request

PER_PLACE = 10
SLOTS = 3
NORM = "No phone calls at the tables."
DEED = "makes phone calls at the tables"
FIRST = ("Ada", "Ben", "Cleo", "Dan", "Eva", "Finn", "Gia", "Hal", "Ines",
         "Jon")
LAST = ("Abbott", "Baker", "Cole", "Dunn", "Ellis", "Ford", "Grant", "Hale",
        "Irwin", "Joyce")
# By an agent's index within its place.
HOLDERS = (0, 1, 2)        # Start holding NORM (0 is an entrepreneur).
CREATOR = 5                # An entrepreneur whose norms CreateNorm writes.
BREAKERS = (4, 7)          # Their habit is the deed NORM is about.
HABITS = ("reads the paper", "sketches in a notebook", "plays chess",
          "writes letters")


def agent_name(i: int) -> str:
  """The i-th resident's name (the same in every town size)."""
  return (f"{FIRST[i % 10]} {LAST[i // 10 % 10]}"
          + (f" {i // 100}" if i >= 100 else ""))


def place_id(k: int) -> str:
  return f"hall_{k:03d}"


def town(size: int, slots: int = SLOTS) -> Scenario:
  """A town of `size` agents in places of PER_PLACE, played `slots` slots."""
  places = [{"id": place_id(k), "indoors": True,
             "description": f"a shared hall with tables, the number {k} one"}
            for k in range(max(1, -(-size // PER_PLACE)))]
  agents = []
  for i in range(size):
    name, j = agent_name(i), i % PER_PLACE
    habit = DEED if j in BREAKERS else HABITS[i % len(HABITS)]
    agent: dict[str, Any] = {
        "name": name,
        "role": "entrepreneur" if j in (0, CREATOR) else "ordinary",
        "persona": f"{name} is a resident who often {habit}.",
        "goal": "spend the morning with neighbours",
        "home": place_id(i // PER_PLACE)}
    if j in HOLDERS:
      agent["initial_norms"] = [{"content": NORM, "type": "injunctive",
                                 "utility": 80}]
    agents.append(agent)
  return Scenario.from_dict({
      "name": f"town_{size}",
      "premise": "A morning in a town of shared halls.",
      "setting": "A town of shared halls where residents meet",
      "places": places,
      "default_place": place_id(0),
      "clock": {"start": "09:00", "end": "11:00", "minutes_per_step": 10,
                "days": 1},
      "max_steps": slots,
      "conversation": {"max_rounds": 1},
      # A fixed amount of reflection per agent and hour, as in a place of
      # ten whatever the town's size.
      "crsec": {"initial_norm_count": 3, "reflect_every": 27},
      "agents": agents,
      "behaviours": [
          {"id": "phone", "description": "makes phone calls at the tables"},
          {"id": "messy", "description": "leaves things lying around"},
          {"id": "tidy", "description": "cleans up after themselves"}],
      "target_norms": [
          {"id": "no_phone", "text": NORM, "type": "injunctive",
           "complies": [], "violates": ["phone"]}],
  })


def word_embedder(text: str) -> np.ndarray:
  """A bag of words of three letters or more: texts that share words are
  near (deterministic, microseconds)."""
  vector = np.zeros(256, dtype=np.float32)
  for word in re.findall(r"[a-z]{3,}", text.lower()):
    vector[zlib.crc32(word.encode()) % 256] += 1.0
  return vector if vector.any() else np.ones(256, dtype=np.float32)


_ASKED = re.compile(r"What does (.+?) do next\?")
_HERE = re.compile(r" is at (hall_\d{3}) \(")
_WHO = re.compile(r"^([A-Z][a-z]+ [A-Z][a-z]+(?: \d+)?): ", re.M)


def _homes(size: int = 10_000) -> dict[str, str]:
  return {agent_name(i): place_id(i // PER_PLACE) for i in range(size)}


def _place_for(value: Any, schema: dict, text: str, home: str | None) -> Any:
  """Every `place` field of the answer set to where the agent is."""
  if schema.get("type") == "array" and isinstance(value, list):
    return [_place_for(v, schema.get("items", {}), text, home) for v in value]
  if schema.get("type") != "object" or not isinstance(value, dict):
    return value
  for key, sub in schema.get("properties", {}).items():
    if key == "place" and "enum" in sub:
      here = _HERE.search(text)
      want = here.group(1) if here else home
      value[key] = want if want in sub["enum"] else sub["enum"][0]
    elif key in value:
      value[key] = _place_for(value[key], sub, text, home)
  return value


def responder(latency: float) -> Callable[[Request], Reply]:
  """quiet_society's busy answers, with the breakers' deeds against the
  held norm and every action kept at the actor's place."""
  busy = quiet_society.responder(latency, quiet=False)
  homes = _homes()
  breakers = {agent_name(i) for i in range(10_000)
              if i % PER_PLACE in BREAKERS}

  def respond(request: Request) -> Reply:
    reply = busy(request)
    schema = schema_answers.request_schema(request.body)
    if schema is None:
      return reply
    messages = (request.body or {}).get("messages") or []
    text = "\n".join(str(m.get("content", "")) for m in messages)
    first = _WHO.search(text)
    home = homes.get(first.group(1)) if first else None
    answer = _place_for(json.loads(reply.content), schema, text, home)
    asked = _ASKED.search(text)
    props = schema.get("properties", {})
    if asked and asked.group(1) in breakers and "answer" in props:
      # The deed among words of the fake's own: two breakers of a place,
      # or one in two slots, must not write the same action (a copy, to
      # the act's check).
      words = re.findall(r"[a-z]+", str(answer["answer"]).lower()) * 3
      answer["answer"] = (f"{asked.group(1)} {' '.join(words[:3])} makes "
                          f"phone calls {' '.join(words[3:6])} at the tables, "
                          f"{' '.join(words[6:9])}.")
    return Reply(json.dumps(answer), delay=reply.delay,
                 prompt_tokens=reply.prompt_tokens,
                 completion_tokens=reply.completion_tokens)
  return respond


# -- measuring one town (in a process of its own, for its peak memory) ---------


def _rss_mb() -> float:
  """This process's resident memory now, in MB."""
  with open("/proc/self/statm", encoding="ascii") as f:
    pages = int(f.read().split()[1])
  return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _places_with(records: list[dict], scenario: Scenario) -> dict[str, int]:
  """How many places saw a conflict, a talk and a new norm (by the home of
  the agent who judged, talked or took it)."""
  home = {a.name: scenario.home_of(a.name) for a in scenario.agents}
  seen: dict[str, set[str]] = {"conflicts": set(), "talks": set(),
                               "new norms": set()}
  for r in records:
    kind = r.get("kind")
    who = r.get("agent") or r.get("initiator")
    if who not in home:
      continue
    if kind == "conflict":
      seen["conflicts"].add(home[who])
    elif kind == "conversation":
      seen["talks"].add(home[who])
    elif kind in ("created", "candidate"):
      seen["new norms"].add(home[who])
  return {k: len(v) for k, v in seen.items()}


def measure(size: int, endpoint: EndpointConfig, out: Path,
            slots: int = SLOTS) -> dict[str, Any]:
  """Plays a town of `size` for `slots` slots; its figures."""
  scenario = town(size, slots)
  calls = Calls()
  threads_seen = [threading.active_count()]
  done = threading.Event()

  def watch() -> None:
    while not done.wait(0.05):
      threads_seen.append(threading.active_count())

  watcher = threading.Thread(target=watch, daemon=True)
  watcher.start()
  before = _rss_mb()
  at_slots: list[float] = []  # Resident memory as each slot ends.
  on_step = session_lib.Session._on_step  # pylint: disable=protected-access

  def measured(self, step_data) -> None:
    on_step(self, step_data)
    at_slots.append(_rss_mb())

  first_slot: list[float] = []  # When the first slot began: set-up's end.
  play_slot = slot_engine.SlotEngine.play_slot

  def timed_slot(self, *args, **kwargs):
    if not first_slot:
      first_slot.append(time.monotonic())
    return play_slot(self, *args, **kwargs)

  start, cpu = time.monotonic(), time.process_time()
  session_lib.Session._on_step = measured  # pylint: disable=protected-access
  slot_engine.SlotEngine.play_slot = timed_slot
  try:
    with calls.installed():
      run_dir = runner.run_episode(
          scenario, arm="normative", seed=1, out_dir=out / f"town_{size}",
          endpoint=endpoint, cache=False, progress=False,
          embedder=word_embedder,
          referee_policy=ALL_ON)
  finally:
    session_lib.Session._on_step = on_step  # pylint: disable=protected-access
    slot_engine.SlotEngine.play_slot = play_slot
  wall, cpu = time.monotonic() - start, time.process_time() - cpu
  done.set()
  watcher.join()
  usage = json.loads((run_dir / "usage.json").read_text())["totals"]
  records = [json.loads(line) for line in
             open(run_dir / "events.jsonl", encoding="utf-8")]
  hours = slots * scenario.clock.minutes_per_step / 60.0
  per = size * hours
  prompts = [t for _, _, t in calls.calls]
  busy, _ = busy_time(calls(), start, start + wall)
  return {
      "agents": size, "places": len(scenario.places), "slots": slots,
      "wall": wall, "cpu": cpu,
      # Building the agents, their initial norms: until the first slot.
      "setup": (first_slot[0] - start) if first_slot else wall,
      "calls_per_agent_hour": usage["calls"] / per,
      "tokens_per_agent_hour": (usage["prompt_tokens"]
                                + usage["completion_tokens"]) / per,
      "prompt_mean": sum(prompts) / len(prompts) if prompts else 0.0,
      "prompt_max": max(prompts, default=0),
      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
      "mb_per_agent": max(0.0, _rss_mb() - before) / size,
      # What each slot after the first added, per agent.
      "kb_per_agent_slot": (max(0.0, at_slots[-1] - at_slots[0]) * 1024
                            / (size * (len(at_slots) - 1))
                            if len(at_slots) > 1 else 0.0),
      "waiting": busy / wall if wall else 0.0,
      "peak_threads": max(threads_seen),
      "max_in_flight": endpoint.in_flight,
      "failures": sum(r["kind"] == "failure" for r in records),
      **_places_with(records, scenario),
  }


def ratio_lines(rows: list[dict[str, Any]]) -> list[str]:
  """The acceptance lines: cost and prompt tokens, largest town over the
  smallest."""
  small = min(rows, key=lambda r: r["agents"])
  large = max(rows, key=lambda r: r["agents"])
  if small is large:
    return []
  cost = max(large["calls_per_agent_hour"] / small["calls_per_agent_hour"],
             large["tokens_per_agent_hour"] / small["tokens_per_agent_hour"])
  prompt = large["prompt_mean"] / small["prompt_mean"]
  pair = f"{large['agents']}/{small['agents']} agents"
  return [f"town cost ratio {pair}: {cost:.2f}",
          f"prompt tokens ratio {pair}: {prompt:.2f}"]


def cpu_ms_per_agent_slot(row: dict[str, Any]) -> float:
  """The process's CPU time over the whole run (set-up, slots, records),
  in milliseconds per agent and slot."""
  return 1000.0 * row["cpu"] / (row["agents"] * row["slots"])


def cpu_lines(rows: list[dict[str, Any]]) -> list[str]:
  """Per town: CPU milliseconds per agent-slot and the most threads alive
  at once (the figures to compare between commits)."""
  return [f"town of {r['agents']}: CPU {cpu_ms_per_agent_slot(r):.1f} ms "
          f"per agent-slot, peak threads {r['peak_threads']} (endpoint "
          f"in flight {r['max_in_flight']})" for r in rows]


def print_rows(rows: list[dict[str, Any]]) -> None:
  print(f"{'agents':>6} {'places':>6} {'wall s':>7} {'set-up':>6} "
        f"{'CPU s':>6} "
        f"{'calls/ah':>9} {'tok/ah':>8} {'prompt':>7} {'max':>6} "
        f"{'peak MB':>8} {'MB/agent':>9} {'KB/a-slot':>9} {'waiting':>8} "
        f"{'threads':>8}  "
        "places with conflicts, talks, new norms")
  for r in rows:
    print(f"{r['agents']:>6} {r['places']:>6} {r['wall']:>7.1f} "
          f"{r['setup']:>6.1f} {r['cpu']:>6.1f} "
          f"{r['calls_per_agent_hour']:>9.2f} "
          f"{r['tokens_per_agent_hour']:>8.0f} {r['prompt_mean']:>7.0f} "
          f"{r['prompt_max']:>6} {r['peak_mb']:>8.0f} "
          f"{r['mb_per_agent']:>9.3f} {r['kb_per_agent_slot']:>9.1f} "
          f"{r['waiting']:>7.0%} "
          f"{r['peak_threads']:>8}  {r['conflicts']}, {r['talks']}, "
          f"{r['new norms']} of {r['places']}")

"""Runs for the page's tests, bench and screenshots (scripted model).

`two_rooms`: the two-room club of tests/test_places_run.py (Abigail tells
Mei not to smoke, Mei goes to the games room and tells Carlos), with "No
smoking indoors." as a target norm whose alias is the wording the scripted
agents pass on: norms pass by talk, between places, and are coloured.

`Paced`: the golden mini café's replay (tests/golden_replay.py) held after
its first slot until a test lets it go on, each call a little slow, so a
page can be seen following it.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from crsec_concordia import runner
from crsec_concordia.scenarios import parse_scenario
from tests import golden_replay, test_places_run

TARGET = """target_norms:
  - {id: no_smoking_indoors, text: No smoking indoors., type: injunctive, violates: [smoking_indoors], aliases: [Smoking is not allowed inside the cafe.]}
"""


def two_rooms(out: Path, embedder) -> Path:
  """The two-room run (Mei moves) in `out`; returns the run directory."""
  return runner.run_episode(
      parse_scenario(test_places_run.ROOMS + TARGET, "rooms.yaml"),
      arm="normative", seed=1, out_dir=out,
      model=test_places_run.model(True), embedder=embedder, progress=False)


def passed_edges(run_dir: Path) -> list[tuple[str, str, str, int]]:
  """(source, receiver, talk | observation, step) of every candidate an
  agent took from another, read from events.jsonl on its own."""
  out = []
  with open(Path(run_dir) / "events.jsonl", encoding="utf-8") as f:
    for line in f:
      r = json.loads(line)
      if (r["kind"] == "candidate" and r.get("source_agent")
          and r["origin"] in ("conversation", "observation")
          and r["source_agent"] != r["agent"]):
        out.append((r["source_agent"], r["agent"],
                    "talk" if r["origin"] == "conversation" else "observation",
                    int(r["step"])))
  return sorted(out)


class Paced(golden_replay.ReplayModel):
  """The golden replay's model: once the run in `run_dir` has committed
  `hold_after` slots (its run.json says so), every call waits until
  `go_on` is set; each call takes `delay` seconds more."""

  def __init__(self, cache, run_dir: Path, hold_after: int = 1,
               delay: float = 0.05):
    super().__init__(cache, seed=golden_replay.SEED)
    self.run_dir = Path(run_dir)
    self.hold_after = hold_after
    self.delay = delay
    self.go_on = threading.Event()

  def _held(self) -> bool:
    try:
      info = json.loads((self.run_dir / "run.json").read_text("utf-8"))
    except (OSError, ValueError):
      return False
    return int(info.get("completed_steps") or 0) >= self.hold_after

  def sample_json(self, prompt, schema, **kwargs):
    while not self.go_on.is_set() and self._held():
      self.go_on.wait(0.1)
    time.sleep(self.delay)
    return super().sample_json(prompt, schema, **kwargs)

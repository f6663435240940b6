"""The page's belief and its following a run (crsec_concordia/view/belief.py,
live.py), on the golden mini café: the view reads belief itself, a slot
once, and marks norms rejected at creation or on evaluation.

`growing` writes the golden run as it stood after slot k (its records,
snapshots and run.json up to k, status "running"), as the run's writer
leaves it between two slots. (The page in a browser following a real run:
tests/test_view_browser.py.)
"""

from __future__ import annotations

import csv
import json
import shutil
import threading
from pathlib import Path

import pytest

from crsec_concordia.rundir import reading
from crsec_concordia.view import belief, extract, live, load, norms, slots
from tests.test_view import GOLDEN, matched

ABIGAIL = "Abigail Chen"
SMOKING = "no_smoking_indoors"


def growing(run_dir: Path, k: int, snapshot: bool = True) -> Path:
  """The golden run after slot k (without slot k's snapshot: `snapshot`
  false, as between its records and its snapshot landing)."""
  run_dir.mkdir(exist_ok=True)
  for f in ("scenario.json", "config.json", "usage.json"):
    shutil.copyfile(GOLDEN / f, run_dir / f)
  info = json.loads((GOLDEN / "run.json").read_text("utf-8"))
  info.update(status="running" if k < 5 else "completed",
              completed_steps=k)
  (run_dir / "run.json").write_text(json.dumps(info), "utf-8")
  lines = [line for line in (GOLDEN / "events.jsonl").read_text(
      "utf-8").splitlines() if int(json.loads(line)["step"] or 1) <= k]
  (run_dir / "events.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
  (run_dir / "norms").mkdir(exist_ok=True)
  for step in range(1, k + (1 if snapshot else 0)):
    name = f"step_{step:04d}.json"
    shutil.copyfile(GOLDEN / "norms" / name, run_dir / "norms" / name)
  return run_dir


class Counting:
  """A matcher that counts the wordings it is asked to read."""

  def __init__(self, matcher):
    self.inner = matcher
    self.targets = matcher.targets
    self.asked: list[str] = []

  def means_many(self, texts):
    self.asked.extend(texts)
    return self.inner.means_many(texts)


@pytest.fixture(scope="module")
def matcher(embedder):
  run = reading.read_run(GOLDEN)
  return belief.Beliefs(embedder).for_run(run).reader.matcher


def report_belief() -> dict[str, list[float]]:
  """The golden report's belief per target per slot (metrics/per_step.csv)."""
  with open(GOLDEN / "metrics" / "per_step.csv", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
  return {t: [float(r[f"belief.{t}"]) for r in rows]
          for t in (SMOKING, "quiet_in_public", "tip_after_meals")}


def test_a_run_never_reported_shows_the_matchers_belief(tmp_path, embedder):
  """Before `crsec report`, the entrepreneur holds "People should not
  smoke indoors." from slot 1 and the belief curves are the report's."""
  run_dir = growing(tmp_path / "run", 5)
  loaded = load.loaded_run(run_dir)
  data = extract.run_data(loaded, belief.Beliefs(embedder))
  assert not data["meta"]["reported"] and data["meta"]["matcher"]
  names = [a["n"] for a in data["agents"]]
  smoking = 1 << [t["id"] for t in data["targets"]].index(SMOKING)
  assert all(row[names.index(ABIGAIL)] & smoking for row in data["hold"])
  shown = {t: c["belief"] for t, c in data["curves"].items()}
  assert shown == report_belief()  # Shares of four agents: exact.
  # Its norm is coloured as the target in its panel too.
  [held] = [n for n in data["norms"][names.index(ABIGAIL)]
            if n["id"] == "abigail-2"]
  assert held["t"] == [[t["id"] for t in data["targets"]].index(SMOKING)]


def test_a_slot_is_read_once(tmp_path, matcher):
  reader = belief.RunBelief(Counting(matcher), "all-MiniLM-L6-v2")
  run_dir = tmp_path / "run"
  run = reading.read_run(growing(run_dir, 2))
  names = run.agents
  first = reader.slots(run, [1, 2], names, {})
  asked = len(reader.matcher.asked)
  assert asked > 0
  # The same slots again, from the files read anew: nothing is read.
  again = reader.slots(reading.read_run(run_dir), [1, 2], names, {})
  assert len(reader.matcher.asked) == asked
  assert [s.masks for s in again] == [s.masks for s in first]
  # Slot 3's records landed, its snapshot not yet: it reads slot 2's.
  run = reading.read_run(growing(run_dir, 3, snapshot=False))
  third = reader.slots(run, [1, 2, 3], names, {})
  assert third[2].snapshot == 2 and third[0] is first[0]
  # Its snapshot lands: slot 3 alone is read again.
  run = reading.read_run(growing(run_dir, 3))
  kept = reader.slots(run, [1, 2, 3], names, {})
  assert kept[2].snapshot == 3
  assert kept[0] is first[0] and kept[1] is first[1]
  # A run cut back (a resume) forgets the slots it lost, and a resume
  # (run.json's `resumed`) what it read of the slots it replays.
  run = reading.read_run(growing(run_dir, 2))
  assert len(reader.slots(run, [1, 2], names, {})) == 2
  run.run["resumed"] = [{"from_step": 1}]
  assert reader.slots(run, [1, 2], names, {})[0] is not first[0]


def test_belief_slots_match_a_full_reading(tmp_path, matcher):
  """Slot by slot as a run grows gives what one reading of the whole gives."""
  run_dir = tmp_path / "run"
  grown = belief.RunBelief(matcher, "all-MiniLM-L6-v2")
  for k in range(1, 6):
    run = reading.read_run(growing(run_dir, k))
    last = grown.slots(run, list(range(1, k + 1)), run.agents, {})
  whole = belief.RunBelief(matcher, "all-MiniLM-L6-v2").slots(
      reading.read_run(GOLDEN), list(range(1, 6)), run.agents, {})
  assert [(s.masks, s.shares) for s in last] == [
      (s.masks, s.shares) for s in whole]


def test_norms_rejected_at_creation_or_on_evaluation_are_marked():
  run = reading.read_run(GOLDEN)
  names = run.agents
  index = {n: i for i, n in enumerate(names)}
  created = [slots.compact(r, index, {}) for r in run.of_kind("created")]
  duplicate = [c for c in created if c["id"] == "abigail-5"]
  assert duplicate == [{"k": "created", "a": 0, "id": "abigail-5",
                        "n": "People should not smoke indoors.", "ok": False,
                        "why": "duplicate"}]
  assert all("ok" not in c for c in created if c["id"] != "abigail-5")
  # Without snapshots (a baseline's page, or a slot whose snapshot has not
  # landed) the records alone say rejected.
  run.snapshots = {}
  lines = norms.timelines(run, names, {}, [])[0]
  status = {n["id"]: (n["status"], n.get("why")) for n in lines}
  assert status["abigail-5"] == ([[1, "rejected"]], "duplicate")
  assert status["abigail-6"] == ([[4, "rejected"]], "duplicate")
  assert status["abigail-2"] == ([], None)


def test_the_watch_follows_a_growing_run(tmp_path):
  run_dir = growing(tmp_path / "run", 1)
  watch = live.Watch(run_dir)
  version, data = matched(watch)
  [run] = data["runs"]
  assert [s["s"] for s in run["steps"]] == [1]
  assert run["progress"]["status"] == "running"
  assert run["progress"]["completed"] == 1
  assert json.loads(watch.answer(str(version))) == {"v": version}
  names = [a["n"] for a in run["agents"]]
  assert run["hold"][0][names.index(ABIGAIL)] & 1  # From slot 1.
  growing(run_dir, 3)
  fresh = json.loads(watch.answer(str(version)))
  assert fresh["v"] > version
  [run] = fresh["page"]["runs"]
  assert [s["s"] for s in run["steps"]] == [1, 2, 3]
  assert run["progress"]["completed"] == 3
  assert all(row[names.index(ABIGAIL)] & 1 for row in run["hold"])


def test_a_served_page_shows_the_run_while_its_embedder_loads(embedder):
  """The embedder loads on a thread of its own: meanwhile the page says
  belief is not read yet (not that nobody holds a target), then reads it
  and says the data changed."""
  let_go = threading.Event()

  def slow(text):
    let_go.wait(60)
    return embedder(text)

  changed = threading.Event()
  beliefs = belief.Beliefs(slow, wait=False, changed=changed.set)
  run = reading.read_run(GOLDEN)
  found = beliefs.for_run(run)
  assert found.reader is None and found.loading
  assert found.note.startswith("Loading the run's sentence embedder")
  let_go.set()
  assert changed.wait(120)
  found = beliefs.for_run(run)
  assert found.reader is not None and not found.loading

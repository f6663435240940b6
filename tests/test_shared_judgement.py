"""The same DetectConflict question asked once, whoever holds the norm.

Real CRSEC agents (the prefabs) answering from the scripted café
(tests/crsec_script.py) with the real sentence embedder: three norm
entrepreneurs who hold the same norms (the scripted CreateNorm gives each
the same five), a smoker and a quiet one, in one room. Each slot every
holder sees the smoker's deed and judges it against "No smoking
indoors.": one question, asked once, its answer given to all three, each
of whom records its own conflict and asks for its own talk. A run whose
model calls are delayed at random (seeded) in their threads gives the
same records byte for byte; a failed shared call is recorded once and
every holder carries on without the judgement.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from pathlib import Path

import pytest

from crsec_concordia import runner
from crsec_concordia.operations.detect_conflict_sharing import SharedJudgements
from crsec_concordia.models.base import StructuredOutputError
from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations.detect_conflict import OP, Observed, prompt
from crsec_concordia.runs import session as session_lib
from crsec_concordia.scenarios import parse_scenario
from tests import crsec_script as cs
from tests.machine_down import down_in_slot

ROOM = """
name: one_room_holders
premise: A morning at the Linden Rooms, a quiet club room.
setting: Linden Rooms, a small club
default_place: indoors
clock: {start: "09:00", end: "10:00", minutes_per_step: 10, days: 1}
max_steps: 3
conversation: {max_rounds: 1}
crsec: {reflect_every: 100}
agents:
  - {name: Abigail Chen, role: entrepreneur, persona: A volunteer who dislikes smoke.}
  - {name: Ben Baker, role: entrepreneur, persona: A librarian who dislikes smoke.}
  - {name: Cleo Cole, role: entrepreneur, persona: A nurse who dislikes smoke.}
  - {name: Carlos Gomez, role: ordinary, persona: A poet who smokes.}
  - {name: Tom Gomez, role: ordinary, persona: A quiet student.}
behaviours:
  - {id: smoking_indoors, description: smokes a cigarette indoors}
target_norms:
  - {id: no_smoking_indoors, text: No smoking indoors., type: injunctive, complies: [], violates: [smoking_indoors]}
"""
HOLDERS = ("Abigail Chen", "Ben Baker", "Cleo Cole")
_ASKED = re.compile(r"What does (.+?) do next\?")
DEEDS = {"Abigail Chen": "Abigail reads by the window.",
         "Ben Baker": "Ben sorts a pile of books.",
         "Cleo Cole": "Cleo drinks a cup of tea.",
         "Carlos Gomez": "Carlos lights a cigarette at his table.",
         "Tom Gomez": "Tom writes in his notebook."}


def _referee(prompt: str, schema: dict) -> dict[str, str]:
  action = re.search(r'^[^:\n]+: "(?P<a>.*)"$', prompt, re.M)
  text = action["a"] if action else "something"
  smoking = "cigarette" in text
  places = schema["properties"].get("place", {}).get("enum", ["indoors"])
  answer = {"narration": text, "evidence": text if smoking else "none",
            "place": "indoors" if "indoors" in places else places[0],
            "also": "none",
            "behaviour": "smoking_indoors" if smoking else "none"}
  return {k: v for k, v in answer.items() if k in schema["properties"]}


def judge(prompt_text: str, schema: dict) -> dict:
  """DetectConflict as a good judge: a lit cigarette breaks a rule about
  smoking; anything else is about none of the rules."""
  answer = {}
  for key in schema["properties"]:
    line = re.search(rf'^{re.escape(key)} \(.*?\): "(.*)"$', prompt_text,
                     re.M)
    rule = prompt_text[line.end():].split("Rule: ", 1)[1].split("\n", 1)[0]
    smoking = "cigarette" in line.group(1) and "smok" in rule.lower()
    answer[key] = ({"evidence": "lights a cigarette", "verdict": "breaks"}
                   if smoking else {"evidence": "none",
                                    "verdict": "unrelated"})
  return answer


def model(delays: random.Random | None = None, detect=judge):
  """The scripted room; with `delays`, every call sleeps a seeded random
  while (drawn under a lock, so the draws, not their order, are seeded)."""
  def act(prompt: str) -> dict[str, str]:
    asked = _ASKED.search(prompt)
    if asked is None:  # A conversation turn.
      return {"answer": "Please do not smoke in here, it bothers people."}
    return {"answer": DEEDS[asked.group(1)]}

  scripted = cs.cafe_model()
  scripted.add_rule(cs.ACT, act, first=True)
  scripted.add_rule(r"You are the referee", _referee, first=True)
  scripted.add_rule(cs.LOOK, cs.look_none, first=True)
  scripted.add_rule(cs.DETECT, detect, first=True)
  if delays is not None:
    lock, sample = threading.Lock(), scripted.sample_json

    def slow(*args, **kwargs):
      with lock:
        pause = delays.random() * 0.05
      time.sleep(pause)
      return sample(*args, **kwargs)
    scripted.sample_json = slow
  return scripted


def play(tmp_path: Path, embedder, name: str, scripted, **run) -> Path:
  """The room played into tmp_path/name (`run`: more of run_episode's
  arguments)."""
  return runner.run_episode(
      parse_scenario(ROOM, "room.yaml"), arm="normative", seed=1,
      out_dir=tmp_path / name, model=scripted, embedder=embedder,
      progress=False, **run)


def detect_prompts(scripted) -> list[str]:
  return [c.prompt for c in scripted.calls if c.tag == OP]


def records(run_dir: Path, kind: str) -> list[dict]:
  with open(run_dir / "events.jsonl", encoding="utf-8") as f:
    return [r for r in map(json.loads, f) if r["kind"] == kind]


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory, embedder):
  scripted = model()
  run_dir = play(tmp_path_factory.mktemp("shared"), embedder, "shared",
                 scripted)
  return run_dir, scripted


def test_one_call_per_question_reaches_every_holder(shared_run):
  run_dir, scripted = shared_run
  prompts = detect_prompts(scripted)
  conflicts = records(run_dir, "conflict")
  # Each slot, the three holders' one question about the smoker.
  judged = [p for p in prompts if "Carlos Gomez" in p]
  assert judged and len(judged) == len(set(judged))
  steps = sorted({int(c["step"]) for c in conflicts})
  assert steps and len(judged) == len(steps)
  for step in steps:
    assert sorted(c["agent"] for c in conflicts
                  if int(c["step"]) == step) == list(HOLDERS)
  assert all(c["actor"] == "Carlos Gomez" and
             c["norm"] == "No smoking indoors." for c in conflicts)
  # Asked of no one in particular: no observer in a shared prompt.
  for prompt in judged:
    assert prompt.startswith("Some people hold rules")
    assert "holds some rules" not in prompt
  # Every holder asks for its own talk; the records stay its own.
  assert {r["initiator"] for r in records(run_dir, "conversation")} <= set(
      HOLDERS)


def test_sharing_saves_calls_and_changes_no_record(shared_run, tmp_path,
                                                   embedder, monkeypatch):
  run_dir, scripted = shared_run
  monkeypatch.setattr(session_lib.Session, "share_judgements", False)
  alone = model()
  alone_dir = play(tmp_path, embedder, "alone", alone)
  shared_calls, alone_calls = (len(detect_prompts(m))
                               for m in (scripted, alone))
  assert shared_calls < alone_calls
  # Asked alone, each prompt names its observer, as before sharing.
  assert all(p.split(" holds some rules")[0] in HOLDERS
             for p in detect_prompts(alone))
  # The scripted judge answers alike either way: the same run.
  for kind in ("conflict", "talk_decision", "conversation", "action"):
    assert records(run_dir, kind) == records(alone_dir, kind), kind
  assert [json.loads((d / "run.json").read_text(encoding="utf-8"))[
      "judgements"] for d in (run_dir, alone_dir)] == ["shared", "alone"]


def test_a_thread_delayed_run_is_the_same_byte_for_byte(shared_run, tmp_path,
                                                        embedder):
  run_dir, _ = shared_run
  for seed in (3, 4):
    delayed = play(tmp_path, embedder, f"delayed{seed}",
                   model(delays=random.Random(seed)))
    for name in ("events.jsonl", "usage.json"):
      assert ((delayed / name).read_text(encoding="utf-8")
              == (run_dir / name).read_text(encoding="utf-8")), name


@pytest.mark.parametrize("error", [
    StructuredOutputError("no valid answer", raw="{", attempts=2),
    RuntimeError("the endpoint went away")])
def test_a_failed_shared_call_is_recorded_once_and_reaches_every_holder(
    tmp_path, embedder, error):
  def refuse(prompt, schema):
    if prompt.startswith("Some people hold rules"):
      raise error
    return judge(prompt, schema)
  run_dir = play(tmp_path, embedder, "failing", model(detect=refuse))
  failures = [f for f in records(run_dir, "failure") if f["op"] == OP]
  steps = sorted({int(f["step"]) for f in failures})
  assert steps
  for step in steps:
    once = [f for f in failures if int(f["step"]) == step]
    assert len(once) == 1
    assert once[0]["agent"] == HOLDERS[0]
    assert once[0]["holders"] == list(HOLDERS)
    assert str(error) in once[0]["error"]
  # No holder took a default answer: no conflict where the call failed.
  assert not [c for c in records(run_dir, "conflict")
              if int(c["step"]) in steps]


def _item(actor: str, norm: str, holder: str) -> Observed:
  return Observed(actor, f"{actor} lights a cigarette.", "indoors",
                     PersonalNorm(id=f"{holder}-1", content=norm,
                                  utility=90, type="injunctive"))


def test_single_flight_whoever_asks_first():
  """Holders asking at once in threads: one call per question; a holder
  who shares no question asks as it would alone."""
  scripted = cs.cafe_model()
  names = ["Ann", "Bob", "Cy", "Dee"]
  shared = SharedJudgements(names)
  shared.open_slot(names + ["Eve"])  # Eve holds no detector.
  asked = {n: [_item("Carlos", "No smoking indoors.", n)] for n in names[:3]}
  asked["Cy"].append(_item("Tom", "Tip after meals.", "Cy"))
  asked["Dee"] = [_item("Tom", "Wait your turn in line.", "Dee")]
  tickets = {n: shared.enter(n) for n in names}
  answers: dict[str, list] = {}

  def holder(name: str) -> None:
    answers[name] = shared.judge(tickets[name], asked[name],
                                 scripted.tagged(OP), lambda f: None)
  workers = [threading.Thread(target=holder, args=(n,))
             for n in reversed(names)]
  for w in workers:
    w.start()
  for n in names:
    shared.observed(n)
  for w in workers:
    w.join()
  prompts = detect_prompts(scripted)
  assert sorted(prompts) == sorted([
      prompt("Dee", asked["Dee"]),
      # A rule's questions together (by its words), each asked once.
      prompt(None, [asked["Ann"][0], asked["Cy"][1]])])
  assert all(a[0] == (True, "lights a cigarette") for a in answers.values())
  assert answers["Cy"][1] == (True, "lights a cigarette")


def test_a_detector_outside_a_slot_asks_alone():
  shared = SharedJudgements(["Ann", "Bob"])
  assert shared.enter("Ann") is None  # No slot open.
  shared.open_slot(["Ann", "Zed"])
  assert shared.enter("Zed") is None  # Not a holder the service shares for.
  assert shared.enter("Bob") is None  # Not an observer of the slot.
  shared.observed("Ann")
  assert shared.enter("Ann") is None  # Already observed.


def crash_in_slot_2(tmp_path: Path, embedder, monkeypatch, *,
                    alone: bool = False, **run) -> Path:
  """Plays the room until the machine goes down in slot 2 (the shared
  judgement's); returns the interrupted run's directory."""
  with down_in_slot(monkeypatch, 2) as patch:
    if alone:
      patch.setattr(session_lib.Session, "share_judgements", False)
    play(tmp_path, embedder, "crashed", model(), **run)
  return tmp_path / "crashed"


def test_a_resumed_run_gives_the_same_answers(shared_run, tmp_path, embedder,
                                              monkeypatch):
  """The machine goes down in the slot of the shared judgement: the resumed
  run asks it again and ends as the uninterrupted one."""
  run_dir, _ = shared_run
  crashed = crash_in_slot_2(tmp_path, embedder, monkeypatch)
  runner.resume_episode(crashed, model=model(), embedder=embedder,
                        progress=False)
  assert records(crashed, "conflict") == records(run_dir, "conflict")
  assert ((crashed / "events.jsonl").read_text(encoding="utf-8")
          == (run_dir / "events.jsonl").read_text(encoding="utf-8"))


def test_a_run_started_alone_is_resumed_alone(tmp_path, embedder,
                                              monkeypatch):
  """The way questions are asked is the run's, not the resuming code's."""
  crashed = crash_in_slot_2(tmp_path, embedder, monkeypatch, alone=True)
  resumed = model()
  runner.resume_episode(crashed, model=resumed, embedder=embedder,
                        progress=False)
  info = json.loads((crashed / "run.json").read_text(encoding="utf-8"))
  assert info["judgements"] == "alone"
  assert detect_prompts(resumed)
  assert all(p.split(" holds some rules")[0] in HOLDERS
             for p in detect_prompts(resumed))

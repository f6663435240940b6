"""What asking each DetectConflict question once saves, on a scripted café.

A one-room café of N agents (every third a norm entrepreneur; the others
each with one habit: smoking, talking loudly, leaving without a tip, or
none), played for 12 slots of 15 minutes with the scripted model
(tests/crsec_script.py: every entrepreneur's CreateNorm gives the same five
norms, every IdentifyNorm the same rule, so the norms that spread have the
same words, as when a scenario gives a group its norms) and the real
sentence embedder, twice: each agent asking its DetectConflict questions
alone, as before operations/detect_conflict_sharing.py, and with the questions
of a slot shared. Each agent's deed changes from slot to slot (drawn from
its habit's deeds by a hash of its name and the time), so every slot
brings new deeds to judge. For each size it prints DetectConflict calls
per agent-hour alone and shared, the deeds judged per agent-hour (items in
the calls' schemas), the largest call's items and prompt characters, and
whether the two runs' conflict records are the same (the scripted judge
answers each question alike, whoever asks).

  .venv/bin/python bench/shared_judgement.py               # 10 and 100
  .venv/bin/python bench/shared_judgement.py --sizes 10    # < 1 min
  .venv/bin/python bench/shared_judgement.py --run-dir RUN_DIR...
  .venv/bin/python bench/shared_judgement.py --alone run hobbs_cafe ...

No language model runs here. `--run-dir` reads finished runs instead (a
real model's, such as the 12-slot café, `crsec run
scenarios/hobbs_cafe.yaml --seed 1 --steps 12 --no-cache`, played before
and after): DetectConflict calls and tokens per agent-hour from its usage,
and, from its norm snapshots, how many agents held a norm whose very words
another agent held too, slot by slot: what the sharing can save there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crsec_concordia import runner  # noqa: E402
from crsec_concordia.operations import detect_conflict_sharing as shared_lib  # noqa: E402
from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.operations.detect_conflict import OP  # noqa: E402
from crsec_concordia.runs import session as session_lib  # noqa: E402
from crsec_concordia.scenarios import Scenario  # noqa: E402
from tests import crsec_script as cs  # noqa: E402

SLOTS, MINUTES = 12, 15
HABITS = {
    "smokes": ["lights a cigarette at the table.",
               "smokes a cigarette by the window.",
               "lights another cigarette over a coffee."],
    "loud": ["talks loudly on the phone.", "laughs out loud at a video.",
             "shouts across the room to a friend."],
    "no tip": ["pays the bill and leaves no tip.",
               "pockets the change instead of tipping.",
               "walks past the tip jar after paying."],
    "": ["reads a newspaper.", "drinks a coffee.", "writes in a notebook.",
         "looks out of the window.", "orders a croissant."],
}
_ASKED = re.compile(r"It is Day 1 (\d\d:\d\d) .*What does (.+?) do next\?",
                    re.S)
_ACTION = re.compile(r'^(?P<actor>[^:\n]+): "(?P<action>.*)"$', re.M)
_HERE = re.compile(r"^.+ is at (?P<place>[a-z_0-9]+) now\.$", re.M)


def name_of(i: int) -> str:
  return f"Guest {i + 1:03d}"


def habit_of(i: int) -> str:
  return "" if i % 3 == 0 else list(HABITS)[(i // 3) % 4]


def scenario(size: int, places: int = 1) -> Scenario:
  """The café; with `places` over 1, that many rooms, none seeing into
  another, the agents' homes dealt round them (local perception)."""
  agents = [{
      "name": name_of(i),
      "role": "entrepreneur" if i % 3 == 0 else "ordinary",
      "persona": f"{name_of(i)} is a regular at the café"
                 + (f" who {HABITS[habit_of(i)][0]}" if habit_of(i) else "."),
      "goal": "spend the morning at the café",
      **({"home": f"room_{i // 3 % places + 1}"} if places > 1 else {})}
      for i in range(size)]
  end = 9 * 60 + SLOTS * MINUTES
  rooms = ({"places": [{"id": f"room_{k + 1}", "indoors": True,
                        "description": f"the café's room number {k + 1}"}
                       for k in range(places)],
            "default_place": "room_1"} if places > 1
           else {"default_place": "indoors"})
  return Scenario.from_dict({
      "name": f"shared_judgement_{size}",
      "premise": "A morning at a café.",
      "setting": "a café",
      **rooms,
      "clock": {"start": "09:00", "end": f"{end // 60:02d}:{end % 60:02d}",
                "minutes_per_step": MINUTES, "days": 1},
      "max_steps": SLOTS,
      "conversation": {"max_rounds": 1},
      "crsec": {"reflect_every": 100},
      "agents": agents,
      "behaviours": [
          {"id": "smoking_indoors", "description": "smokes indoors"},
          {"id": "loud", "description": "speaks loudly or shouts"},
          {"id": "no_tip", "description": "leaves without tipping"}],
  })


def deed(name: str, clock: str, habits: dict[str, str]) -> str:
  """The agent's deed at `clock`: one of its habit's (or the plain ones)."""
  roll = int(hashlib.sha256(f"{name} {clock}".encode()).hexdigest(), 16)
  choices = HABITS[habits[name]] if roll % 3 else HABITS[""]
  return f"{name} {choices[roll // 3 % len(choices)]}"


def referee(prompt: str, schema: dict) -> dict:
  """Narrates the action as written, where its actor is."""
  action = _ACTION.search(prompt)
  text = action["action"] if action else "does something."
  places = schema["properties"].get("place", {}).get("enum", ["indoors"])
  here = _HERE.search(prompt)
  answer = {"narration": text, "evidence": "none", "behaviour": "none",
            "also": "none",
            "place": here["place"] if here and here["place"] in places
                     else places[0]}
  return {k: v for k, v in answer.items() if k in schema["properties"]}


def judge(prompt: str, schema: dict) -> dict:
  """A judge that finds a breach where a deed's habit meets its rule."""
  answer = {}
  for key in schema["properties"]:
    line = re.search(rf'^{re.escape(key)} \(.*?\): "(.*)"$', prompt, re.M)
    rule = prompt[line.end():].split("Rule: ", 1)[1].split("\n", 1)[0]
    did, rule = line.group(1).lower(), rule.lower()
    breaks = (("cigarette" in did and "smok" in rule)
              or (("loud" in did or "shout" in did) and "quiet" in rule)
              or (("tip" in did) and "tip" in rule))
    answer[key] = ({"evidence": line.group(1)[:150], "verdict": "breaks"}
                   if breaks else {"evidence": "none",
                                   "verdict": "unrelated"})
  return answer


def placed(answer, size: int, places: int):
  """A plan or task answer with each entry at the agent's home (the first
  guest its prompt names: its own persona comes first)."""
  def respond(prompt: str, schema: dict) -> dict:
    out = answer(prompt, schema)
    if places > 1:
      guest = int(re.search(r"Guest (\d{3})", prompt).group(1)) - 1
      for key in ("hours", "tasks"):
        for entry in out.get(key, ()):
          entry["place"] = f"room_{guest // 3 % places + 1}"
    return out
  return respond


def model(size: int, places: int = 1):
  habits = {name_of(i): habit_of(i) for i in range(size)}

  def act(prompt: str) -> dict:
    asked = _ASKED.search(prompt)
    if asked is None:  # A conversation turn.
      return {"answer": "Please think of the others in the room."}
    clock, name = asked.groups()
    return {"answer": deed(name, clock, habits)}

  scripted = cs.cafe_model()
  scripted.add_rule(cs.ACT, act, first=True)
  scripted.add_rule(r"You are the referee", referee, first=True)
  scripted.add_rule(cs.LOOK, cs.look_none, first=True)
  scripted.add_rule(cs.DETECT, judge, first=True)
  scripted.add_rule(cs.PLAN, placed(cs.plan_answer(cs.halves(
      "write poems", "lunch and reading")), size, places), first=True)
  scripted.add_rule(cs.DECOMPOSE, placed(cs.tasks_of(60), size, places),
                    first=True)
  return scripted


def conflicts(run_dir: Path) -> list[dict]:
  with open(run_dir / "events.jsonl", encoding="utf-8") as f:
    return [r for r in map(json.loads, f) if r["kind"] == "conflict"]


def keyings(asked: dict[str, list]) -> dict[str, int]:
  """One slot's calls under each way of keying the questions it holds."""
  per_norm: dict[str, list[tuple[str, frozenset]]] = {}
  holder_sets: dict[tuple, set] = {}
  for name, items in asked.items():
    by_norm: dict[str, set] = {}
    for item in items:
      by_norm.setdefault(item.norm.content, set()).add(
          shared_lib.question_of(item))
      holder_sets.setdefault(shared_lib.question_of(item), set()).add(name)
    for norm, deeds in by_norm.items():
      per_norm.setdefault(norm, []).append(frozenset(deeds))
  questions = {q for items in asked.values() for q in map(
      shared_lib.question_of, items)}
  return {
      "alone": sum(1 for items in asked.values() if items),
      "(norm, deeds near it)": len({(n, d) for n, sets in per_norm.items()
                                    for d in sets}),
      "(deed, norm), one call each": len(questions),
      "(deed, norm), by set of holders": len(
          {tuple(sorted(h)) for h in holder_sets.values()}),
      "(deed, norm), pooled by rule": -(-len(questions)
                                        // shared_lib.SHARED_ITEMS),
  }


def measure(size: int, shared: bool, embedder, out: Path,
            places: int = 1) -> dict:
  session_lib.Session.share_judgements = shared
  scripted = model(size, places)
  slots: list[dict[str, int]] = []
  plan = shared_lib._Slot.plan  # pylint: disable=protected-access

  def kept(slot) -> None:
    slots.append(keyings({n: a.items for n, a in slot.asked.items()}))
    plan(slot)
  shared_lib._Slot.plan = kept  # pylint: disable=protected-access
  started = time.monotonic()
  try:
    run_dir = runner.run_episode(
        scenario(size, places), arm="normative", seed=1,
        out_dir=out / f"{size}-{'shared' if shared else 'alone'}",
        model=scripted, embedder=embedder, progress=False)
  finally:
    shared_lib._Slot.plan = plan  # pylint: disable=protected-access
  calls = [c for c in scripted.calls if c.tag == OP]
  agent_hours = size * SLOTS * MINUTES / 60
  return {"keyings": {k: sum(s[k] for s in slots) / agent_hours
                      for k in (slots[0] if slots else {})},"calls": len(calls) / agent_hours,
          "items": sum(len(c.schema["properties"]) for c in calls)
                   / agent_hours,
          "largest items": max((len(c.schema["properties"]) for c in calls),
                               default=0),
          "largest prompt": max((len(c.prompt) for c in calls), default=0),
          "conflicts": conflicts(run_dir),
          "wall": time.monotonic() - started}


def shared_words(run_dir: Path) -> list[tuple[int, int, int]]:
  """Per slot: (slot, agents holding a qualified norm, of them holding one
  whose words another agent holds too)."""
  rows = []
  for path in sorted((run_dir / "norms").glob("step_*.json")):
    held = {name: {n["content"] for n in db["norms"]
                   if n["activated"] and n["valid"]}
            for name, db in json.loads(path.read_text()).items()}
    count: dict[str, int] = {}
    for texts in held.values():
      for text in texts:
        count[text] = count.get(text, 0) + 1
    holders = [t for t in held.values() if t]
    rows.append((int(path.stem.split("_")[1]), len(holders),
                 sum(1 for t in holders if any(count[x] > 1 for x in t))))
  return rows


def report(run_dir: Path) -> None:
  """A finished run's DetectConflict cost and its norms held alike."""
  summary = runner.summarize(run_dir)
  cost = summary["per_agent_hour"].get(OP, {"calls": 0.0, "tokens": 0.0})
  info = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
  asked = info.get("judgements", "recorded before runs said")
  print(f"{run_dir}: {summary['steps']} slots, questions {asked}; "
        f"DetectConflict per "
        f"agent-hour: {cost['calls']:.2f} calls, {cost['tokens']:.0f} tokens")
  rows = shared_words(run_dir)
  print("  slot: agents holding norms (of them holding words another holds) "
        + ", ".join(f"{s}: {h} ({a})" for s, h, a in rows))


def main(argv: list[str] | None = None) -> int:
  argv = sys.argv[1:] if argv is None else argv
  if argv[:1] == ["--alone"]:
    from crsec_concordia import cli  # noqa: PLC0415 (only this mode)
    session_lib.Session.share_judgements = False
    try:
      return cli.main(argv[1:])
    finally:
      session_lib.Session.share_judgements = True
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100])
  parser.add_argument("--places", type=int, default=1,
                      help="rooms, none seeing into another (default 1)")
  parser.add_argument("--run-dir", type=Path, nargs="+",
                      help="report on these finished runs instead")
  args = parser.parse_args(argv)
  if args.run_dir:
    for run_dir in args.run_dir:
      report(run_dir)
    return 0
  embedder = shared_embedder()
  print(f"{SLOTS} slots of {MINUTES} min, scripted café in {args.places} "
        "place(s); DetectConflict per agent-hour")
  print("agents | calls alone | calls shared | deeds judged alone | shared "
        "| largest call (items, prompt chars) alone | shared | conflicts, "
        "the same? | wall s")
  with tempfile.TemporaryDirectory() as tmp:
    for size in args.sizes:
      alone = measure(size, False, embedder, Path(tmp), args.places)
      shared = measure(size, True, embedder, Path(tmp), args.places)
      same = alone["conflicts"] == shared["conflicts"]
      print(f"{size} | {alone['calls']:.2f} | {shared['calls']:.2f} | "
            f"{alone['items']:.2f} | {shared['items']:.2f} | "
            f"{alone['largest items']}, {alone['largest prompt']} | "
            f"{shared['largest items']}, {shared['largest prompt']} | "
            f"{len(shared['conflicts'])} {'yes' if same else 'NO'} | "
            f"{alone['wall']:.0f}, {shared['wall']:.0f}", flush=True)
      print(f"DetectConflict calls per agent-hour, {size} agents: "
            f"{alone['calls']:.2f} alone, {shared['calls']:.2f} shared "
            f"({shared['calls'] / alone['calls']:.2f} of alone)"
            if alone["calls"] else f"{size} agents: no DetectConflict call",
            flush=True)
      print(f"  calls per agent-hour by keying, {size} agents: " + ", ".join(
          f"{k} {v:.2f}" for k, v in shared["keyings"].items()), flush=True)
  session_lib.Session.share_judgements = True
  return 0


if __name__ == "__main__":
  sys.exit(main())

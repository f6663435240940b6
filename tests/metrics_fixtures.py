"""Hand-built run directories that follow docs/design.md, with known answers.

`RunBuilder` writes run.json, scenario.json, events.jsonl, norms snapshots
(real `NormDatabase.to_json()` output) and usage.json, so the metrics are
tested against the contract, not against another module's output.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from crsec_concordia.norms import NormDatabase

ABIGAIL, CARLOS, ISABELLA, SAM = ("Abigail Chen", "Carlos Gomez",
                                  "Isabella Rodriguez", "Sam Moore")
AGENTS = (ABIGAIL, CARLOS, ISABELLA, SAM)

SCENARIO: dict[str, Any] = {
    "name": "hobbs_cafe_test",
    "premise": "A morning at Hobbs Cafe.",
    "setting": "Hobbs Cafe, a small café in Smallville",
    "clock": {"start": "09:00", "end": "13:00", "minutes_per_step": 10,
              "days": 1},
    "max_steps": 12,
    "conversation": {"max_rounds": 2},
    "crsec": {"initial_norm_count": 5, "synthesis_threshold": 350,
              "reflect_every": 6,
              "modules": {"communication": True, "observation": True,
                          "immediate_evaluation": True, "synthesis": True,
                          "compliance": True}},
    "agents": [
        {"name": ABIGAIL, "role": "entrepreneur",
         "persona": "Abigail, 23, a volunteer who hates smoke.",
         "preferences": {"smoking": "against", "noise": "quiet",
                         "tipping": "for"},
         "initial_norms": [{"content": "No smoking indoors.",
                            "type": "injunctive", "utility": 90}]},
        {"name": CARLOS, "role": "ordinary",
         "persona": "Carlos, 50, a poet who smokes.",
         "preferences": {"smoking": "smoker", "noise": "loud",
                         "tipping": "against"}},
        {"name": ISABELLA, "role": "ordinary",
         "persona": "Isabella, 28, the café's server.",
         "preferences": {"smoking": "against", "noise": "quiet",
                         "tipping": "for"}},
        {"name": SAM, "role": "ordinary",
         "persona": "Sam, 35, a smoker.",
         "preferences": {"smoking": "smoker", "noise": "loud",
                         "tipping": "for"}},
    ],
    "behaviours": [
        {"id": "smoking_indoors",
         "description": "smokes or lights a cigarette inside the café"},
        {"id": "smoking_outside",
         "description": "goes outside to smoke"},
        {"id": "loud_talk", "description": "talks loudly or shouts"},
        {"id": "quiet_talk", "description": "talks quietly"},
        {"id": "tipping", "description": "leaves a tip after a meal"},
        {"id": "no_tip", "description": "leaves without tipping"},
    ],
    "target_norms": [
        {"id": "no_smoking_indoors", "text": "No smoking indoors.",
         "type": "injunctive", "complies": ["smoking_outside"],
         "violates": ["smoking_indoors"]},
        {"id": "be_quiet", "text": "Be quiet in public places.",
         "type": "injunctive", "complies": ["quiet_talk"],
         "violates": ["loud_talk"]},
        {"id": "tip_after_meals", "text": "Tip after meals.",
         "type": "descriptive", "complies": ["tipping"],
         "violates": ["no_tip"]},
    ],
}


def step_clock(step: int) -> tuple[int, str]:
  """Step 1 is 09:00, ten minutes a step (the fixture's choice)."""
  minutes = 9 * 60 + (step - 1) * 10
  return 1, f"{minutes // 60:02d}:{minutes % 60:02d}"


class RunBuilder:
  """Collects records and norm changes, then writes a run directory."""

  def __init__(self, path: str | Path, *, arm: str = "normative",
               seed: int = 1, steps: int = 6,
               scenario: dict[str, Any] | None = None,
               status: str = "completed"):
    self.path = Path(path)
    self.arm = arm
    self.seed = seed
    self.steps = steps
    self.status = status
    self.scenario = copy.deepcopy(scenario or SCENARIO)
    self.records: list[dict[str, Any]] = []
    self.dbs = {a["name"]: NormDatabase(a["name"])
                for a in self.scenario["agents"]}
    self._changes: dict[int, list[Any]] = {}
    self.usage: dict[str, Any] | None = None
    self.with_norms = arm == "normative"

  # -- records ------------------------------------------------------------

  def record(self, kind: str, step: int, **fields: Any) -> dict[str, Any]:
    day, clock = step_clock(step)
    record = {"kind": kind, "step": step, "time": f"Day {day} {clock}",
              "day": day, "clock": clock, **fields}
    self.records.append(record)
    return record

  def action(self, step: int, actor: str, behaviours: list[str],
             text: str = "", place: str = "indoors") -> None:
    self.record("action", step, actor=actor,
                action=text or f"{actor} does {', '.join(behaviours)}",
                narration=text or f"{actor} does something.", place=place,
                behaviours=behaviours, evidence="")

  def conflict(self, step: int, agent: str, actor: str, norm: str,
               behaviour: str, talk: bool | None = None) -> None:
    self.record("conflict", step, agent=agent, actor=actor,
                behaviour=behaviour, norm_id=f"{agent.split()[0].lower()}-1",
                norm=norm)
    if talk is not None:
      self.record("talk_decision", step, agent=agent, actor=actor, talk=talk,
                  norm=norm)

  def conversation(self, step: int, initiator: str, partner: str, topic: str,
                   norm: str | None, turns: list[tuple[str, str]]) -> None:
    self.record("conversation", step, initiator=initiator, partner=partner,
                topic=topic, norm=norm,
                turns=[{"speaker": s, "text": t} for s, t in turns])

  def thought(self, step: int, agent: str, thoughts: list[str]) -> None:
    self.record("thought", step, agent=agent, thoughts=thoughts)

  # -- norms --------------------------------------------------------------

  def hold(self, step: int, agent: str, content: str, *,
           origin: str = "conversation", source_agent: str | None = None,
           source_text: str = "", type: str = "injunctive",  # pylint: disable=redefined-builtin
           utility: int = 80) -> str:
    """`agent` holds `content` qualified from `step` on, with its records."""
    db = self.dbs[agent]
    if origin == "created":
      norm = db.add(content, type, utility, origin="created", qualified=True,
                    step=step)
      self.record("created", step, agent=agent, norm_id=norm.id,
                  content=content, type=type, utility=utility)
    else:
      norm = db.add(content, type, utility, origin=origin,
                    source_text=source_text, source_agent=source_agent,
                    step=step)
      self.record("candidate", step, agent=agent, norm_id=norm.id,
                  content=content, type=type, utility=utility, origin=origin,
                  source_agent=source_agent, source_text=source_text)
      db.qualify(norm.id, utility, step=step)
      self.record("verdict", step, agent=agent, norm_id=norm.id,
                  content=content, accepted=True, reason=None, detail="",
                  type=type, utility=utility, llm_calls=2)
    self._changes.setdefault(step, []).append((agent, norm.id))
    return norm.id

  def reject(self, step: int, agent: str, content: str, *,
             origin: str = "conversation", source_agent: str | None = None,
             reason: str = "duplicate") -> str:
    db = self.dbs[agent]
    norm = db.add(content, "injunctive", 50, origin=origin,
                  source_agent=source_agent, step=step)
    self.record("candidate", step, agent=agent, norm_id=norm.id,
                content=content, type="injunctive", utility=50,
                origin=origin, source_agent=source_agent, source_text="")
    db.reject(norm.id, reason, step=step)
    self.record("verdict", step, agent=agent, norm_id=norm.id,
                content=content, accepted=False, reason=reason, detail="",
                type="injunctive", utility=50, llm_calls=1)
    return norm.id

  def plan(self, step: int, agent: str, norm_ids: list[str]) -> None:
    self.record("plan", step, agent=agent, day=1,
                items=[{"start": "09:00", "end": "10:00",
                        "activity": "drink coffee"}],
                norms_observed=norm_ids)

  # -- writing ------------------------------------------------------------

  def write(self) -> Path:
    self.path.mkdir(parents=True, exist_ok=True)
    run = {"scenario": self.scenario["name"], "scenario_path": "test.yaml",
           "arm": self.arm, "seed": self.seed, "max_steps": self.steps,
           "completed_steps": self.steps, "status": self.status,
           "model": {"endpoint": "scripted"}, "versions": {},
           "started": "2025-01-01T09:00:00", "finished": "2025-01-01T09:01:00",
           "wall_seconds": 60.0}
    (self.path / "run.json").write_text(json.dumps(run))
    (self.path / "scenario.json").write_text(json.dumps(self.scenario))
    records = sorted(self.records, key=lambda r: r["step"])
    with open(self.path / "events.jsonl", "w", encoding="utf-8") as f:
      for r in records:
        f.write(json.dumps(r) + "\n")
    if self.with_norms:
      self._write_snapshots()
    if self.usage is not None:
      (self.path / "usage.json").write_text(json.dumps(self.usage))
    return self.path

  def _write_snapshots(self) -> None:
    """Replays the norm changes step by step into norms/step_NNNN.json."""
    (self.path / "norms").mkdir(exist_ok=True)
    final = {a: db.to_json() for a, db in self.dbs.items()}
    for step in range(1, self.steps + 1):
      snapshot = {}
      for agent, data in final.items():
        norms = [n for n in data["norms"]
                 if (n.get("evaluated_step") or n.get("step") or 0) <= step]
        snapshot[agent] = {**data, "norms": norms}
      (self.path / "norms" / f"step_{step:04d}.json").write_text(
          json.dumps(snapshot))


# -- a synthetic café, for compare tests and for looking at the figures ----

PAPER_AGENTS = (
    ("Abigail Chen", "entrepreneur", "against", "quiet", "for"),
    ("Bob Johnson", "entrepreneur", "against", "quiet", "against"),
    ("Francisco Lopez", "entrepreneur", "against", "quiet", "for"),
    ("Carlos Gomez", "ordinary", "smoker", "loud", "against"),
    ("Isabella Rodriguez", "ordinary", "against", "quiet", "for"),
    ("Jennifer Moore", "ordinary", "against", "loud", "against"),
    ("Sam Moore", "ordinary", "smoker", "loud", "for"),
    ("Tamara Rodriguez", "ordinary", "against", "quiet", "against"),
    ("Tom Gomez", "ordinary", "against", "loud", "against"),
    ("Wolfgang Schulz", "ordinary", "smoker", "loud", "for"),
)
WORDINGS = {
    "no_smoking_indoors": ["No smoking indoors.",
                           "Smoking is not permitted inside the cafe.",
                           "Do not smoke inside the café.",
                           "Indoor smoking is prohibited."],
    "be_quiet": ["Be quiet in public places.",
                 "Keep noise to a minimum around other people.",
                 "Refrain from being noisy in public.",
                 "Do not shout in public places."],
    "tip_after_meals": ["Tip after meals.",
                        "Leave a tip after eating.",
                        "It is customary to tip after a meal."],
}
_PREFERENCE = {"no_smoking_indoors": 2, "be_quiet": 3, "tip_after_meals": 4}
_VIOLATOR = {"no_smoking_indoors": "smoker", "be_quiet": "loud",
             "tip_after_meals": "against"}
_BEHAVIOURS = {"no_smoking_indoors": ("smoking_outside", "smoking_indoors"),
               "be_quiet": ("quiet_talk", "loud_talk"),
               "tip_after_meals": ("tipping", "no_tip")}


def paper_scenario() -> dict[str, Any]:
  scenario = copy.deepcopy(SCENARIO)
  scenario["name"] = "hobbs_cafe_synthetic"
  scenario["agents"] = [
      {"name": n, "role": r, "persona": f"{n}, {r}.",
       "preferences": {"smoking": s, "noise": q, "tipping": t}}
      for n, r, s, q, t in PAPER_AGENTS]
  return scenario


def synthetic_run(path: str | Path, *, arm: str = "normative", seed: int = 1,
                  steps: int = 24) -> Path:
  """A plausible seeded café run: norms spread by conflict and talk.

  Entrepreneurs start with the three targets (tipping only if they favour
  it) and an unseeded "maintain a healthy environment" appears later in two
  agents. Violators who hear about a norm adopt it, then comply a few steps
  later ("easier said than done"). The baseline arm keeps its habits.
  """
  import random  # pylint: disable=import-outside-toplevel
  rng = random.Random(f"{seed}")
  b = RunBuilder(path, arm=arm, seed=seed, steps=steps,
                 scenario=paper_scenario())
  people = {p[0]: p for p in PAPER_AGENTS}
  held: dict[str, dict[str, str]] = {n: {} for n in people}  # target -> id
  adopted_at: dict[tuple[str, str], int] = {}
  normative = arm == "normative"
  calls = 0
  if normative:
    for name, (_, role, *prefs) in people.items():
      if role != "entrepreneur":
        continue
      for target, index in _PREFERENCE.items():
        if target == "tip_after_meals" and prefs[2] != "for":
          continue
        held[name][target] = b.hold(1, name, WORDINGS[target][0],
                                    origin="created", utility=90)
        adopted_at[(name, target)] = 1
  for step in range(1, steps + 1):
    for name, person in people.items():
      for target, index in _PREFERENCE.items():
        complies, violates = _BEHAVIOURS[target]
        chance = 0.5 if target != "tip_after_meals" else 0.25
        if rng.random() > chance:
          continue
        habit_violates = person[index] == _VIOLATOR[target]
        adopted = adopted_at.get((name, target))
        reformed = adopted is not None and step - adopted >= 3
        if habit_violates and not reformed:
          b.action(step, name, [violates],
                   f"{name} {violates.replace('_', ' ')}.")
          holders = [h for h in people if target in held[h] and h != name]
          if normative and holders:
            sender = rng.choice(holders)
            norm = WORDINGS[target][0]
            b.conflict(step, sender, name, norm,
                       f"{name} {violates.replace('_', ' ')}.", talk=True)
            b.conversation(step, sender, name, violates.replace("_", " "),
                           norm, [(sender, f"Please: {norm}"),
                                  (name, "Oh, sorry.")])
            calls += 6
            if target not in held[name] and rng.random() < 0.7:
              held[name][target] = b.hold(
                  step, name, rng.choice(WORDINGS[target][1:]),
                  source_agent=sender, type="injunctive",
                  source_text=f"conversation with {sender}")
              adopted_at[(name, target)] = step
            elif target in held[name]:
              b.reject(step, name, rng.choice(WORDINGS[target][1:]),
                       source_agent=sender)
        elif (person[index] != "against" or target != "tip_after_meals"
              or reformed):
          if habit_violates or rng.random() < 0.6:
            b.action(step, name, [complies],
                     f"{name} {complies.replace('_', ' ')}.")
    if normative and step % 4 == 0:
      observer = rng.choice(list(people))
      b.thought(step, observer, [
          "Smoking indoors makes the air unpleasant for other guests.",
          "Jennifer is drawing pictures at the corner table."])
      calls += 3
    if normative and step == steps // 2:
      for name in ("Isabella Rodriguez", "Tamara Rodriguez"):
        b.hold(step, name, "Maintain a healthy environment."
               if name.startswith("Isa") else
               "Keep the café environment healthy.", origin="observation",
               source_agent="Carlos Gomez", source_text="the smoke")
    if normative and step in (1, steps // 2):
      for name in people:
        if held[name]:
          b.plan(step, name, list(held[name].values()))
    calls += len(people)
    b.record("step", step, actor="", calls=calls, cached_calls=0,
             prompt_tokens=calls * 300, completion_tokens=calls * 20)
  b.usage = {"by_tag": {
      "ConflictDetector": {"calls": calls // 4, "cached_calls": 0,
                           "failed_calls": 0, "prompt_tokens": calls * 60,
                           "completion_tokens": calls * 4},
      "NormEvaluator": {"calls": calls // 4, "cached_calls": 2,
                        "failed_calls": 1, "prompt_tokens": calls * 90,
                        "completion_tokens": calls * 6},
      "StructuredAct": {"calls": calls // 2, "cached_calls": 0,
                        "failed_calls": 0, "prompt_tokens": calls * 150,
                        "completion_tokens": calls * 10}}}
  if not normative:
    b.usage = {"by_tag": {"StructuredAct": b.usage["by_tag"]["StructuredAct"]}}
  return b.write()

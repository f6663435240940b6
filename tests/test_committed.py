"""A committed agent keeps the norms it starts with, whatever it meets.

Two ordinary agents start with the same two norms; Ruth is committed,
Mei is not. Both see Carlos and Tom smoke, talk to them, and identify a
new norm;
with a synthesis threshold of 1, LongTermSynthesis then runs after every
norm they accept, and the scripted model groups every norm it is shown
into one theme and writes one abstract norm to replace them. Mei's
starting norms are replaced; Ruth's stay as given, in every snapshot, and
she still acts, talks and learns. The NormDatabase itself refuses to
replace a committed norm, whoever asks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from crsec_concordia import runner
from crsec_concordia.models import ScriptedModel
from crsec_concordia.norms import LifecycleError, NormDatabase, RejectionReason
from crsec_concordia.operations import immediate_evaluation
from crsec_concordia.scenarios import parse_scenario
from tests import crsec_script as cs

ROOM = """
name: committed_run
premise: A morning in a small club room.
setting: the Linden club room
clock: {start: "09:00", end: "10:00", minutes_per_step: 10, days: 1}
max_steps: 4
conversation: {max_rounds: 1}
crsec: {reflect_every: 100, synthesis_threshold: 1}
agents:
  - name: Mei Lin
    role: ordinary
    persona: A student.
    initial_norms: &held
      - {content: No smoking indoors., type: injunctive, utility: 90}
      - {content: Be quiet in public places., type: injunctive, utility: 70}
  - {name: Ruth Okafor, role: ordinary, persona: A retired nurse., committed: true, group: zealots, initial_norms: *held}
  - {name: Carlos Gomez, role: ordinary, persona: A poet who smokes.}
  - {name: Tom Gomez, role: ordinary, persona: A student who smokes.}
behaviours:
  - {id: smoking_indoors, description: smokes a cigarette inside a room}
  - {id: loud, description: speaks loudly or shouts}
"""
MEI, RUTH, CARLOS = "Mei Lin", "Ruth Okafor", "Carlos Gomez"
_ASKED = re.compile(r"What does (.+?) do next\?")
_ACTION = re.compile(r'^(?P<actor>[^:\n]+): "(?P<action>.*)"$', re.M)


def referee(prompt: str, schema: dict) -> dict[str, str]:
  """The referee: a cigarette is smoking indoors, all else none."""
  action = _ACTION.search(prompt)["action"]
  props = schema["properties"]
  smoking = "cigarette" in action
  answer = {"narration": action, "evidence": action if smoking else "none",
            "behaviour": "smoking_indoors" if smoking else "none",
            "also": "none"}
  if "place" in props:
    answer["place"] = props["place"]["enum"][0]
  return {k: v for k, v in answer.items() if k in props}


CLASSIFIED: list[str] = []


def every_norm_one_theme(prompt: str, schema: dict) -> dict:
  """ClassifySpecificNorms: all the norms shown are one theme."""
  CLASSIFIED.append(prompt)
  n = schema["properties"]["themes"]["items"]["properties"]["norms"]["maxItems"]
  return {"themes": [{"theme": "conduct", "norms": list(range(1, n + 1))}]}


def one_abstract_norm(prompt: str, schema: dict) -> dict:
  """SynthesizeNorm: one norm for them all, each weighed alike."""
  del prompt
  n = schema["properties"]["weights"]["minItems"]
  return {"content": "Be considerate of others.", "type": "injunctive",
          "weights": [1] * n}


def model():
  def act(prompt: str) -> dict[str, str]:
    asked = _ASKED.search(prompt)
    if asked is None:  # A conversation turn.
      return {"answer": "Please do not smoke in here, it bothers people."}
    return {"answer": {
        MEI: "Mei reads by the window.",
        RUTH: "Ruth knits in her armchair.",
        CARLOS: "Carlos lights a cigarette at the card table.",
        "Tom Gomez": "Tom lights a cigarette by the door."}[asked[1]]}

  scripted = cs.cafe_model(**{
      # A new norm unlike the held ones, so it is no duplicate of them.
      cs.IDENTIFY: {"rule": "Greet everyone who comes in.", "is_rule": True,
                    "type": "injunctive", "utility": 60},
      cs.CLASSIFY: every_norm_one_theme,
      cs.SYNTHESIZE: one_abstract_norm})
  scripted.add_rule(cs.ACT, act, first=True)
  scripted.add_rule(cs.LOOK, cs.look_none, first=True)
  scripted.add_rule(r"You are the referee", referee, first=True)
  return scripted


def snapshots(run_dir: Path) -> list[dict]:
  return [json.loads(p.read_text()) for p in sorted((run_dir / "norms").glob("step_*.json"))]


def test_a_committed_agent_never_drops_or_revises_its_norms(tmp_path, embedder):
  CLASSIFIED.clear()
  run_dir = runner.run_episode(
      parse_scenario(ROOM, "room.yaml"), arm="normative", seed=1,
      out_dir=tmp_path / "run", model=model(), embedder=embedder,
      progress=False)
  scenario = json.loads((run_dir / "scenario.json").read_text())
  ruth_row = next(a for a in scenario["agents"] if a["name"] == RUTH)
  assert ruth_row["committed"] is True and ruth_row["group"] == "zealots"
  config = json.loads((run_dir / "config.json").read_text())
  params = {i["params"]["name"]: i["params"] for i in config["instances"]
            if "name" in i["params"] and i["role"] == "entity"}
  assert params[RUTH]["committed"] is True and "committed" not in params[MEI]
  shots = snapshots(run_dir)
  assert len(shots) == 4
  given = [("No smoking indoors.", 90, "injunctive"),
           ("Be quiet in public places.", 70, "injunctive")]
  for shot in shots:
    ruth = shot[RUTH]["norms"]
    start = [n for n in ruth if n["origin"] == "created"]
    assert [(n["content"], n["utility"], n["type"]) for n in start] == given
    assert all(n["committed"] and n["status"] == "qualified"
               and n["replaced_by"] is None for n in start)
  final_mei = shots[-1][MEI]["norms"]
  final_ruth = shots[-1][RUTH]["norms"]
  # The answers did make an ordinary agent drop its starting norms ...
  assert {n["status"] for n in final_mei if n["origin"] == "created"} == {"replaced"}
  assert all("committed" not in n for n in final_mei)
  assert any(n["origin"] == "synthesis" and n["status"] == "qualified"
             for n in final_mei)
  # ... while Ruth learnt the new norm beside hers, and synthesis never
  # took hers into a theme.
  assert any(n["content"] == "Greet everyone who comes in." and
             n["status"] == "qualified" for n in final_ruth)
  assert not any(n["origin"] == "synthesis" for n in final_ruth)
  ruths = [p for p in CLASSIFIED if f"Norms {RUTH} holds" in p]
  assert ruths and not any("No smoking indoors." in p for p in ruths)
  assert any("No smoking indoors." in p for p in CLASSIFIED
             if f"Norms {MEI} holds" in p)
  with open(run_dir / "events.jsonl", encoding="utf-8") as f:
    records = [json.loads(line) for line in f]
  # She still acts and talks.
  assert any(r["kind"] == "action" and r["actor"] == RUTH for r in records)
  assert any(r["kind"] == "conversation" and RUTH in (r["initiator"], r["partner"])
             for r in records)
  created = [r for r in records if r["kind"] == "created" and r["agent"] == RUTH]
  assert len(created) == 2 and all(r["committed"] for r in created)


def test_the_database_refuses_to_replace_a_committed_norm():
  db = NormDatabase("Ruth Okafor")
  kept = db.add("No smoking indoors.", "injunctive", 90, origin="created",
                qualified=True, committed=True)
  other = db.add("Be quiet.", "injunctive", 60, origin="created", qualified=True)
  abstract = db.add("Be considerate.", "injunctive", 70, origin="synthesis",
                    qualified=True)
  assert db.revisable() == [other, abstract]
  with pytest.raises(LifecycleError, match="committed"):
    db.replace([kept.id, other.id], abstract.id)
  assert kept.qualified and other.qualified  # Nothing half done.
  with pytest.raises(LifecycleError, match="held from the start"):
    db.add("Smoke anywhere.", "injunctive", 50, origin="created", committed=True)
  # Saved and read back (a checkpoint), it is still committed; an ordinary
  # norm's record is as it was before the flag existed.
  back = NormDatabase.from_json(json.loads(json.dumps(db.to_json())))
  assert back.get(kept.id).committed and "committed" not in other.to_json()


# Candidate, a nearer norm and a committed one about the same thing
# (cosines 0.8 and 0.6 with the candidate).
_VECTORS = {"Greet people with a handshake.": [1.0, 0.0, 0.0],
            "Greet everyone warmly.": [0.8, 0.6, 0.0],
            "Greet people with a bow.": [0.6, 0.0, 0.8]}


def _opposite_to_the_bow(prompt: str) -> dict:
  return {"same_meaning": False,
          "opposite": "Rule B: Greet people with a bow." in prompt}


@pytest.mark.parametrize("committed", [True, False])
def test_a_candidate_is_judged_against_the_committed_norm_it_is_about(committed):
  db = NormDatabase("Ruth Okafor")
  db.add("Greet people with a bow.", "descriptive", 90, origin="created",
         qualified=True, committed=committed)
  db.add("Greet everyone warmly.", "descriptive", 50, origin="conversation",
         qualified=True)
  candidate = db.add("Greet people with a handshake.", "descriptive", 60,
                     origin="conversation", source_text="Shake hands, please.")
  model = ScriptedModel([
      (cs.PAIR, _opposite_to_the_bow),
      (cs.EVALUATE, {"supported": True, "type": "descriptive", "utility": 60})])
  verdict = immediate_evaluation(
      model, lambda text: np.asarray(_VECTORS[text], dtype=np.float32),
      name="Ruth Okafor", persona="A retired nurse.", candidate=candidate,
      held=db.qualified(), known_names=[], on_failure=None)
  if committed:  # Asked about the bow, which it contradicts.
    assert not verdict.accepted
    assert verdict.reason == RejectionReason.CONFLICTS_WITH_NORM
  else:  # Asked about the nearest, as always.
    assert verdict.accepted

"""A scripted run of the held-out office kitchen (bench/heldout/office_kitchen.yaml).

The venue has no calibration anywhere, so its behaviour shares are raw
until someone labels a run of it (crsec_concordia/calibration/sheet.py).
Real CRSEC agents answer from the scripted café (tests/crsec_script.py),
each agent's deeds scripted per slot; a scripted referee tags by the
action's words, right on two and wrong on two (a rinse into the
dishwasher missed, a fresh pot missed beside a washed cup), so the labels
a person gives (TRUE) differ from its tags; observers judge a dirty mug
left in the sink a breach and everything else unrelated.
"""

from __future__ import annotations

import re
from pathlib import Path

from crsec_concordia import runner
from crsec_concordia.models import ScriptedModel
from tests import crsec_script as cs

KITCHEN = Path(__file__).resolve().parents[1] / "bench" / "heldout" / (
    "office_kitchen.yaml")
HANNAH, RAVI, CHLOE, GREG = ("Hannah Berg", "Ravi Menon", "Chloe Martin",
                             "Greg Novak")
# Each agent's deed (an agent goes on with it in the next slot).
DEEDS = {HANNAH: "Hannah Berg reminds Ravi Menon to wash his mug.",
         RAVI: "Ravi Menon leaves his dirty mug in the sink and hurries "
               "back to his desk.",
         CHLOE: "Chloe Martin rinses her plate and puts it in the "
                "dishwasher.",
         GREG: "Greg Novak washes his cup and makes a fresh pot of coffee."}
# What the scripted referee tags, by the words it finds (first match; an
# action that rinses is missed).
TAGS = (("washes his cup", "washed_dishes"),
        ("dirty mug", "left_dishes"), ("yoghurt", "took_others_food"),
        ("fresh pot", "refilled_coffee"))
# The labels a person gives each action (the referee's errors undone).
TRUE = {DEEDS[HANNAH]: "none", DEEDS[RAVI]: "left_dishes",
        DEEDS[CHLOE]: "washed_dishes",
        DEEDS[GREG]: "washed_dishes refilled_coffee"}
_ASKED = re.compile(r"It is Day 1 (\d\d:\d\d) .*What does (.+?) do next\?",
                    re.S)
_ACTION = re.compile(r'^(?P<actor>[^\n:]+): "(?P<action>.*)"\s*$', re.M)
_ITEM = re.compile(r'^(?P<key>.+?) \([^()]*\): "(?P<action>.*)"$', re.M)


def act(prompt: str) -> dict[str, str]:
  asked = _ASKED.search(prompt)
  if asked is None:  # A conversation turn.
    return {"answer": "Could you wash your mug, please?"}
  return {"answer": DEEDS[asked.group(2)]}


def referee(prompt: str, schema: dict) -> dict[str, str]:
  """The general call: the first tag whose words the action holds."""
  action = _ACTION.findall(prompt)[-1][1]
  none = schema["properties"]["behaviour"]["enum"][-1]
  found = [(words, tag) for words, tag in TAGS if words in action]
  words, tag = found[0] if found and "rinses" not in action else ("", none)
  return {"narration": action, "place": "indoors", "behaviour": tag,
          "also": none, "evidence": words or "none"}


def detect(prompt: str, schema: dict) -> dict[str, dict[str, str]]:
  """DetectConflict: a dirty mug left in the sink breaks the rule."""
  seen = {m["key"]: m["action"] for m in _ITEM.finditer(prompt)}
  return {key: ({"evidence": "leaves his dirty mug in the sink",
                 "verdict": "breaks"}
                if "dirty mug" in seen.get(key, "") else
                {"evidence": "none", "verdict": "unrelated"})
          for key in schema["properties"]}


def model() -> ScriptedModel:
  scripted = cs.cafe_model(**{
      # Tasks of a slot each, so every agent writes a new action each slot.
      cs.DECOMPOSE: cs.tasks_of(15),
      cs.CREATE: {"norms": [
          {"content": "Wash your own dishes.", "type": "injunctive",
           "utility": 90},
          {"content": "Leave other people's food alone.",
           "type": "injunctive", "utility": 80},
          {"content": "Keep the kitchen tidy.", "type": "injunctive",
           "utility": 70},
          {"content": "Say good morning.", "type": "descriptive",
           "utility": 50}]}})
  # Each added first: the last added is matched first (the look's prompt
  # opens as the general call's does).
  for pattern, answer in ((r"You are the referee", referee),
                          (cs.DOER, cs.doer_answer), (cs.LOOK, cs.look_none),
                          (cs.ACT, act), (cs.DETECT, detect)):
    scripted.add_rule(pattern, answer, first=True)
  return scripted


def run(out: Path, embedder) -> Path:
  """Two slots of the kitchen: each agent acts, then goes on."""
  return runner.run_episode(KITCHEN, arm="normative", seed=1, out_dir=out,
                            model=model(), embedder=embedder, steps=2,
                            progress=False)

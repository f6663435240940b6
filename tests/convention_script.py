"""A scripted club of two greeting conventions, for the committed-minority
sweep: handshakes against bows.

Real CRSEC agents answer from this script the way a model that takes its
norms seriously would: an agent plans (and so greets) by the greeting norm
it holds with the highest importance (the latest on a tie); a member who
sees a greeting against its norm judges it a conflict and says its own
norm in the talk that follows; IdentifyNorm draws from a talk the norm
the other speaker said, and from a notice the greeting it posts; a norm
so taken is held at `taken_utility`. With the majority's handshake at 80, the minority's bow at 90 and a taken norm
at 85, a member told about the bow greets with a bow; at 78 it holds the
bow but goes on shaking hands.
"""

from __future__ import annotations

import re

from crsec_concordia.models import ScriptedModel
from tests import crsec_script as cs

BOW, HANDSHAKE = "Greet people with a bow.", "Greet people with a handshake."
_NORM = re.compile(r"^\d+\. (.+?) \((?:\w+, )?(\d+)/100\)$", re.M)
_NAME = re.compile(r"Reply as (.+?), in character")
_SEEN = re.compile(r'^(.+?) \([^)]*\): "(.*)"\nRule: (.*)$', re.M)
_SAID = re.compile(r'^(.+?): "(.*)"$', re.M)
_RECEIVER = re.compile(r"how important (.+?) now thinks")


def greeting(text: str) -> str | None:
  """"bow", "handshake" or None: the greeting a text is about."""
  lowered = text.lower()
  if "bow" in lowered:
    return "bow"
  if "hand" in lowered:
    return "handshake"
  return None


def _norm_of(prompt: str) -> str | None:
  """The greeting of the most important greeting norm the prompt lists."""
  held = [(int(u), i, greeting(text))
          for i, (text, u) in enumerate(_NORM.findall(prompt))
          if greeting(text)]
  return max(held)[2] if held else None


def _sentence(kind: str | None) -> str:
  return {"bow": BOW, "handshake": HANDSHAKE}.get(kind or "", "")


def plan(prompt: str, schema: dict) -> dict:
  """The day by the greeting norm held most important; in a scenario of
  places, every hour in its first place (the acts never say where, so
  nobody moves)."""
  kind = _norm_of(prompt) or "handshake"
  answer = cs.plan_answer(cs.halves(f"greet the members with a {kind}",
                                    "read the papers"))(prompt, schema)
  hour = schema["properties"]["hours"]["items"]["properties"]
  if "place" in hour:
    for item in answer["hours"]:
      item["place"] = hour["place"]["enum"][0]
  return answer


# Where each member stands, so that no two members' actions read alike
# (the game master takes an action much like another's for a copy).
SPOTS = ("beside the tall window", "near the marble fireplace",
         "under the brass clock", "by the grand piano", "at the oak counter",
         "next to crowded bookshelves", "inside a quiet alcove",
         "along the sunny doorway", "against velvet curtains",
         "close to chess tables")


def acting(names: list[str]):
  def act(prompt: str) -> dict:
    name = _NAME.search(prompt).group(1)
    if "task now" in prompt:
      task = prompt.split("task now", 1)[1].split("\n", 1)[0]
      spot = SPOTS[names.index(name) % len(SPOTS)]
      if greeting(task) == "bow":
        return {"answer": f"{name} bows {spot}."}
      if greeting(task) == "handshake":
        return {"answer": f"{name} shakes hands {spot}."}
      return {"answer": f"{name} reads {spot}."}
    # A conversation turn: the speaker says its own norm.
    said = _sentence(_norm_of(prompt))
    return {"answer": f"Here we {said[0].lower()}{said[1:]}" if said
            else "Good morning."}
  return act


def detect(prompt: str, schema: dict) -> dict:
  out = {}
  seen = {who: (deed, rule) for who, deed, rule in _SEEN.findall(prompt)}
  for who in schema["properties"]:
    deed, rule = seen.get(who, ("", ""))
    done, asked = greeting(deed), greeting(rule)
    if not done or not asked:
      out[who] = {"evidence": "none", "verdict": "unrelated"}
    else:
      out[who] = {"evidence": deed,
                  "verdict": "follows" if done == asked else "breaks"}
  return out


def identify(taken_utility: int):
  def respond(prompt: str) -> dict:
    receiver = _RECEIVER.search(prompt)
    talk = prompt.split("Conversation:", 1)[1] if "Conversation:" in (
        prompt) else ""
    told = [greeting(text) for who, text in _SAID.findall(talk)
            if receiver and who != receiver.group(1) and greeting(text)]
    if "Notice:" in prompt:  # A notice is read as it is written.
      posted = greeting(prompt.split("Notice:", 1)[1])
      told += [posted] if posted else []
    if not told:
      return {"rule": "none", "is_rule": False, "type": "descriptive",
              "utility": 1}
    return {"rule": f"People should greet others with a {told[-1]}.",
            "is_rule": True, "type": "descriptive",
            "utility": taken_utility}
  return respond


def club_model(names: list[str], taken_utility: int = 85,
               ids: tuple[str, str] = ("bow", "handshake")) -> ScriptedModel:
  """The scripted club of the members `names`; `taken_utility`: how much
  a member values a norm it is told (above 80: it follows a bow it is
  told about); `ids`: the scenario's behaviour ids of a bow and of a
  handshake."""
  model = cs.cafe_model(**{
      cs.PLAN: plan, cs.ACT: acting(names), cs.DETECT: detect,
      cs.IDENTIFY: identify(taken_utility),
      cs.EVALUATE: {"supported": True, "type": "descriptive",
                    "utility": taken_utility},
      cs.REFLECT: {"thoughts": ["The members greet each other warmly."]}})
  model.add_rule(cs.LOOK, cs.look_none, first=True)
  model.add_rule(r"You are the referee", refereeing(ids), first=True)
  return model


_ACTION = re.compile(r'^(?P<actor>[^:\n]+): "(?P<action>.*)"$', re.M)


_HERE = re.compile(r"^.+ is at (?P<place>[a-z_]+) now\.$", re.M)


def refereeing(ids: tuple[str, str]):
  """Tags a bow or a handshake (by the scenario's `ids` for them) where
  the action shows one, in the general call and in an occasion's focused
  check; the action happens where the actor is."""
  def referee(prompt: str, schema: dict) -> dict:
    action = _ACTION.search(prompt)["action"]
    kind = (ids[0] if " bows" in action else
            ids[1] if "shakes hands" in action else None)
    if "place" not in schema["properties"]:  # The occasion's focused check.
      return {"evidence": action if kind else "none",
              "behaviour": kind or "none"}
    named = ([kind] if kind else []) + ["none", "none"]
    here = _HERE.search(prompt)
    place = here["place"] if here else schema["properties"]["place"][
        "enum"][0]
    return {"narration": action, "place": place,
            "evidence": action if kind else "none",
            "behaviour": named[0], "also": named[1]}
  return referee

"""A scripted café for unit tests: one default answer per CRSEC operation.

Rules match a phrase only that operation's prompt contains. Tests override
single operations with `model.add_rule(pattern, answer, first=True)`.
"""

from __future__ import annotations

import copy
import re

import numpy as np
from concordia.associative_memory import basic_associative_memory

from crsec_concordia.embedding import shared_embedder
from crsec_concordia.models import ScriptedModel
from crsec_concordia.prefabs import PREFABS

# Phrases that identify each operation's prompt.
CREATE = r"social norms this person holds"
DETECT = r"\nverdict: breaks if"
TALK = r"\ntalk:"
IDENTIFY = r"is_rule:"
REFLECT = r"thoughts: up to three"
EVALUATE = r"supported: does the source support"
PAIR = r"same_meaning:"
CLASSIFY = r"themes: a list"
SYNTHESIZE = r"weights: for each"
PLAN = r"Plan that time hour by hour"
DECOMPOSE = r"Break that time into tasks"
READ = r"events: each thing a person did"
ACT = r"Reply as .*, in character"
DOER = r"In this action, who "
# The referee's second look (second_look.py); its prompt opens as the
# general call's does, so a rule for it goes first.
LOOK = r"behaviour: the id the action below shows, or "

_DOER_ACTION = re.compile(r'^Action: "(?P<action>.*)"$', re.M)


def doer_answer(prompt: str) -> dict[str, str]:
  """The doer check (game_masters/referee/doer_check.py) answered as a good
  model would for the tests' actions: the person the action begins with."""
  action = _DOER_ACTION.search(prompt)["action"]
  name = re.match(r"(?:[A-Z][\w'-]*\s?)+", action)
  return {"who": name.group(0).strip() if name else "nobody"}


def look_none(prompt: str, schema: dict) -> dict[str, str]:
  """The second look answered "none of these" (the last choice)."""
  del prompt
  return {"behaviour": schema["properties"]["behaviour"]["enum"][-1],
          "evidence": "none"}


def each(answer):
  """A batched answer: `answer` for every entry the schema asks for.

  DetectConflict judges all the behaviours of one observation in one call,
  one schema entry per person seen; a test scripts one verdict for all.
  """
  def respond(prompt, schema):
    del prompt
    return {key: dict(answer) for key in schema["properties"]}
  return respond


_SPAN = re.compile(r"from (\d\d:\d\d) to (\d\d:\d\d)")


def _clock(t: int) -> str:
  return f"{t // 60:02d}:{t % 60:02d}"


def _minutes(clock: str) -> int:
  return int(clock[:2]) * 60 + int(clock[3:])


def halves(first: str, second: str):
  """The plan's time (as its prompt gives it) in two blocks."""
  def items(prompt):
    start, end = (_minutes(t) for t in _SPAN.search(prompt).groups())
    mid = start + (end - start) // 20 * 10
    return [{"start": _clock(start), "end": _clock(mid), "activity": first},
            {"start": _clock(mid), "end": _clock(end), "activity": second}]
  return items


_HOURS = re.compile(r"hour by hour \(([^)]*)\)")


def plan_answer(items, norms_observed=(1,)):
  """A day plan: `items` (timed blocks, or a function of the prompt giving
  them) as the hourly schedule NormativePlan asks for, each hour the
  activity of the block it starts in; `norms_observed` only where the
  schema asks for it (a plan made without norms has none)."""
  def respond(prompt, schema):
    given = items(prompt) if callable(items) else items
    hours = [h.split("-")[0] for h in
             _HOURS.search(prompt).group(1).split(", ") if h]
    def activity(hour):
      covering = [i for i in given if i["start"] <= hour < i["end"]]
      begun = [i for i in given if i["start"] <= hour]
      return (covering or begun or given)[0 if covering else -1]["activity"]
    answer = {"hours": [{"activity": activity(h), "habit": "none"}
                        for h in hours]}
    if "norms_observed" in schema["properties"]:
      field = schema["properties"]["norms_observed"]
      answer["norms_observed"] = [
          n for n in norms_observed
          if n <= field["items"]["maximum"]][:field["maxItems"]]
    return answer
  return respond


_BLOCK = re.compile(r"is about to begin (\d\d:\d\d)-(\d\d:\d\d): (.*?)\. Break")


def tasks_of(minutes: int = 60):
  """DecomposePlan's answer: the block in tasks of `minutes` (the last
  one shorter), each named after the block and its number."""
  def respond(prompt, schema):
    del schema
    start, end, activity = _BLOCK.search(prompt).groups()
    lo, hi = _minutes(start), _minutes(end)
    return {"tasks": [
        {"start": _clock(t), "end": _clock(min(hi, t + minutes)),
         "activity": f"{activity} ({i + 1})"}
        for i, t in enumerate(range(lo, hi, minutes))]}
  return respond


def act_answer(answer: str, then: str = "reads the paper by the window."):
  """An act answer, with `then` as its second part where the schema asks
  for one (an occasion in the slot a task begins)."""
  def respond(prompt, schema):
    del prompt
    parts = {"answer": answer}
    if "next" in schema["properties"]:
      parts["next"] = then
    return parts
  return respond


def cafe_model(**answers) -> ScriptedModel:
  defaults = {
      CREATE: {"norms": [
          {"content": "No smoking indoors.", "type": "injunctive", "utility": 90},
          {"content": "Be quiet in public places.", "type": "injunctive",
           "utility": 80},
          {"content": "Tip after meals.", "type": "descriptive", "utility": 70},
          {"content": "Clean up after yourself.", "type": "injunctive",
           "utility": 60},
          {"content": "Wait your turn in line.", "type": "injunctive",
           "utility": 50}]},
      DETECT: each({"evidence": "lights a cigarette", "verdict": "breaks"}),
      TALK: {"talk": True},
      IDENTIFY: {"rule": "Smoking is not allowed inside the cafe.",
                 "is_rule": True, "type": "injunctive", "utility": 70},
      REFLECT: {"thoughts": ["People here seem to dislike smoke indoors."]},
      EVALUATE: {"supported": True, "type": "injunctive", "utility": 75},
      PAIR: {"same_meaning": False, "opposite": False},
      CLASSIFY: {"themes": [{"theme": "smoking", "norms": [1, 2]}]},
      SYNTHESIZE: {"content": "Keep the air clean for everyone.",
                   "type": "injunctive", "weights": [3, 1]},
      PLAN: plan_answer(halves("write poems", "lunch and reading")),
      DECOMPOSE: tasks_of(60),
      # Free text (not the exact observation format) holds no event here.
      READ: {"events": []},
      ACT: act_answer("sips a coffee."),
      DOER: doer_answer,
  }
  defaults.update(answers)
  return ScriptedModel(list(defaults.items()))


def constant_embedder(text: str) -> np.ndarray:
  del text
  return np.ones(8, dtype=np.float32) / np.sqrt(8)


def build_agent(arm: str, model, **params):
  """A normative or baseline entity built from its prefab, as a config would."""
  prefab = copy.deepcopy(PREFABS[f"{arm}__Entity"])
  prefab.params = {"name": "Carlos Gomez", "persona": "A poet who smokes.",
                   "setting": "Hobbs Cafe", **params}
  # The prefab's components use the bank's embedder, as in a simulation.
  bank = basic_associative_memory.AssociativeMemoryBank(
      sentence_embedder=shared_embedder())
  agent = prefab.build(model, bank)
  observe = agent.observe

  def observe_and_notice(observation: str) -> None:
    # ConflictDetector notices in its own thread, joined when the game
    # master collects requests; a test looks once the noticing is done.
    observe(observation)
    if "ConflictDetector" in agent.get_all_context_components():
      agent.get_component("ConflictDetector").join()

  agent.observe = observe_and_notice
  return agent

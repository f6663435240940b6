"""A scripted café for unit tests: one default answer per CRSEC operation.

Rules match a phrase only that operation's prompt contains. Tests override
single operations with `model.add_rule(pattern, answer, first=True)`.
"""

from __future__ import annotations

import copy

import numpy as np
from concordia.associative_memory import basic_associative_memory

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
PLAN = r"norms_observed:"
ACT = r"Reply as .*, in character"


def each(answer):
  """A batched answer: `answer` for every entry the schema asks for.

  DetectConflict judges all the behaviours of one observation in one call,
  one schema entry per person seen; a test scripts one verdict for all.
  """
  def respond(prompt, schema):
    del prompt
    return {key: dict(answer) for key in schema["properties"]}
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
      PLAN: {"items": [{"start": "09:00", "end": "12:00",
                        "activity": "write poems"},
                       {"start": "12:00", "end": "16:00",
                        "activity": "lunch and reading"}],
             "norms_observed": [1]},
      ACT: {"answer": "sips a coffee."},
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
  bank = basic_associative_memory.AssociativeMemoryBank(
      sentence_embedder=constant_embedder)
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

"""bench/referee_structures.py: each structure's plumbing, with no model.

A scripted referee that knows every label must score precision and recall
1.0 under every structure (the ids are read from each answer as the bench
says), and one that says "yes" to everything must lose precision only
where a structure lets a yes through.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from crsec_concordia.calibration import probes
from crsec_concordia.models.scripted import ScriptedModel
from crsec_concordia.scenarios import load_scenario

ROOT = Path(__file__).resolve().parent.parent


def _bench():
  sys.path.insert(0, str(ROOT / "bench"))
  spec = importlib.util.spec_from_file_location(
      "referee_structures", ROOT / "bench" / "referee_structures.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


bench = _bench()
VENUE = "hobbs_cafe_mini"


def _cases():
  scenario = load_scenario(VENUE)
  return scenario, probes.load_probes(probes.probes_path(scenario),
                                      scenario).referee


def knowing_model(scenario, cases, *, say_yes: bool = False) -> ScriptedModel:
  """Answers every structure's question as the labels say (or "yes")."""
  by_description = {b.description: b.id for b in scenario.behaviours}

  def answer(prompt, schema):
    case = next(c for c in cases if f'"{c.action}"' in prompt)
    labels = list(case.behaviours)
    props = schema["properties"]
    if "answer" in props:  # yesno: one behaviour per call.
      described = next(d for d in by_description if f"Behaviour: {d}\n"
                       in prompt)
      yes = say_yes or by_description[described] in labels
      return {"answer": "yes" if yes else "no"}
    out = {}
    for key, spec in props.items():
      enum = spec.get("enum", [])
      if key in ("behaviour", "also"):
        i = 0 if key == "behaviour" else 1
        out[key] = labels[i] if len(labels) > i else enum[-1]
      elif key == "evidence":
        out[key] = case.action if labels else "none"
      elif key == "place":
        out[key] = case.place or "indoors"
      elif key == "how":
        out[key] = bench.BY_ACTOR
      elif key in scenario.behaviour_ids:  # checklist
        out[key] = "yes" if say_yes or key in labels else "no"
      else:  # narration, deed
        out[key] = case.action[:60]
    return out

  return ScriptedModel(fallback=answer)


@pytest.mark.parametrize("name", sorted(bench.STRUCTURES))
def test_a_referee_that_knows_the_labels_scores_one(name):
  scenario, cases = _cases()
  counts, misses = bench.score(knowing_model(scenario, cases), scenario,
                               cases, bench.STRUCTURES[name])
  assert (counts.precision, counts.recall) == (1.0, 1.0), misses
  assert counts.cases == len(cases) and not misses


def test_a_yes_sayer_loses_precision_where_yes_gets_through():
  scenario, cases = _cases()
  model = knowing_model(scenario, cases, say_yes=True)
  for name in ("yesno", "checklist"):
    counts, misses = bench.score(model, scenario, cases,
                                 bench.STRUCTURES[name])
    assert counts.recall == 1.0
    # Every behaviour not labelled is a false tag.
    assert counts.fp == len(cases) * len(scenario.behaviours) - counts.tp
    assert counts.precision < 0.3 and misses

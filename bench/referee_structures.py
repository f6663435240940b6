"""The referee's answer structures tried on the probes, side by side.

The shipped referee (one call: narration, place, a behaviour id, a second
id, a quote; game_masters/referee/general_call.py) is compared with the
other structures measured for issue 21 on the same labelled cases
(scenarios/<venue>.probes.yaml), each scored by precision and recall over
behaviour tags (bench/probe_scores.py):

  shipped    the game master's own adjudication (its quote check included)
  checklist  one answer with yes / talk / no for every behaviour
  yesno      one yes/no call per behaviour: "did the actor do this?"
  how        the shipped answer with a `how` field after the ids (done by
             the actor / by someone else / only talked of); tags only
             when "done by the actor"
  deed       the shipped answer with a short `deed` (the actor's own deed,
             a few words) before the ids

The wordings are those measured on the mini café (figures in
docs/trials/referee.md); `how` and `deed` here skip the shipped referee's
second ask after an unsupported quote, so their figures may differ a
little. So a claim such as "a yes/no verifier cannot lift precision on this
model" can be checked on any model or venue, not taken on trust. Any
endpoint: set CRSEC_BASE_URL and CRSEC_MODEL; by default the embedded model
(one model-backed job at a time). The cases are test data: nothing of them
reaches a prompt of the product.
Usage: .venv/bin/python bench/referee_structures.py [--venue NAME ...]
       [--structure NAME ...]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from crsec_concordia import models  # noqa: E402
from crsec_concordia.calibration import probes  # noqa: E402
from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.game_masters import referee  # noqa: E402
from crsec_concordia.game_masters.referee import (  # noqa: E402
    general_call as rq)
from crsec_concordia.models.base import (EndpointError,  # noqa: E402
                                         StructuredOutputError)
from crsec_concordia.scenarios import Scenario, load_scenario  # noqa: E402
import probe_scores  # noqa: E402  (bench/, beside this file)

YES, TALK, NO = "yes", "talk", "no"
BY_ACTOR = "done by the actor"
HOW = ["only talked, asked or thought about", "done by someone else", BY_ACTOR]

# (model, scenario, actor, action) -> the behaviour ids the structure tags.
Structure = Callable[[Any, Scenario, str, str], set[str]]


def _behaviours(scenario: Scenario) -> list[dict[str, str]]:
  return [{"id": b.id, "description": b.description}
          for b in scenario.behaviours]


def _ask(model, prompt: str, schema: Mapping[str, Any], max_tokens: int
         ) -> Mapping[str, Any]:
  return model.sample_json(prompt, schema, max_tokens=max_tokens,
                           temperature=0.0)


def shipped(model, scenario: Scenario, actor: str, action: str) -> set[str]:
  judge = referee.Referee(
      model, place=scenario.setting, default_place=scenario.default_place,
      behaviours=scenario.behaviours,
      similarity=referee.similarity_of(shared_embedder()))
  event, _ = judge.adjudicate(actor, action)
  return set(event["behaviours"])


def checklist(model, scenario: Scenario, actor: str, action: str
              ) -> set[str]:
  ids = list(scenario.behaviour_ids)
  props: dict[str, Any] = {
      "narration": {"type": "string", "maxLength": 300},
      "place": {"type": "string", "enum": list(rq.PLACES)}}
  props.update({i: {"type": "string", "enum": [YES, TALK, NO]} for i in ids})
  schema = {"type": "object", "additionalProperties": False,
            "required": list(props), "properties": props}
  listing = "\n".join(f"- {b.id}: {b.description}"
                      for b in scenario.behaviours)
  prompt = (
      f"You are the referee at {scenario.setting}.\nBehaviours:\n{listing}\n\n"
      "For the action below:\nnarration: the same action in one short "
      "sentence, present tense, with the same meaning.\nplace: indoors if "
      "the action happens inside a building or a room, outdoors if in the "
      f"open air; {scenario.default_place or 'indoors'}, where the action "
      "does not say.\nThen, for each behaviour id above: \"yes\" if the "
      "actor does it in this action; \"talk\" if the actor only speaks, asks "
      "or thinks about it, or sees someone else do it; \"no\" otherwise. Most "
      f"actions show none of the behaviours.\n\n{actor}: \"{action}\"")
  answer = _ask(model, prompt, schema, 200)
  return {i for i in ids if answer[i] == YES}


def yesno(model, scenario: Scenario, actor: str, action: str) -> set[str]:
  schema = {"type": "object", "additionalProperties": False,
            "required": ["answer"],
            "properties": {"answer": {"type": "string", "enum": [YES, NO]}}}
  tags = set()
  for b in scenario.behaviours:
    prompt = (f"What happened: {actor}: \"{action}\"\n"
              f"Behaviour: {b.description}\n"
              f"Did {actor} do this behaviour in what happened? Talking or "
              "asking about it, or seeing someone else do it, is not doing "
              "it. Reply with one word: yes or no.")
    if _ask(model, prompt, schema, 10)["answer"] == YES:
      tags.add(b.id)
  return tags


def _extended(model, scenario: Scenario, actor: str, action: str, *,
              field: str, spec: Mapping[str, Any], before: str, line: str
              ) -> tuple[Mapping[str, Any], set[str]]:
  """The shipped question with one more field placed before `before`;
  (the answer, the ids it names that the action's words support)."""
  ids = list(scenario.behaviour_ids)
  base = rq.adjudication_schema(ids)
  props: dict[str, Any] = {}
  for key, value in base["properties"].items():
    if key == before:
      props[field] = dict(spec)
    props[key] = value
  schema = {**base, "required": list(props), "properties": props}
  prompt = rq.adjudication_prompt(
      place=scenario.setting, behaviours=_behaviours(scenario), actor=actor,
      action=action, default_place=scenario.default_place)
  prompt = prompt.replace(f"{before}: ", f"{line}\n{before}: ", 1)
  answer = _ask(model, prompt, schema, 200)
  named = set(rq.behaviours_of(answer, ids))
  return answer, (named if rq.supported(answer, ids, actor, action)
                  else set())


def how(model, scenario: Scenario, actor: str, action: str) -> set[str]:
  answer, named = _extended(
      model, scenario, actor, action, field="how",
      spec={"type": "string", "enum": HOW}, before="evidence",
      line=("how: for the ids you chose, whether the action shows them "
            f"\"{BY_ACTOR}\", \"{HOW[1]}\", or \"{HOW[0]}\"."))
  return named if answer["how"] == BY_ACTOR else set()


def deed(model, scenario: Scenario, actor: str, action: str) -> set[str]:
  _, named = _extended(
      model, scenario, actor, action, field="deed",
      spec={"type": "string", "maxLength": 80}, before="behaviour",
      line=("deed: what the actor does with their own hands or voice, in at "
            "most six words, starting with a verb."))
  return named


STRUCTURES: dict[str, Structure] = {
    "shipped": shipped, "checklist": checklist, "yesno": yesno, "how": how,
    "deed": deed}


def score(model, scenario: Scenario, cases: Sequence[Any],
          structure: Structure) -> tuple[probe_scores.TagCounts, list[str]]:
  """The structure's tag counts over the cases, and its misses."""
  counts, misses = probe_scores.TagCounts(), []
  for case in cases:
    try:
      got = structure(model, scenario, case.actor, case.action)
    except (StructuredOutputError, EndpointError) as e:
      counts.add(case.behaviours, ())
      misses.append(f"want {sorted(case.behaviours)} failed: {e} | "
                    f"{case.action}")
      continue
    if not counts.add(case.behaviours, got):
      misses.append(f"want {sorted(case.behaviours)} got {sorted(got)} | "
                    f"{case.action}")
  return counts, misses


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--venue", nargs="+", default=None,
                      help="shipped venues with a probe file (default: all)")
  parser.add_argument("--structure", nargs="+", choices=sorted(STRUCTURES),
                      default=list(STRUCTURES))
  args = parser.parse_args(argv)
  venues = args.venue or probes.probed_venues()
  model = models.make_model(models.EndpointConfig.resolve(), seed=1)
  lines = []
  for name in venues:
    scenario = load_scenario(name)
    cases = probes.load_probes(probes.probes_path(scenario),
                               scenario).referee
    for key in args.structure:
      counts, misses = score(model, scenario, cases, STRUCTURES[key])
      line = f"{name} {key}: {counts.line()}; {counts.detail()}"
      print(line, flush=True)
      for miss in misses:
        print(f"   miss: {miss}")
      lines.append(line)
  print("summary")
  print("\n".join(lines))
  return 0


if __name__ == "__main__":
  sys.exit(main())

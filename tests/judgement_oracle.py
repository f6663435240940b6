"""A scripted oracle: every judgement prompt answered as the labels say.

What the structures around a judgement cost a model that is always right
can only be seen with such a model: run on it, the whole pipeline should
give every label back, and each case it does not is a right answer some
structure refused. The oracle recognises the judgement by its answer's
schema and a phrase of its prompt, and the case by the action's words in
the prompt, then answers as the venue's labels say (scenarios/
<name>.probes.yaml): the referee's general call (the true ids, a quote of
the action's own words, the place where the case gives one), the doer
check (the actor for a true id, else "nobody"), the second look (a true id
among the candidates, the same in either order), the occasion check,
DetectConflict (a breach with a quote, else unrelated); and, from
crsec_concordia/metrics/data/norm_labels.jsonl, the matcher's LLM judge.

With `noise`, each case's label is flipped at that rate, by a draw seeded
with `seed` and the case's own words (the same whatever order threads ask
in): a case showing behaviours is answered as showing none (all of them
missed), a case showing none as showing one of the venue's behaviours
drawn at random, a breach as none and a non-breach as a breach, a norm
that means a target as not meaning it and the reverse. Every prompt about
a flipped case answers the flipped label, so the structures meet a wrong
answer the way a consistent model would give it; the measured miss rate
and false-alarm rate then come out near `noise`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from crsec_concordia.calibration.probes import Probes
from crsec_concordia.models import ScriptedModel
from crsec_concordia.scenarios import Scenario

QUOTE_CHARS = 200  # The shortest evidence field of the judgements.
_ITEM = re.compile(r'^(?P<key>.+?) \((?P<place>[^()]*)\): "(?P<action>.*)"$',
                   re.M)
_RULE = re.compile(r"^Rule: (?P<norm>.*)$", re.M)
_DOER = re.compile(r"In this action, who (?P<description>.*)\? Answer with",
                   re.S)
_JUDGE = re.compile(r"^Target norm: (?P<target>.*)\nPerson's norm: "
                    r"(?P<norm>.*)$", re.M)


def quote(actor: str, action: str) -> str:
  """The action's own words without the actor's name, as a quote."""
  words = action.removeprefix(actor).strip(" ,") or action
  if len(words) <= QUOTE_CHARS:
    return words
  return words[:QUOTE_CHARS].rsplit(" ", 1)[0]


def flipped(seed: int, rate: float, *key: str) -> bool:
  """Whether the case named by `key` is answered against its label."""
  if rate <= 0:
    return False
  return random.Random("|".join((str(seed), *key))).random() < rate


class JudgementOracle:
  """The labels of one venue as a model's answers (`model`).

  `per_call`: the flips are drawn for each judgement of a case apart (the
  general call, each doer question, the look in each order, the occasion
  check, DetectConflict), so a case's answers can disagree with one
  another: what exercises every structure that checks one answer against
  another (tests/test_referee_policy.py)."""

  def __init__(self, scenario: Scenario, probes: Probes, *,
               noise: float = 0.0, seed: int = 0, per_call: bool = False):
    self._scenario = scenario
    self._noise = noise
    self._seed = seed
    self._per_call = per_call
    self._ids = list(scenario.behaviour_ids)
    self._by_description = {b.description: b.id
                            for b in scenario.behaviours}
    self.referee = {c.action: (c.actor, list(dict.fromkeys(c.behaviours)),
                               c.place) for c in probes.referee}
    occasion = probes.occasion
    self._choices = next((list(o.behaviours) for o in scenario.occasions
                          if occasion and o.id == occasion.id), [])
    self.occasion = {c.action: (c.actor, list(dict.fromkeys(c.behaviours)),
                                c.place)
                     for c in (occasion.answers if occasion else [])}
    self._breaks = {(c.action, c.norm): c.breaks for c in probes.conflicts}
    self.model = ScriptedModel(fallback=self.answer)

  def _key(self, section: str, action: str, judgement: str) -> tuple:
    return ((section, action, judgement) if self._per_call
            else (section, action))

  def labels(self, section: str, action: str, judgement: str) -> list[str]:
    """The case's ids as the oracle answers them in `judgement` (flipped
    at the rate): the labels in the file's order, the main one first."""
    cases = self.occasion if section == "occasion" else self.referee
    labels = cases[action][1]
    key = self._key(section, action, judgement)
    if not flipped(self._seed, self._noise, *key):
      return list(labels)
    if labels:
      return []
    choices = self._choices if section == "occasion" else self._ids
    draw = random.Random("|".join((str(self._seed), *key, "id")))
    return [draw.choice(list(choices))]

  def breaks(self, action: str, norm: str) -> bool:
    """Whether DetectConflict is answered with a breach."""
    return self._breaks[(action, norm)] != flipped(
        self._seed, self._noise, *self._key("conflicts", action, norm))

  def answer(self, prompt: str, schema: Mapping[str, Any] | None
             ) -> dict[str, Any]:
    """The labelled answer of whichever judgement `prompt` asks."""
    props = (schema or {}).get("properties", {})
    if "narration" in props:
      return self._general(prompt, props)
    if "who" in props:
      return self._doer(prompt)
    if "holds some rules about how people should behave" in prompt:
      return self._conflicts(prompt, props)
    if set(props) == {"behaviour", "evidence"}:
      if "Situation: " in prompt:
        return self._choose(prompt, props, "occasion", "check")
      # The look lists "none" first when it asks in reverse order.
      none = props["behaviour"]["enum"][-1]
      order = ("look reversed" if f"Behaviours:\n- {none}:" in prompt
               else "look")
      return self._choose(prompt, props, "referee", order)
    raise LookupError(f"the oracle knows no judgement asked so: "
                      f"{prompt[:200]!r}")

  @staticmethod
  def _case(prompt: str, cases: Mapping[str, Any]) -> tuple[str, Any]:
    """The case whose action the prompt quotes (the longest, if several)."""
    found = [a for a in cases if f'"{a}"' in prompt]
    if not found:
      raise LookupError(f"no labelled case in: {prompt[-200:]!r}")
    action = max(found, key=len)
    return action, cases[action]

  def _general(self, prompt: str, props: Mapping[str, Any]
               ) -> dict[str, Any]:
    action, (actor, _, place) = self._case(prompt, self.referee)
    labels = self.labels("referee", action, "general")
    none = props["behaviour"]["enum"][-1]
    chosen = [*labels, none, none][:2]
    return {"narration": action[:300],
            "place": place or self._scenario.default_place or "indoors",
            "behaviour": chosen[0], "also": chosen[1],
            "evidence": quote(actor, action) if labels else "none"}

  def _doer(self, prompt: str) -> dict[str, str]:
    action, (actor, _, _) = self._case(prompt, self.referee)
    described = self._by_description[_DOER.search(prompt)["description"]]
    labels = self.labels("referee", action, f"doer {described}")
    return {"who": actor if described in labels else "nobody"}

  def _choose(self, prompt: str, props: Mapping[str, Any], section: str,
              judgement: str) -> dict[str, str]:
    """The look and the occasion check: a true id among the choices (the
    main one first, whatever their order), else none."""
    cases = self.occasion if section == "occasion" else self.referee
    action, (actor, _, _) = self._case(prompt, cases)
    enum = props["behaviour"]["enum"]
    true = [i for i in self.labels(section, action, judgement) if i in enum]
    if not true:
      none = next(c for c in enum if c not in self._ids)
      return {"evidence": "none", "behaviour": none}
    return {"evidence": quote(actor, action), "behaviour": true[0]}

  def _conflicts(self, prompt: str, props: Mapping[str, Any]
                 ) -> dict[str, dict[str, str]]:
    items = list(_ITEM.finditer(prompt))
    norms = [m["norm"] for m in _RULE.finditer(prompt)]
    out = {}
    for key, item, norm in zip(props, items, norms):
      actor = item["key"].split(" (")[0]
      out[key] = ({"evidence": quote(actor, item["action"]),
                   "verdict": "breaks"}
                  if self.breaks(item["action"], norm) else
                  {"evidence": "none", "verdict": "unrelated"})
    return out


class NormJudgeOracle:
  """The matcher's LLM judge (metrics/classifiers/judge.py) answered as
  norm_labels.jsonl says, flipped at `noise` as the judgements are."""

  def __init__(self, items: Iterable[Any], targets: Mapping[str, str], *,
               noise: float = 0.0, seed: int = 0):
    """`items`: labelled norms (labels.LabelledNorm); `targets`: each
    target's text -> its id."""
    self._means = {}
    for item in items:
      for text, target in targets.items():
        truth = target in item.targets
        self._means[(item.text, text)] = truth != flipped(
            seed, noise, "norms", item.text, target)
    self.model = ScriptedModel(fallback=self.answer)

  def answer(self, prompt: str, schema: Mapping[str, Any] | None
             ) -> dict[str, str]:
    del schema
    asked = _JUDGE.search(prompt)
    means = self._means[(asked["norm"], asked["target"])]
    return {"answer": "yes" if means else "no"}

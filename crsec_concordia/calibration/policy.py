"""Which of the referee's structures apply, and choosing them by measured error.

Every structure around the referee's judgement (the gate that spares an
action far from every behaviour, the tag floor, the deed floor, the doer
check, the second look with its nearest rule and its question in reverse
order, the occasion check's similarity gate) was built against one small
model to filter its errors, and each can refuse a right answer: on a venue
written fresh, both misses of the second look were right answers refused by
its nearest rule. So which apply is a policy, measured per model rather
than assumed: `RefereePolicy.all_on()` is every structure (what the
embedded model was measured with), `trusting()` none that can refuse an
answer (what an uncalibrated model gets), and `choose` keeps a structure
only where the model's recorded answers on the labelled cases say it helps.
`evaluate` replays a venue's recorded answers
(metrics/classifiers/probe_run.py) under any policy with no model: every
structure's inputs are in the record.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# The figures are scores.py's; imported here for the policy's readers.
from crsec_concordia.calibration.scores import Counts, f1, precision, recall


# Switches added after policies were first written (config.json of runs,
# calibrations): absent from an older dict, they read as on, the referee
# those records were made with on the venues its policies were measured on.
LATER_SWITCHES = ("look_strict",)


@dataclasses.dataclass(frozen=True)
class RefereePolicy:
  """One switch per structure, named as the referee's code names them."""

  # tag_gate.nearest_behaviour: an action far from every behaviour is not
  # put to the referee (`referee_asked: false`).
  spare_far_actions: bool = True
  # tag_gate.MIN_TAG_SIMILARITY on each tag's cosine (`tag_floor`).
  tag_floor: bool = True
  # The same floor with the place words left out (`tag_deed_similarity`).
  deed_floor: bool = True
  # doer_check.py: "who does it?" must name the actor (`tag_doers`); the
  # second look's proposal too.
  doer_check: bool = True
  # second_look.py: where no tag counts, the nearest behaviours asked about
  # once more (`second_look`).
  second_look: bool = True
  # The look's proposal counts only if it is the embedder's nearest.
  look_nearest: bool = True
  # The nearest rule holds between the two sides of one deed too (a target
  # norm's complying and violating behaviours, which the embedder puts
  # close together); off, the other side of the nearest behaviour passes.
  look_sides: bool = True
  # The nearest rule refuses a near tie too: a proposal whose score is
  # within the embedder's `near_tie` of the nearest's (its record,
  # calibration/thresholds.py); off, such a proposal is as near.
  look_strict: bool = True
  # The look's question asked again in reverse order must agree.
  look_reverse: bool = True
  # occasion_check.MIN_OCCASION_SIMILARITY on the occasion check's proposal.
  occasion_gate: bool = True

  @classmethod
  def all_on(cls) -> RefereePolicy:
    """Every structure: the referee as the embedded model was measured."""
    return cls()

  @classmethod
  def trusting(cls) -> RefereePolicy:
    """No structure that can refuse an answer: the model's answers (checked
    only for their schema and their quote) are the tags."""
    return cls(**{name: False for name in cls.names()})

  @classmethod
  def names(cls) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))

  def structures(self) -> tuple[str, ...]:
    """The switches on, in their order."""
    return tuple(n for n in self.names() if getattr(self, n))

  def to_dict(self) -> dict[str, bool]:
    return dataclasses.asdict(self)

  @classmethod
  def from_dict(cls, data: Mapping[str, Any]) -> RefereePolicy:
    """A policy from `to_dict()`'s form; a ValueError naming each unknown,
    missing or non-boolean switch."""
    if not isinstance(data, Mapping):
      raise ValueError(f"a referee policy is a mapping of switches, not "
                       f"{type(data).__name__}")
    names = cls.names()
    # A policy written before a switch existed had that structure on.
    data = {**dict.fromkeys(LATER_SWITCHES, True), **data}
    problems = [f"unknown switch {k!r}" for k in data if k not in names]
    problems += [f"missing switch {n!r}" for n in names if n not in data]
    problems += [f"switch {k!r} is {v!r}, not true or false"
                 for k, v in data.items() if k in names
                 and not isinstance(v, bool)]
    if problems:
      raise ValueError("referee policy: " + "; ".join(problems)
                       + f" (switches: {', '.join(names)})")
    return cls(**{n: data[n] for n in names})


def _floors(calibration: Mapping[str, Any]) -> Mapping[str, float]:
  return calibration["floors"]


def floor_of(floors: Mapping[str, Any], name: str) -> float:
  """A recorded floor (None: an unmeasured embedder's open gate, kept as
  JSON holds no infinity)."""
  value = floors[name]
  return -math.inf if value is None else float(value)


def tie_of(floors: Mapping[str, Any], policy: RefereePolicy) -> float:
  """The near tie the nearest rule spares under `policy`: none when it is
  strict; the recorded `near_tie` otherwise (None: an unmeasured
  embedder's, which spares every gap; absent: a record made before the tie
  was kept, whose nearest rule was strict)."""
  if policy.look_strict:
    return 0.0
  tie = floors.get("near_tie", 0.0)
  return math.inf if tie is None else float(tie)


def look_tags(look: Mapping[str, Any] | None, policy: RefereePolicy,
              sides: Mapping[str, Sequence[str]] | None = None,
              tie: float = 0.0) -> list[str]:
  """The second look's tag under `policy` from its recorded answers: the
  proposal, if one of the candidates with a quote of the action's words,
  then each check the policy applies (second_look.py); `sides`: each
  behaviour's other side (second_look.other_sides); `tie`: the gap to the
  nearest's score the nearest rule spares (tie_of)."""
  if not look or look.get("failed"):
    return []
  proposed = look.get("behaviour")
  candidates = look["candidates"]
  if proposed not in candidates or not look["quoted"]:
    return []
  nearest = look["nearest"]
  if policy.look_nearest and proposed != nearest and (
      policy.look_sides or proposed not in (sides or {}).get(nearest, ())
  ) and not candidates[nearest] - candidates[proposed] < tie:
    return []
  if policy.look_reverse and look.get("reversed") != proposed:
    return []
  if policy.doer_check and look.get("by_actor") is not True:
    return []
  return [proposed]


def general_tags(case: Mapping[str, Any], policy: RefereePolicy,
                 floor: float) -> list[str]:
  """The general call's tags that count under `policy` (the gates, then the
  doer check), before any second look."""
  tags = list(case.get("given") or ())
  if policy.tag_floor:
    tags = [i for i in tags if case["scores"][i] >= floor]
  if policy.deed_floor:
    tags = [i for i in tags if case["deed_scores"][i] >= floor]
  if policy.doer_check:
    tags = [i for i in tags if (case.get("by_actor") or {}).get(i) is True]
  return tags


def referee_tags(case: Mapping[str, Any], policy: RefereePolicy,
                 floors: Mapping[str, float],
                 sides: Mapping[str, Sequence[str]] | None = None
                 ) -> tuple[list[str], list[str]]:
  """(the tags the referee ends with under `policy`, the second look's
  among them) from one case's recorded answers, as pipeline.Referee
  decides: a failed call tags nothing; a spared action is not asked; the
  look is taken only where no tag of the general call counts."""
  if case.get("failed") or (policy.spare_far_actions and case["spared"]):
    return [], []
  tags = general_tags(case, policy, floor_of(floors, "tag"))
  if tags or not policy.second_look:
    return tags, []
  looked = look_tags(case.get("look"), policy, sides, tie_of(floors, policy))
  return looked, looked


def occasion_tags(case: Mapping[str, Any], policy: RefereePolicy,
                  floors: Mapping[str, float]) -> list[str]:
  """The occasion check's behaviour under `policy` (occasion_check.py)."""
  check = case.get("check") or {}
  proposed = check.get("behaviour")
  if case.get("failed") or proposed not in case["choices"]:
    return []
  if policy.occasion_gate and check["similarity"] < floor_of(floors,
                                                             "occasion"):
    return []
  return [proposed]


def tag_counts(pairs: Iterable[tuple[Sequence[str], Sequence[str]]]
               ) -> Counts:
  """(TP, FP, FN) over (truth, tags) pairs, counted over tags."""
  tp = fp = fn = 0
  for truth, tags in pairs:
    truth, tags = set(truth), set(tags)
    tp += len(truth & tags)
    fp += len(tags - truth)
    fn += len(truth - tags)
  return tp, fp, fn


def _referee_pairs(calibration: Mapping[str, Any], policy: RefereePolicy):
  floors, sides = _floors(calibration), calibration.get("sides")
  return [(c["truth"], referee_tags(c, policy, floors, sides)[0])
          for c in calibration.get("referee") or ()]


def _occasion_pairs(calibration: Mapping[str, Any], policy: RefereePolicy):
  floors = _floors(calibration)
  return [(c["truth"], occasion_tags(c, policy, floors))
          for c in calibration.get("occasion") or ()]


def conflict_counts(cases: Iterable[Mapping[str, Any]]) -> Counts:
  """(hits, false alarms, breaches missed) of DetectConflict; a failed
  call says nothing, so a breach it failed on is missed."""
  tp = fp = fn = 0
  for c in cases:
    said = c.get("said") is True
    tp += said and c["breaks"]
    fp += said and not c["breaks"]
    fn += c["breaks"] and not said
  return tp, fp, fn


def evaluate(calibration: Mapping[str, Any], policy: RefereePolicy
             ) -> dict[str, tuple[float, float, int]]:
  """{judgement: (P, R, n)} of one venue's recorded answers under `policy`,
  asking no model: the referee over its tags, the occasion check over its
  behaviour, DetectConflict over breaches (which no policy changes)."""
  out = {}
  for name, pairs in (("referee", _referee_pairs(calibration, policy)),
                      ("occasion", _occasion_pairs(calibration, policy))):
    counts = tag_counts(pairs)
    out[name] = (precision(counts), recall(counts), len(pairs))
  conflicts = calibration.get("conflicts") or []
  counts = conflict_counts(conflicts)
  out["conflicts"] = (precision(counts), recall(counts), len(conflicts))
  return out


def policies() -> list[RefereePolicy]:
  """Every combination of the switches, fewest structures first, then
  those whose structures come earlier in the referee's pipeline."""
  names = RefereePolicy.names()
  every = [RefereePolicy(**dict(zip(names, values)))
           for values in itertools.product((False, True), repeat=len(names))]
  return sorted(every, key=lambda p: (len(p.structures()), [
      names.index(n) for n in p.structures()]))


def pooled(calibrations: Sequence[Mapping[str, Any]],
           policy: RefereePolicy) -> Counts:
  """The referee's tag counts over every venue's cases, its general cases
  and its occasion's answers alike (both are the tags a run records)."""
  pairs = []
  for calibration in calibrations:
    pairs += _referee_pairs(calibration, policy)
    pairs += _occasion_pairs(calibration, policy)
  return tag_counts(pairs)


def choose(calibrations: Sequence[Mapping[str, Any]]) -> RefereePolicy:
  """The policy with the best F1 of the referee's tags over the venues'
  recorded answers; among equals, the one with the fewest structures (then
  the first in `policies()`' order): a structure is applied only where the
  model's measured error says it helps. No venue measured: trusting()."""
  if not calibrations:
    return RefereePolicy.trusting()
  best, score = None, -1.0
  for policy in policies():
    value = f1(pooled(calibrations, policy))
    if value > score + 1e-12:
      best, score = policy, value
  return best

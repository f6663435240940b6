"""The referee's precision and recall over labelled cases (judgement_probe.py),
and what each structure refused.

Counted over behaviour tags, micro-averaged over the cases: a tag both in
the referee's answer and in the label is a true positive, one only in the
answer a false positive, one only in the label a false negative. A case
labelled with no behaviour adds only its false tags; an answer that failed
(no record) adds its labelled tags as false negatives. Test data counting
only: nothing here reaches a prompt.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from crsec_concordia.calibration import policy as policy_lib
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.calibration import scores

# The acceptance of issue 21 for the embedded model, per venue.
TARGET_PRECISION = 0.9
TARGET_RECALL = 0.8


@dataclasses.dataclass
class TagCounts:
  """Tag counts of one venue's referee cases."""
  tp: int = 0
  fp: int = 0
  fn: int = 0
  cases: int = 0
  none_cases: int = 0  # Cases labelled with no behaviour.
  exact: int = 0  # Cases whose answer is exactly the label.

  def add(self, want: Iterable[str], got: Iterable[str]) -> bool:
    """Counts one case; whether the answer is exactly the label."""
    want, got = set(want), set(got)
    self.tp += len(want & got)
    self.fp += len(got - want)
    self.fn += len(want - got)
    self.cases += 1
    self.none_cases += not want
    self.exact += want == got
    return want == got

  @property
  def precision(self) -> float:
    """1.0 when the referee tagged nothing (no false tag)."""
    return scores.precision((self.tp, self.fp, self.fn))

  @property
  def recall(self) -> float:
    """1.0 when no case is labelled with a behaviour."""
    return scores.recall((self.tp, self.fp, self.fn))

  def meets_target(self) -> bool:
    return (self.precision >= TARGET_PRECISION
            and self.recall >= TARGET_RECALL)

  def line(self) -> str:
    return (f"referee P {self.precision:.2f} R {self.recall:.2f} "
            f"(n={self.cases}, {self.none_cases} none)")

  def detail(self) -> str:
    return (f"TP {self.tp} FP {self.fp} FN {self.fn}; "
            f"{self.exact}/{self.cases} cases exactly right")


def summary_line(venue: str, tags: TagCounts | None,
                 places: tuple[int, int] | None,
                 conflicts: tuple[int, int] | None,
                 occasion: tuple[str, int, int] | None = None) -> str:
  """One venue's figures in one line, e.g.
  `hobbs_cafe: referee P 0.93 R 0.85 (n=44, 22 none); places 10/12;
  DetectConflict 9/10`."""
  parts = []
  if tags is not None:
    parts.append(tags.line())
  if places is not None:
    parts.append(f"places {places[0]}/{places[1]}")
  if conflicts is not None:
    parts.append(f"DetectConflict {conflicts[0]}/{conflicts[1]}")
  if occasion is not None:
    parts.append(f"{occasion[0]} check {occasion[1]}/{occasion[2]}")
  return f"{venue}: " + "; ".join(parts)


def policy_name(policy: RefereePolicy) -> str:
  """"all_on", "trusting", or the structures on."""
  if policy == RefereePolicy.all_on():
    return "all_on"
  if policy == RefereePolicy.trusting():
    return "trusting"
  return "+".join(policy.structures())


def referee_counts(calibration: dict, policy: RefereePolicy) -> TagCounts:
  """The referee's tag counts over a venue's recorded answers under
  `policy` (a failed answer adds its labelled tags as misses)."""
  counts = TagCounts()
  for case in calibration["referee"]:
    tags, _ = policy_lib.referee_tags(case, policy, calibration["floors"],
                                      calibration["sides"])
    counts.add(case["truth"], tags)
  return counts


def why_refused(case: dict, policy: RefereePolicy, floors: dict,
                sides: dict) -> str | None:
  """Why a referee case whose model answer was right (the general call's
  tags, or the second look's proposal, are the label) ends with other
  tags under `policy`: the structure that refused it; None if it did not."""
  truth = case["truth"]
  tags, _ = policy_lib.referee_tags(case, policy, floors, sides)
  if case.get("failed") or sorted(tags) == truth:
    return None
  look = case.get("look") or {}
  if case["given"] != truth and [look.get("behaviour")] != truth:
    return None  # No right answer to refuse.
  if policy.spare_far_actions and case["spared"]:
    best = max(case["near"].items(), key=lambda kv: kv[1], default=("", 0))
    return (f"the gate spared the call (nearest {best[0]} {best[1]}, floor "
            f"{floors.get('spare_far', floors['tag'])})")
  if case["given"] == truth:
    for i in truth:
      floor = policy_lib.floor_of(floors, "tag")
      if policy.tag_floor and case["scores"][i] < floor:
        return f"tag floor: {i} at {case['scores'][i]}"
      if policy.deed_floor and case["deed_scores"][i] < floor:
        return f"deed floor: {i} at {case['deed_scores'][i]} without place"
      if policy.doer_check and case["by_actor"].get(i) is not True:
        return f"doer check: {i} done by {case['doers'].get(i)!r}"
    return "the second look added a tag"
  if not policy.second_look:
    return "no second look"
  proposed, near = look["behaviour"], look["candidates"]
  tie = policy_lib.tie_of(floors, policy)
  if policy.look_nearest and proposed != look["nearest"] and (
      policy.look_sides or proposed not in sides.get(look["nearest"], ())
  ) and not near[look["nearest"]] - near[proposed] < tie:
    return (f"the look's nearest rule: {proposed} at "
            f"{near[proposed]}, {look['nearest']} nearer at "
            f"{near[look['nearest']]} (tie {tie})")
  if policy.look_reverse and look.get("reversed") != proposed:
    return f"the look in reverse order said {look.get('reversed')}"
  return f"the look's doer check: {look.get('doer')!r}"


def occasion_refused(case: dict, policy: RefereePolicy, floors: dict
                     ) -> str | None:
  """Why a right occasion check ends otherwise under `policy`, or None."""
  check = case["check"]
  right = ([check["behaviour"]] if check["behaviour"] in case["choices"]
           else []) == case["truth"]
  if case["failed"] or not right or policy_lib.occasion_tags(
      case, policy, floors) == case["truth"]:
    return None
  return (f"occasion gate: {check['behaviour']} at {check['similarity']} "
          f"< {floors['occasion']}")


def refused_lines(calibration: dict, policy: RefereePolicy) -> list[str]:
  """Every case whose right answer a structure of `policy` refused."""
  floors = calibration["floors"]
  lines = []
  for case in calibration["referee"]:
    why = why_refused(case, policy, floors, calibration["sides"])
    if why:
      lines.append(f"   refused ({why}): want {case['truth']} | "
                   f"{case['action']}")
  for case in calibration["occasion"]:
    why = occasion_refused(case, policy, floors)
    if why:
      lines.append(f"   refused ({why}): want {case['truth']} | "
                   f"{case['action']}")
  return lines


def conflict_line(summary: dict) -> str:
  """DetectConflict's hits and false alarms, intentions apart."""
  c = summary["conflicts"]
  return (f"DetectConflict: breaches found {c['hits']}/{c['breaches']}, "
          f"false alarms {c['false_alarms']}/{c['non_breaches']}, on "
          f"intentions {c['intention_false_alarms']}/{c['intentions']}"
          + (f", {c['failed']} failed" if c.get("failed") else ""))

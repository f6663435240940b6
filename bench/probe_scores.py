"""The referee's precision and recall over labelled cases (judgement_probe.py).

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

from crsec_concordia.metrics.classifiers import calibration

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
    return calibration.precision(self.tp, self.fp)

  @property
  def recall(self) -> float:
    """1.0 when no case is labelled with a behaviour."""
    return calibration.recall(self.tp, self.fn)

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

"""The default policy for a venue nobody labelled, chosen by leave-one-venue-out.

A structure around the referee was built to filter one model's errors on
the venues it was written against, and can refuse a right answer on a
venue written later. So whether it is on where no labelled case says
anything is measured the way a new venue meets it: each shipped venue in
turn is held out, the policy is chosen (policy.choose's criterion: the
best F1 of the referee's tags) on the others' recorded answers, once among
the policies with the structure and once among those without it, and both
choices are scored on the venue held out. A structure is on by default
only if the F1 summed over the held-out folds is higher with it than
without it. Versions of one venue (the same setting: the café and the
mini café) are one fold, or the fold held out would still be seen. A
structure the answers cannot tell apart (the same tags with and without
it in every fold, as when they hold no second-look record to vary) has not
shown that it helps, so it is off by that same rule, and the table says
why. Sparing far actions refuses no answer (it asks no question of an
action far from every behaviour, and the calls it saves are its purpose),
so where the answers cannot tell it apart it stays on. A venue with
labelled cases of its own keeps its measured choice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia.calibration import policy as policy_lib
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.calibration.scores import Counts, f1

# A fold: its name and the recorded answers of its venues (each a probe
# run's calibration: metrics/classifiers/probe_run.py).
Folds = Mapping[str, Sequence[Mapping[str, Any]]]
ON, OFF, UNDECIDED = "on", "off", "not told apart: off"
KEPT = "not told apart: on (refuses no answer)"
# The switch that refuses no answer, only asks fewer questions.
ASKS_LESS = "spare_far_actions"


@dataclasses.dataclass(frozen=True)
class Row:
  """One structure's held-out F1 per fold, with it and without it."""
  structure: str
  with_it: dict[str, float]
  without: dict[str, float]
  told_apart: bool

  @property
  def verdict(self) -> str:
    if not self.told_apart:
      return KEPT if self.structure == ASKS_LESS else UNDECIDED
    return ON if sum(self.with_it.values()) > sum(
        self.without.values()) + 1e-12 else OFF

  @property
  def on(self) -> bool:
    return self.verdict in (ON, KEPT)


def folds_of(venues: Sequence[tuple[str, Mapping[str, Any]]]
             ) -> dict[str, list[Mapping[str, Any]]]:
  """(setting, calibration) pairs grouped into folds: one per setting,
  named by its first venue's name."""
  named: dict[str, str] = {}
  folds: dict[str, list[Mapping[str, Any]]] = {}
  for setting, calibration in venues:
    name = named.setdefault(setting, calibration["venue"])
    folds.setdefault(name, []).append(calibration)
  return folds


def _add(a: Counts, b: Counts) -> Counts:
  return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _best(candidates: Sequence[int], counts: Sequence[Counts]) -> int:
  """The index (into `candidates`' policies) with the best F1, the first
  among equals (policies()' order: fewest structures first)."""
  best, score = candidates[0], -1.0
  for i in candidates:
    value = f1(counts[i])
    if value > score + 1e-12:
      best, score = i, value
  return best


def held_out_table(folds: Folds) -> list[Row]:
  """Each switch's held-out F1 per fold with it and without it."""
  every = policy_lib.policies()
  counts = {name: [policy_lib.pooled(cals, p) for p in every]
            for name, cals in folds.items()}
  index = {p: i for i, p in enumerate(every)}
  seen = {held: _seen(counts, held) for held in folds}
  rows = []
  for structure in RefereePolicy.names():
    has = [i for i, p in enumerate(every) if getattr(p, structure)]
    lacks = [i for i, p in enumerate(every) if not getattr(p, structure)]
    with_it, without = {}, {}
    for held in folds:
      with_it[held] = f1(counts[held][_best(has, seen[held])])
      without[held] = f1(counts[held][_best(lacks, seen[held])])
    told = any(
        counts[name][i] != counts[name][index[dataclasses.replace(
            every[i], **{structure: False})]]
        for name in folds for i in has)
    rows.append(Row(structure, with_it, without, told))
  return rows


def _seen(counts: Mapping[str, Sequence[Counts]], held: str) -> list[Counts]:
  """Each policy's counts pooled over every fold but `held`."""
  others = [c for name, c in counts.items() if name != held]
  pooled = []
  for i in range(len(next(iter(counts.values())))):
    total: Counts = (0, 0, 0)
    for fold in others:
      total = _add(total, fold[i])
    pooled.append(total)
  return pooled


def default_policy(rows: Sequence[Row]) -> RefereePolicy:
  """The policy the table gives: each structure on or off by its row."""
  return RefereePolicy(**{row.structure: row.on for row in rows})

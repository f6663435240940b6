"""A model's labelled cases asked one at a time and batched, compared.

Whether a run may ask a place's slot's questions together (the referee's,
game_masters/referee/batch.py; DetectConflict's,
operations/detect_conflict_batch.py) is a measured fact of the model:
`crsec calibrate --batch-sizes` and bench/judgement_probe.py
`--batch-sizes` ask each venue's labelled referee and conflict cases as a
run asks one alone (the probe runner's venue, probe_run.py) and in
batches of each size as a run makes them (cases at the same place, in
file order, cut into batches of the size given and further by the
request budget), score them (calibration/batch_compare.py,
calibration/conflict_batch_compare.py) and keep the rules' verdicts
where `auto` reads them (calibration/batching.py). Batches and cases are
asked `jobs` at a time; each answer lands in its case's place, whatever
the threads.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from crsec_concordia.calibration import batching
from crsec_concordia.calibration import batch_compare as tags_lib
from crsec_concordia.calibration import conflict_batch_compare as verdicts_lib
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.calibration.paired import BatchRule, batches_of, joined
from crsec_concordia.calibration.probes import Case, ConflictCase, Probes
from crsec_concordia.calibration.run_policy import RefereeSettings
from crsec_concordia.game_masters.referee.batch import PlaceAction
from crsec_concordia.judgement_prompts import (batch_prompts_hash,
                                               conflict_batch_prompts_hash)
from crsec_concordia.metrics.classifiers import probe_run
from crsec_concordia.models.base import EndpointError
from crsec_concordia.models.request_budget import in_batches
from crsec_concordia.operations import detect_conflict_batch as conflict_lib
from crsec_concordia.scenarios import Scenario

# (section, cases done, cases in the section), as probe_run's.
Progress = probe_run.Progress
Say = Callable[[str], None]
_T = TypeVar("_T")
# Each operation measured: its rule and the hash of its batch prompts.
RULES: dict[str, tuple[BatchRule, Callable[[], str]]] = {
    batching.REFEREE: (tags_lib.REFEREE_RULE, batch_prompts_hash),
    batching.CONFLICTS: (verdicts_lib.CONFLICT_RULE,
                         conflict_batch_prompts_hash)}


@dataclasses.dataclass
class VenueResult:
  """One venue's comparison of one operation: its summary lines, and each
  mode's per-case rows (`pooled` joins venues' rows to score them as one)."""
  lines: list[str]
  rows: dict[str, np.ndarray]


def _asked(jobs: int, work: Callable[[list[int]], _T],
           groups: Sequence[list[int]], section: str,
           progress: Progress | None) -> list[_T]:
  """`work` on each group of case numbers, `jobs` at a time, in the
  groups' order; `progress` counts the cases."""
  total, done, lock = sum(map(len, groups)), [0], threading.Lock()

  def one(group: list[int]) -> _T:
    result = work(group)
    if progress is not None:
      with lock:
        done[0] += len(group)
        progress(section, done[0], total)
    return result
  with ThreadPoolExecutor(max(1, jobs)) as pool:
    return list(pool.map(one, groups))


def _place_of(venue, case: Case) -> str:
  if not venue.places.declared:
    return ""
  scenario = venue.scenario
  return case.at or scenario.home_of(case.actor) or scenario.start_place


def _chunks(places: Sequence[str], size: int) -> list[list[int]]:
  """Case numbers by place, in file order, cut into batches of `size`."""
  by_place: dict[str, list[int]] = {}
  for n, place in enumerate(places):
    by_place.setdefault(place, []).append(n)
  return [numbers[start:start + size] for numbers in by_place.values()
          for start in range(0, len(numbers), size)]


def tags_per_action(venue, cases: Sequence[Case], jobs: int = 1,
                    progress: Progress | None = None, section: str = ""
                    ) -> list[list[str]]:
  """Each case's tags, asked alone as a run asks it."""
  return _asked(jobs, lambda ns: sorted(venue.referee_at(cases[ns[0]])
                                        .adjudicate(cases[ns[0]].actor,
                                                    cases[ns[0]].action)[0][
                                                        "behaviours"]),
                [[n] for n in range(len(cases))], section, progress)


def tags_batched(venue, cases: Sequence[Case], size: int, jobs: int = 1,
                 progress: Progress | None = None, section: str = ""
                 ) -> list[list[str]]:
  """Each case's tags, asked in batches of `size` cases at one place (the
  referee's budget may cut a batch further, as a run's does)."""
  chunks = _chunks([_place_of(venue, c) for c in cases], size)

  def judge(chunk: list[int]):
    referee = venue.referee_at(cases[chunk[0]])
    return referee.adjudicate_place(
        [PlaceAction(cases[n].actor, cases[n].action) for n in chunk])
  tags: list[list[str]] = [[] for _ in cases]
  for chunk, results in zip(chunks, _asked(jobs, judge, chunks, section,
                                           progress)):
    for n, (fields, _) in zip(chunk, results):
      tags[n] = sorted(fields["behaviours"])
  return tags


def verdicts_one_at_a_time(venue, cases: Sequence[ConflictCase],
                           jobs: int = 1, progress: Progress | None = None,
                           section: str = "") -> list[bool | None]:
  """Each case asked alone, as the probe runner asks it."""
  return _asked(jobs, lambda ns: probe_run._conflict_case(  # noqa: SLF001
      venue, cases[ns[0]])["said"], [[n] for n in range(len(cases))],
                section, progress)


def verdicts_batched(venue, cases: Sequence[ConflictCase], size: int,
                     jobs: int = 1, progress: Progress | None = None,
                     section: str = "",
                     budget: int = conflict_lib.CONTEXT_TOKENS
                     ) -> list[bool | None]:
  """Each case asked in batches of `size` cases seen at one place, cut
  further by the request budget as a run cuts them."""
  items = [probe_run.conflict_item(venue, c) for c in cases]
  chunks = [part for chunk in _chunks([i.place for i in items], size)
            for part in in_batches(
                chunk, lambda ns: conflict_lib.tokens([items[n] for n in ns]),
                budget)]

  def ask(chunk: list[int]):
    try:
      return conflict_lib.detect_conflicts_batched(
          venue.model, [items[n] for n in chunk], None)
    except EndpointError:
      return [None] * len(chunk)
  said: list[bool | None] = [None] * len(cases)
  for chunk, judged in zip(chunks, _asked(jobs, ask, chunks, section,
                                          progress)):
    for n, judgement in zip(chunk, judged):
      said[n] = None if judgement is None else judgement.breaks
  return said


def referee_both_ways(venue, cases: Sequence[Case], sizes: Sequence[int],
                    say: Say, jobs: int = 1,
                    progress: Progress | None = None) -> VenueResult:
  """The venue's referee cases per action and in batches of each size:
  each mode's line and every case whose tags differ, said; the rows."""
  name = venue.scenario.name
  truth = [sorted(c.behaviours) for c in cases]
  modes = [tags_lib.ModeTags(tags_lib.PER_ACTION, tags_per_action(
      venue, cases, jobs, progress, f"{name} referee per action"))]
  modes += [tags_lib.ModeTags(batches_of(k), tags_batched(
      venue, cases, k, jobs, progress, f"{name} referee {batches_of(k)}"))
            for k in sizes]
  lines = tags_lib.tag_lines(name, tags_lib.compare_tags(
      truth, modes[0], modes[1:]), len(cases))
  for line in lines:
    say(line)
  for mode in modes[1:]:
    for line in tags_lib.differing_tags(cases, modes[0], mode):
      say(line)
  return VenueResult(lines, {m.name: tags_lib.case_tag_counts(truth, m.tags)
                             for m in modes})


def conflicts_both_ways(venue, cases: Sequence[ConflictCase],
                      sizes: Sequence[int], say: Say, jobs: int = 1,
                      progress: Progress | None = None) -> VenueResult:
  """The venue's conflict cases one at a time and in batches of each size:
  each mode's line and every case whose verdict differs, said; the rows."""
  name = venue.scenario.name
  modes = [verdicts_lib.ModeVerdicts(
      verdicts_lib.ONE_AT_A_TIME, verdicts_one_at_a_time(
          venue, cases, jobs, progress, f"{name} conflicts one at a time"))]
  modes += [verdicts_lib.ModeVerdicts(batches_of(k), verdicts_batched(
      venue, cases, k, jobs, progress,
      f"{name} conflicts {batches_of(k)}")) for k in sizes]
  rows = {m.name: verdicts_lib.outcomes(cases, m.said) for m in modes}
  lines = verdicts_lib.verdict_lines(name, rows)
  for line in lines:
    say(line)
  for mode in modes[1:]:
    for line in verdicts_lib.differing_verdicts(cases, modes[0], mode):
      say(line)
  return VenueResult(lines, rows)


def batched_case_count(venues: Sequence[tuple[Scenario, Probes]],
               sizes: Sequence[int]) -> int:
  """The cases `measure_batched` asks: each referee and conflict case
  once one at a time and once per size."""
  return (1 + len(sizes)) * sum(len(p.referee) + len(p.conflicts)
                                for _, p in venues)


def measure_batched(model, embedder,
                    venues: Sequence[tuple[Scenario, Probes]],
                    sizes: Sequence[int],
                    settings_of: Callable[[Scenario], RefereeSettings],
                    say: Say, jobs: int = 1,
                    progress: Progress | None = None
                    ) -> dict[str, list[tuple[str, VenueResult]]]:
  """Each venue's referee and conflict cases compared (under the settings
  a run of it applies, `settings_of`): {op: [(venue, result)]}."""
  found: dict[str, list[tuple[str, VenueResult]]] = {op: [] for op in RULES}
  for scenario, cases in venues:
    venue = probe_run._Venue(model, embedder, scenario,  # noqa: SLF001
                             settings_of(scenario))
    if cases.referee:
      found[batching.REFEREE].append((scenario.name, referee_both_ways(
          venue, list(cases.referee), sizes, say, jobs, progress)))
    if cases.conflicts:
      found[batching.CONFLICTS].append((scenario.name, conflicts_both_ways(
          venue, list(cases.conflicts), sizes, say, jobs, progress)))
  return found


def pooled_lines(op: str, found: Sequence[tuple[str, VenueResult]]
                 ) -> list[str]:
  """Every venue's cases of `op` scored as one, a line per mode."""
  if not found:
    return []
  rows = joined([result.rows for _, result in found])
  if op == batching.CONFLICTS:
    return verdicts_lib.verdict_lines("all venues", rows)
  return tags_lib.tag_lines("all venues", tags_lib.REFEREE_RULE.compare(
      rows), len(rows[tags_lib.PER_ACTION]))


def _venue_word(keeps: bool | None) -> str:
  return {True: "keeps batched", False: "lost",
          None: "cannot tell (nothing found one at a time)"}[keeps]


def verdicts(op: str, found: Sequence[tuple[str, VenueResult]],
             sizes: Sequence[int]
             ) -> tuple[dict[str, dict[str, Any]], dict[str, Any], str]:
  """The rules' verdicts on one operation's venues ([(venue, result)]):
  each venue's figures, the pooled figures, and the line that says
  them."""
  rule = RULES[op][0]
  venues = {name: rule.venue_figures(result.rows, sizes)
            for name, result in found}
  pooled = rule.pooled([result.rows for _, result in found], sizes)
  line = (f"{op}, pooled over {pooled['n']} cases at the largest size: "
          + ("passes" if pooled["passes"] else "fails") + " the rule; "
          + "; ".join(f"{name} {_venue_word(v['keeps'])}"
                      for name, v in venues.items()))
  return venues, pooled, line


def record_verdicts(path: Path | None, identity: ModelIdentity,
                    found: Mapping[str, Sequence[tuple[str, VenueResult]]],
                    sizes: Sequence[int], say: Say) -> None:
  """Each measured operation's verdicts said, and with `path` kept there
  for `auto` (batching.record, under the operation's batch prompts)."""
  for op, (_, prompts) in RULES.items():
    if not found.get(op):
      continue
    venues, pooled, line = verdicts(op, found[op], sizes)
    say(line)
    if path is not None:
      kept = batching.record(path, identity, prompts(), venues, pooled, op)
      say(f"recorded: {kept}")

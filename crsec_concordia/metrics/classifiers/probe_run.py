"""The probe runner: a model's answers on a venue's labelled cases, recorded whole.

Each labelled case (calibration/probes.py) goes through the calls a run
makes, built by the run's own code (game_masters/referee/, DetectConflict):
the general
call with its quote check and retry, the doer check, the second look in
both orders, the occasion's focused check and DetectConflict against one
norm. Unlike a run, every call is made whatever the structures around it
would decide, and everything they read is kept: the embedder's scores, the
nearest behaviours, each doer answer, the look's proposals, the occasion
check's similarity, whether the gate would have spared the call. So a
venue's precision and recall under any combination of structures is
computed afterwards with no model (policy.evaluate), and a structure is
kept only where a model's measured error says it helps (policy.choose).
A call that failed is recorded as failed, never as an answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from crsec_concordia import embedding
from crsec_concordia.calibration import policy as policy_lib
from crsec_concordia.calibration import run_policy
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.calibration.run_policy import RefereeSettings
from crsec_concordia.calibration.probes import Case, ConflictCase, Probes
from crsec_concordia.embedding import SentenceEmbedder
from crsec_concordia.game_masters.action_text import tells_of_actor
from crsec_concordia.game_masters.places import PlaceMap
from crsec_concordia.game_masters.referee import (
    ADJUDICATE_TAG, Referee, doer_check, general_call, second_look,
    similarity_of, tag_gate)
from crsec_concordia.models.base import EndpointError, StructuredOutputError
from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations import detect_conflict_relevance as relevance
from crsec_concordia.operations.detect_conflict import (Observed,
                                                        detect_conflicts)
from crsec_concordia.scenarios import Occasion, Scenario

JOBS = 4  # Cases asked at once: the embedded server's slots, as in a run.
CALL_ERRORS = (StructuredOutputError, EndpointError)
# (section, cases done, cases in the section) as each case is recorded.
Progress = Callable[[str, int, int], None]
T = TypeVar("T")


class _Venue:
  """One venue's referee and what its calls share; safe across threads
  (the Referee keeps nothing between actions)."""

  def __init__(self, model, embedder: SentenceEmbedder, scenario: Scenario,
               settings: RefereeSettings):
    self.scenario = scenario
    self.settings = settings
    # A cache in front (unless it has one): cases share their texts.
    embedder = embedding.cached(embedder)
    self.similarity = similarity_of(embedder)
    self.embedder = embedder
    tagged = getattr(model, "tagged", None)
    self.model = model
    self.places = PlaceMap.of(scenario)
    self.referee = self.referee_at(None)
    self.sides = second_look.other_sides(scenario.target_norms)
    self.doer_model = tagged(doer_check.TAG) if tagged else model
    self.look_model = tagged(second_look.TAG) if tagged else model
    self.descriptions = {b.id: b.description for b in scenario.behaviours}
    self.ids = list(self.descriptions)

  def referee_at(self, case: Case | None) -> Referee:
    """The referee a run builds for the venue (game_masters/prefab.py):
    on a venue that declares places, its places are the place field's
    choices, and the case's actor is told to be where the case puts it
    (`at`; by default its home), with the places a run's prompt lists for
    someone there."""
    tagged = getattr(self.model, "tagged", None)
    model = tagged(ADJUDICATE_TAG) if tagged else self.model
    scenario, places = self.scenario, self.places
    same = dict(similarity=self.similarity, policy=self.settings.policy,
                floors=self.settings.floors,
                target_norms=scenario.target_norms)
    if not places.declared:
      return Referee(model, place=scenario.setting,
                     default_place=scenario.default_place,
                     behaviours=scenario.behaviours, **same)
    here = ((case.at if case is not None else None)
            or (scenario.home_of(case.actor) if case is not None
                else scenario.start_place))
    also = [p for p in (scenario.default_place,) if p]
    return Referee(
        model, place=scenario.setting, default_place=scenario.default_place,
        behaviours=scenario.behaviours, **same,
        places=places.prompt_places(), where=lambda actor: here,
        listed=lambda actor, action: places.near(
            here, [*places.named_in(action, here), *also]))


def _map(jobs: int, work: Callable[[Any], T], cases: Sequence[Any],
         section: str, progress: Progress | None) -> list[T]:
  """`work` on each case, `jobs` at a time, in the cases' order."""
  done, lock = [0], threading.Lock()

  def one(case):
    result = work(case)
    if progress is not None:
      with lock:
        done[0] += 1
        progress(section, done[0], len(cases))
    return result
  with ThreadPoolExecutor(max(1, jobs)) as pool:
    return list(pool.map(one, cases))


def _referee_case(venue: _Venue, case: Case) -> dict[str, Any]:
  """The general call, its gates' inputs, the doer check of every tag and
  the second look, all asked."""
  actor, action = case.actor, case.action
  words = venue.referee.place_words
  near = tag_gate.near_scores(action, venue.descriptions, venue.similarity,
                              words)
  record: dict[str, Any] = {
      "actor": actor, "action": action, "truth": sorted(set(case.behaviours)),
      "truth_place": case.place, "near": near,
      "spared": tells_of_actor(actor, action) and (
          not near or max(near.values()) < venue.settings.floors.spare_far),
      "given": [], "scores": {}, "deed_scores": {}, "doers": {},
      "by_actor": {}}
  try:
    answer, retry = venue.referee_at(case).ask_general(actor, action)
  except CALL_ERRORS as e:
    record.update(failed=True, error=str(e), look=None)
    return record
  named = general_call.behaviours_of(answer, venue.ids)
  supported = general_call.supported(answer, venue.ids, actor, action)
  given = named if supported else []
  record.update(
      failed=False, answer=dict(answer), place=answer["place"], named=named,
      supported=supported, given=given,
      scores=tag_gate.tag_similarities(action, given, venue.descriptions,
                                       venue.similarity),
      deed_scores=tag_gate.deed_similarities(
          action, given, venue.descriptions, venue.similarity, words))
  if retry is not None:
    record["retry_failed"] = retry["error"]
  _ask_doers(venue, record, given)
  record["look"] = _look(venue, record)
  return record


def _ask_doers(venue: _Venue, record: dict[str, Any], ids: Sequence[str]
               ) -> None:
  """The doer check of `ids` not yet asked, into the record (`doers`,
  `by_actor`; a failed call leaves its id out, as a run does)."""
  todo = [i for i in ids if i not in record["doers"]]
  if not todo:
    return
  doers, failure = doer_check.check_doers(
      venue.doer_model, record["actor"], record["action"], todo,
      venue.descriptions)
  record["doers"].update(doers)
  record["by_actor"].update({i: doer_check.names_actor(who, record["actor"])
                             for i, who in doers.items()})
  if failure is not None:
    record["doer_failed"] = "; ".join(
        filter(None, (record.get("doer_failed"), failure["error"])))


def _look(venue: _Venue, record: dict[str, Any]) -> dict[str, Any] | None:
  """The second look, asked whatever the general call said: the proposal,
  its quote, the answer in reverse order and the doer check of it."""
  actor, action = record["actor"], record["action"]
  near = second_look.candidates(action, venue.descriptions, venue.similarity,
                                venue.referee.place_words,
                                venue.settings.floors)
  if not near:
    return None
  listed = [{"id": i, "description": venue.descriptions[i]} for i, _ in near]
  look: dict[str, Any] = {"candidates": dict(near), "nearest": near[0][0]}
  question = dict(place=venue.scenario.setting, listed=listed, actor=actor,
                  action=action)
  try:
    answer = second_look.ask(venue.look_model, reverse=False, **question)
  except CALL_ERRORS as e:
    return {**look, "failed": str(e)}
  proposed, evidence = answer["behaviour"], str(answer["evidence"]).strip()
  look.update(behaviour=proposed, evidence=evidence,
              quoted=general_call.quotes_action(evidence, actor, action))
  if proposed not in look["candidates"]:
    return look
  try:
    look["reversed"] = second_look.ask(venue.look_model, reverse=True,
                                       **question)["behaviour"]
  except CALL_ERRORS as e:
    look["reversed"], look["reverse_failed"] = None, str(e)
  _ask_doers(venue, record, [proposed])
  look["doer"] = record["doers"].get(proposed)
  look["by_actor"] = record["by_actor"].get(proposed)
  return look


def _occasion_case(venue: _Venue, occasion: Occasion,
                   case: Case) -> dict[str, Any]:
  check, failure = venue.referee.check(occasion, case.actor, case.action)
  record = {"actor": case.actor, "action": case.action,
            "truth": sorted(set(case.behaviours)),
            "choices": list(occasion.behaviours), "check": check,
            "failed": failure is not None}
  if failure is not None:
    record["error"] = failure["error"]
  return record


def conflict_item(venue: _Venue, case: ConflictCase) -> Observed:
  """The DetectConflict question of a labelled case: its behaviour against
  its norm, the sentence nearest the rule given as ConflictDetector finds
  it."""
  near, = relevance.nearest_rules(venue.embedder, [case.action], [case.norm])
  return Observed(
      case.actor, case.action,
      case.place or venue.scenario.default_place or "indoors",
      PersonalNorm(id="n", content=case.norm, utility=80, type="injunctive"),
      near.focus)


def _conflict_case(venue: _Venue, case: ConflictCase) -> dict[str, Any]:
  """DetectConflict on one behaviour against one norm (`conflict_item`)."""
  item = conflict_item(venue, case)
  failures: list[str] = []
  record = {"norm": case.norm, "actor": case.actor, "action": case.action,
            "breaks": case.breaks, "intention": case.intention,
            "focus": item.focus}
  try:
    judged = detect_conflicts(
        venue.model, observer="This person", items=[item],
        on_failure=lambda f: failures.append(str(f["error"])))
  except EndpointError as e:
    judged, failures = None, [str(e)]
  if judged is None:
    return {**record, "said": None, "failed": True,
            "error": "; ".join(failures)}
  return {**record, "said": judged[0].breaks, "evidence": judged[0].evidence,
          "failed": False}


def apply_policy(calibration: dict[str, Any], policy: RefereePolicy
                 ) -> dict[str, Any]:
  """The calibration with each case's tags (`tags`, `looked`, the
  occasion's `given`) and the summary as `policy` decides them."""
  bounds, sides = calibration["floors"], calibration["sides"]
  for case in calibration["referee"]:
    case["tags"], case["looked"] = policy_lib.referee_tags(case, policy,
                                                           bounds, sides)
  for case in calibration["occasion"]:
    case["given"] = policy_lib.occasion_tags(case, policy, bounds)
  calibration["policy"] = policy.to_dict()
  calibration["summary"] = summary(calibration, policy)
  return calibration


def summary(calibration: dict[str, Any], policy: RefereePolicy
            ) -> dict[str, Any]:
  """P, R and n of the referee and the occasion check under `policy`;
  DetectConflict's hits and false alarms, intentions counted apart from
  the other non-breaches."""
  figures = policy_lib.evaluate(calibration, policy)
  out: dict[str, Any] = {
      k: dict(zip(("p", "r", "n"), figures[k]))
      for k in ("referee", "occasion")}
  conflicts = calibration["conflicts"]
  breaches = [c for c in conflicts if c["breaks"]]
  plain = [c for c in conflicts if not c["breaks"] and not c["intention"]]
  meant = [c for c in conflicts if not c["breaks"] and c["intention"]]
  out["conflicts"] = {
      "hits": sum(c["said"] is True for c in breaches),
      "breaches": len(breaches),
      "false_alarms": sum(c["said"] is True for c in plain),
      "non_breaches": len(plain),
      "intention_false_alarms": sum(c["said"] is True for c in meant),
      "intentions": len(meant),
      "failed": sum(c["failed"] for c in conflicts)}
  return out


def measure_venue(model, embedder: SentenceEmbedder, scenario: Scenario,
                  probes: Probes, *, jobs: int = JOBS,
                  progress: Progress | None = None,
                  settings: RefereeSettings | None = None) -> dict[str, Any]:
  """The venue's calibration: every labelled case's answers and the
  structures' inputs, its tags and summary under `settings` (what a run of
  the venue by this model applies: run_policy.for_venue; None: trusting()
  with the embedder's thresholds, what an uncalibrated model gets), whose
  thresholds are kept with the answers. `given` keeps the meaning the
  corrected estimates read
  (crsec_concordia/metrics/classifiers/referee_quality.py): the general
  call's tags with a quote of the action, before any gate; `looked` the
  second look's tag under the policy; `tags` what the referee ends with."""
  settings = settings or run_policy.settings(
      RefereePolicy.trusting(), embedding.thresholds_of(embedder))
  venue = _Venue(model, embedder, scenario, settings)
  calibration: dict[str, Any] = {
      "venue": scenario.name, "labels": "probes",
      "behaviours": dict(venue.descriptions), "floors": settings.recorded(),
      "sides": {i: sorted(o) for i, o in sorted(venue.sides.items())},
      "referee": _map(jobs, lambda c: _referee_case(venue, c),
                      probes.referee, "referee", progress),
      "occasion": [], "conflicts": []}
  if probes.occasion is not None:
    occasion = next(o for o in scenario.occasions
                    if o.id == probes.occasion.id)
    calibration["occasion"] = _map(
        jobs, lambda c: _occasion_case(venue, occasion, c),
        probes.occasion.answers, "occasion", progress)
  calibration["conflicts"] = _map(
      jobs, lambda c: _conflict_case(venue, c), probes.conflicts, "conflicts",
      progress)
  return apply_policy(calibration, settings.policy)

"""The referee's measured error per target, for corrected behaviour shares.

Behaviour adoption counts an agent as complying when the game master's
referee tagged its latest relevant action with one of the target's
`complies` behaviours (and none of its `violates`). The referee's labelled
set is the probe cases of scenarios/<scenario>.probes.yaml (`referee:` and the
occasion's `answers:`: an action and the behaviour ids a fair referee sees).
A probe file holds only the labels;
what the referee answered on them is a measurement of one model and one
set of prompts, written by `crsec calibrate` into that model's calibration
(crsec_concordia/calibration/store.py: per venue, the behaviours'
descriptions and the cases, each

  {"action": ..., "truth": [ids], "given": [ids],
   "scores": {id: cosine of the action to its description},
   "deed_scores": {id: the same, place words left out},
   "doers": {id: who the doer check said does it},
   "by_actor": {id: whether that answer named the actor},
   "looked": [the id the second look added, if any]}

or, read back from a labelling sheet of a run (calibration/sheet.py),
{"action", "truth", "tags": the tags the run's referee ended with}).

`given` is what the referee's call gave (its quote check passed); a run
whose referee also drops tags far from the action (game_masters/
tag_gate.py: its action records carry `tag_floor`) is measured by the same
answers with that floor applied to `scores` (and to `deed_scores` too when
its records carry `tag_deed_similarity`) and, when its records carry
`tag_doers` (game_masters/doer_check.py), only the tags the doer check
found to be the actor's, and, when its records carry `second_look`
(game_masters/second_look.py), with the tag the second look added, so the
counts are those of the referee that made the run's tags.

For a target, a case is positive when its true ids comply (some `complies`
id, no `violates` id), and the referee flags it when its given ids do. The
counts hold for a run only when every complies/violates behaviour of the
target has the same description in the run's scenario as when measured (a
referee measured on other words says nothing about these). Where no calibration
of the run's model holds, `rates` returns None with the reason and the
command that calibrates it, and the report shows the raw share rather
than correcting by a guess or by another model's error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from crsec_concordia.calibration import advice, store
from crsec_concordia.calibration import policy as policy_lib
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.metrics.classifiers.correction import Rates
from crsec_concordia.rundir.format import ACTION
from crsec_concordia.scenarios import TargetNorm


@dataclasses.dataclass(frozen=True)
class Measured:
  """A target's referee figures, or why there are none."""
  rates: Rates | None
  note: str


def _complies(ids: Iterable[str], target: TargetNorm) -> bool:
  ids = set(ids)
  return bool(ids & set(target.complies)) and not ids & set(target.violates)


def gated(case: dict[str, Any], floor: float | None, deed: bool = False,
          doer: bool = False, look: bool = False) -> list[str]:
  """The ids a case's answer gave, those scored below `floor` left out
  (None: no gate; every given id must have a score, `scored`), with
  `deed` also those scored below it without the place words, and with
  `doer` those the doer check did not find to be the actor's (a tag the
  check was not asked about, or whose call failed, is not); with `look`,
  the tag the second look added (it passed its own checks). A case read
  from a labelling sheet holds the tags the run's referee ended with
  (`tags`): they are taken as they are."""
  if "tags" in case:
    return list(case["tags"])
  given = list(case.get("given") or ())
  looked = [i for i in case.get("looked") or () if i not in given] if look \
      else []
  if floor is None:
    return given + looked
  scores = case["scores"]
  deeds = case["deed_scores"] if deed else None
  kept = [i for i in given if float(scores[i]) >= floor
          and (deeds is None or float(deeds[i]) >= floor)]
  if doer:
    by_actor = case.get("by_actor") or {}
    kept = [i for i in kept if by_actor.get(i) is True]
  return kept + looked


def scored(cases: Iterable[dict[str, Any]], deed: bool = False,
           doer: bool = False, look: bool = False) -> bool:
  """Whether every given id of every case has its score (and, for `deed`,
  its score without the place words; for `doer`, every case the doer
  check's answers; for `look`, every case the second look's tag): a floor
  can be applied."""
  keys = ("scores", "deed_scores") if deed else ("scores",)
  cases = [c for c in cases if "tags" not in c]  # A sheet's final tags.
  return all(set(c.get("given") or ()) <= set(c.get(k) or {})
             for c in cases for k in keys) and (
                 not doer or all("by_actor" in c for c in cases)) and (
                 not look or all("looked" in c for c in cases))


def confusion(cases: Iterable[dict[str, Any]], target: TargetNorm,
              source: str = "", floor: float | None = None,
              deed: bool = False, doer: bool = False,
              look: bool = False) -> Rates:
  """Counts of "complies with the target" over labelled cases (with a
  tag floor: as the gated referee would have given them)."""
  tp = fp = fn = tn = 0
  for case in cases:
    truth = _complies(case.get("truth") or (), target)
    given = _complies(gated(case, floor, deed, doer, look), target)
    tp += truth and given
    fn += truth and not given
    fp += given and not truth
    tn += not truth and not given
  return Rates(tp=tp, fp=fp, fn=fn, tn=tn, source=source)


def run_tag_floor(records: Iterable[dict[str, Any]]) -> float | None:
  """The tag floor a run's referee applied (None: none, an older run)."""
  for record in records:
    if record.get("kind") == ACTION and "tag_floor" in record:
      return float(record["tag_floor"])
  return None


def run_tag_deed(records: Iterable[dict[str, Any]]) -> bool:
  """Whether a run's referee also gated on the scores without the place
  words (tag_gate.py; older runs did not)."""
  return any(r.get("kind") == ACTION and "tag_deed_similarity" in r
             for r in records)


def run_tag_doer(records: Iterable[dict[str, Any]]) -> bool:
  """Whether a run's referee asked who does each tag it kept
  (doer_check.py; older runs did not)."""
  return any(r.get("kind") == ACTION and "tag_doers" in r
             for r in records)


def run_tag_look(records: Iterable[dict[str, Any]]) -> bool:
  """Whether a run's referee took a second look at actions no tag of its
  general call counted for (second_look.py; older runs did not)."""
  return any(r.get("kind") == ACTION and "second_look" in r
             for r in records)


def replayable(entry: dict[str, Any]) -> bool:
  """Whether a calibration entry keeps every structure's inputs (written
  since they are stored: store.DECISION_KEYS), so any policy replays on
  its probe cases (a sheet's cases keep the tags their run ended with)."""
  probed = [c for c in entry.get("cases") or () if "tags" not in c]
  return "floors" in entry and all("spared" in c and "look" in c
                                   for c in probed)


def _replayed(entry: dict[str, Any], target: TargetNorm,
              policy: RefereePolicy, source: str) -> Measured:
  """The counts of the referee the run named, its policy replayed on the
  calibration's answers (`replayable`)."""
  tags = [c if "tags" in c else
          {"tags": policy_lib.referee_tags(c, policy, entry["floors"],
                                           entry.get("sides"))[0],
           "truth": c.get("truth")} for c in entry.get("cases") or ()]
  source += (", replayed under the run's referee policy ("
             + (", ".join(policy.structures()) or "no structure") + ")")
  counts = confusion(tags, target, source)
  if counts.tp + counts.fn == 0:
    return Measured(None, source + ": no case complies with it")
  return Measured(counts, source)


def _matching(entry: dict[str, Any], own: str | None,
              identity: ModelIdentity) -> tuple[bool, bool]:
  """The sort key of a venue's calibration: the run's own venue first,
  then the run's judgement prompts."""
  return (entry.get("scenario") != own,
          bool(identity.prompts) and entry.get("prompts") != identity.prompts)


def _prompt_note(entry: dict[str, Any], identity: ModelIdentity,
                 advice: str) -> str:
  """What the report says when the calibration was made with other
  judgement prompts than the run's (identity.py), or "" when the same."""
  theirs, ours = entry.get("prompts"), identity.prompts
  if ours and theirs == ours:
    return ""
  if not ours:
    why = "this run did not record its judgement prompts' hash"
  elif not theirs:
    why = ("the calibration was made before judgement prompts were hashed; "
           f"this run's are {ours}")
  else:
    why = f"calibration prompts {theirs}, this run's {ours}"
  return (f"; NOTE: calibrated with other judgement prompts than this run's "
          f"({why}): run {advice or 'crsec calibrate'} again")


def rates(target: TargetNorm, scenario: dict[str, Any],
          calibrations: Sequence[Path] | None = None,
          floor: float | None = None, deed: bool = False,
          doer: bool = False, look: bool = False,
          model: dict[str, Any] | None = None,
          scenario_path: str | None = None,
          run_dir: str | Path | None = None,
          policy: RefereePolicy | None = None) -> Measured:
  """The referee's counts for `target` in a run of `scenario` (its dict),
  whose referee dropped tags below `floor` (tag_gate.py) or none; with
  `deed`, also those below it without the place words; with `doer`, those
  the doer check did not find to be the actor's; with `look`, with the
  second look's tags.

  `model`: the run's model as its run.json records it. The referee's error
  is the model's: only a calibration of that model (store.py, found in
  `calibrations`, default the user's and the package's) corrects the run,
  and one made with other judgement prompts is named as such. Without
  one, the note is "not calibrated for MODEL on VENUE: run crsec calibrate
  ..." (advice.py) and behaviour is not corrected. `scenario_path` and
  `run_dir` make that command exact. `policy`: the referee policy the run
  named (run.json), replayed on the calibration's recorded answers
  (`replayable`) in place of the floors read from the records."""
  name = str(scenario.get("name", ""))
  described = {b.get("id"): b.get("description")
               for b in scenario.get("behaviours") or ()}
  wanted = {i: described.get(i) for i in (*target.complies, *target.violates)}
  if not model:  # Whose error it would be is unknown: none is used.
    return Measured(None, f"not calibrated: the run records no model, so no "
                    f"model's error on {name} can be taken for its referee's; "
                    "behaviour shares are raw (not corrected)")
  identity = ModelIdentity.of_described(model)
  command = advice.command(model, name, scenario_path, run_dir)
  # Venues may describe a behaviour in the same words (the café and the mini
  # café do): the answers recorded on the run's own venue come first, as
  # its referee read that venue's setting; another's serve only without.
  found = [e for e in store.entries(calibrations)
           if all((e.get("behaviours") or {}).get(i) == d
                  for i, d in wanted.items())
           and identity.same_model(ModelIdentity.from_dict(e["model"]))]
  if not found:
    return Measured(None, advice.not_calibrated(model, name, scenario_path,
                                                run_dir))
  measured = min(found, key=lambda e: _matching(e, name, identity))
  cases = measured.get("cases") or []
  labelled = {"sheet": "labelled actions of a run (a filled sheet)",
              "probes and sheet": "probe cases and labelled actions of a "
              "run"}.get(str(measured.get("labels")), "probe cases")
  source = (f"referee on {len(cases)} {labelled} of "
            f"{measured.get('scenario')}, calibration of "
            f"{ModelIdentity.from_dict(measured['model'])} "
            f"({Path(measured['path']).name})")
  if (policy is not None and not all("tags" in c for c in cases)
      and replayable(measured)):
    # A sheet's cases hold the tags the run's own referee ended with.
    return _replayed(measured, target, policy,
                     source + _prompt_note(measured, identity, command))
  if policy is not None and not all("tags" in c for c in cases):
    source += (" (recorded before calibrations kept every structure's "
               "inputs: only the floors, the doer check and the second look "
               "the run's records show are replayed, not the rest of its "
               f"referee policy; run {command} for an exact correction)")
  if floor is not None:
    source += f", tags below cosine {floor} left out" + (
        " (also without the place words)" if deed else "") + (
        ", and those not the actor's" if doer else "") + (
        ", with the second look's" if look else "")
    if not scored(cases, deed, doer, look):
      return Measured(None, source + ": recorded without the tag scores "
                      f"the run's referee gated on (run {command})")
  source += _prompt_note(measured, identity, command)
  counts = confusion(cases, target, source, floor, deed, doer, look)
  if counts.tp + counts.fn == 0:
    return Measured(None, source + ": no case complies with it")
  return Measured(counts, source)

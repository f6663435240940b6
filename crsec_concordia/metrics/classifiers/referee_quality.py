"""The referee's measured error per target, for corrected behaviour shares.

Behaviour adoption counts an agent as complying when the game master's
referee tagged its latest relevant action with one of the target's
`complies` behaviours (and none of its `violates`). The referee's labelled
set is the probe cases of scenarios/<scenario>.probes.yaml (`referee:` and the
occasion's `answers:`: an action and the behaviour ids a fair referee sees).
A probe file holds only the labels; what the referee answered on them is
a measurement of one model and one prompt, written by a probe run as

  crsec_concordia/metrics/data/referee_decisions/<scenario>.json
  {"scenario": ..., "model": ..., "behaviours": {id: description},
   "cases": [{"action": ..., "truth": [ids], "given": [ids],
              "scores": {id: cosine of the action to its description},
              "deed_scores": {id: the same, place words left out},
              "doers": {id: who the doer check said does it},
              "by_actor": {id: whether that answer named the actor},
              "looked": [the id the second look added, if any]}]}

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
referee measured on other words says nothing about these). Where no such
measurement exists, `rates` returns None with the reason, and the report
says "not measured" rather than correcting by a guess.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from crsec_concordia.metrics.classifiers import DATA
from crsec_concordia.metrics.classifiers.correction import Rates
from crsec_concordia.rundir.format import ACTION
from crsec_concordia.scenarios import TargetNorm
from crsec_concordia.scenarios import loader as scenario_files

DECISIONS = DATA / "referee_decisions"
# Each shipped venue's labelled cases, <name>.probes.yaml beside it.
PROBES = scenario_files.HERE


@dataclasses.dataclass(frozen=True)
class Measured:
  """A target's referee figures, or why there are none."""
  rates: Rates | None
  note: str


def probe_cases(scenario: str, probes: Path = PROBES) -> int | None:
  """How many labelled referee cases the probe file holds (None: no file)."""
  path = probes / f"{scenario}{scenario_files.PROBES_SUFFIX}"
  try:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
  except (OSError, yaml.YAMLError):
    return None
  occasion = data.get("occasion") or {}
  return len(data.get("referee") or []) + len(occasion.get("answers") or [])


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
  the tag the second look added (it passed its own checks)."""
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


def _load(directory: Path) -> list[dict[str, Any]]:
  out = []
  for path in sorted(directory.glob("*.json")) if directory.is_dir() else ():
    try:
      out.append(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
      continue
  return out


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


def rates(target: TargetNorm, scenario: dict[str, Any],
          decisions: Path | None = None, probes: Path | None = None,
          floor: float | None = None, deed: bool = False,
          doer: bool = False, look: bool = False,
          model: str | None = None) -> Measured:
  """The referee's counts for `target` in a run of `scenario` (its dict),
  whose referee dropped tags below `floor` (tag_gate.py) or none; with
  `deed`, also those below it without the place words; with `doer`, those
  the doer check did not find to be the actor's; with `look`, with the
  second look's tags.

  `model`: the model the run's referee was (its run.json). The referee's
  error is the model's: answers recorded with another model say nothing of
  this run's, so its behaviour is then not corrected (and the note says
  how to record the run's model)."""
  decisions = DECISIONS if decisions is None else decisions
  probes = PROBES if probes is None else probes
  described = {b.get("id"): b.get("description")
               for b in scenario.get("behaviours") or ()}
  wanted = {i: described.get(i) for i in (*target.complies, *target.violates)}
  # Venues may describe a behaviour in the same words (the café and the mini
  # café do): the answers recorded on the run's own venue come first, as
  # its referee read that venue's setting; another's serve only without.
  own = scenario.get("name")
  for measured in sorted(_load(decisions),
                         key=lambda m: m.get("scenario") != own):
    behaviours = measured.get("behaviours") or {}
    if all(behaviours.get(i) == d for i, d in wanted.items()):
      recorded = measured.get("model")
      if model and recorded and recorded != model:
        return Measured(None, (
            f"referee error measured with {recorded}, not with this run's "
            f"model {model}: behaviour not corrected (record the referee's "
            "answers with that model: bench/judgement_probe.py --all "
            "--record, its endpoint in CRSEC_BASE_URL and CRSEC_MODEL)"))
      source = (f"referee on {len(measured.get('cases') or [])} probe cases "
                f"of {measured.get('scenario')} "
                f"({recorded or 'model not recorded'})")
      cases = measured.get("cases") or []
      if floor is not None:
        source += f", tags below cosine {floor} left out" + (
            " (also without the place words)" if deed else "") + (
            ", and those not the actor's" if doer else "") + (
            ", with the second look's" if look else "")
        if not scored(cases, deed, doer, look):
          return Measured(None, source + ": recorded without the tag scores "
                          "the run's referee gated on (re-record with bench/"
                          "judgement_probe.py --all --record)")
      counts = confusion(cases, target, source, floor, deed, doer, look)
      if counts.tp + counts.fn == 0:
        return Measured(None, source + ": no case complies with it")
      return Measured(counts, source)
  name = scenario.get("name", "")
  cases = probe_cases(name, probes)
  if cases is None:
    return Measured(None, "referee error not measured: no labelled probe "
                    f"cases for {name} (label the venue's actions, then "
                    "record the referee's answers on them: bench/"
                    "judgement_probe.py --scenario SCENARIO --probes FILE "
                    "--record); behaviour not corrected")
  return Measured(None, f"referee error not measured: {name}.probes.yaml "
                  f"holds {cases} labelled cases, but no referee answers "
                  "on them are recorded (metrics/data/referee_decisions/)")

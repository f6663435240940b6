"""How well the model judges: the referee, an occasion's check and DetectConflict.

Labelled cases of a scenario (bench/probes/<scenario name>.yaml: actions as
agents write them, each labelled with the behaviour ids a fair referee sees)
go through the same calls a run makes: the general adjudication (and the
place it gives, where a case names one), the focused check of an occasion
that names behaviours (with its embedding gate) and DetectConflict against
one norm. Prints the referee's precision and recall over behaviour tags
(bench/probe_scores.py), the places right, each check's right/total and
every miss, then one summary line per venue, so a new model, prompt or
venue can be compared with the embedded model before a long run. Any
endpoint: set CRSEC_BASE_URL and CRSEC_MODEL (or OPENAI_*); by default the
embedded model. The cases are test data: nothing of them reaches a prompt
of the product. Cases are asked four at a time (--jobs), as a run's slot
asks them; the embedded server then batches them, and a borderline answer
can differ from one repeat to the next ("plants garlic cloves" tagged as
picking from his own plot in one of two repeats of the same code); --jobs 1
asks one at a time. The figures measured so: docs/trials/referee.md.
--heldout adds the venues of bench/heldout/, which nothing was tuned on.
--cache FILE keeps the model's answers in a response cache: a change to one
check, replayed with it, asks the model only the prompts it changed
(minutes, not the quarter hour of a full probe).
Usage: .venv/bin/python bench/judgement_probe.py [--scenario NAME_OR_PATH]
       [--probes FILE] | [--all] [--heldout]
       [--only referee|occasion|conflicts ...]
       [--jobs N] [--record [DIR]] [--cache FILE]
"""

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pydantic
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from crsec_concordia import models  # noqa: E402
from crsec_concordia.embedding import shared_embedder  # noqa: E402
from crsec_concordia.errors import UserError  # noqa: E402
from crsec_concordia.game_masters import referee as referee_lib  # noqa: E402
from crsec_concordia.game_masters.referee import occasion_check  # noqa: E402
from crsec_concordia.norms import PersonalNorm  # noqa: E402
from crsec_concordia.operations.detect_conflict import (  # noqa: E402
    detect_conflict)
from crsec_concordia.relevance import nearest_rules  # noqa: E402
from crsec_concordia.scenarios import (Scenario, builtin_names,  # noqa: E402
                                       load_scenario)
import probe_scores  # noqa: E402  (bench/, beside this file)

PROBES = HERE / "probes"
# Venues kept out of scenarios/ and of all tuning: the referee and
# DetectConflict measured on venues no code or prompt was written for
# (<name>.yaml beside its <name>.probes.yaml).
HELDOUT = HERE / "heldout"
RECORD = (HERE.parent / "crsec_concordia" / "metrics" / "data"
          / "referee_decisions")
DEFAULT_SCENARIO = "hobbs_cafe_mini"


class _Case(pydantic.BaseModel):
  model_config = pydantic.ConfigDict(extra="forbid", str_strip_whitespace=True)
  actor: str
  action: str
  behaviours: list[str]
  place: str | None = None  # Checked only where the file names it.


class _Occasion(pydantic.BaseModel):
  model_config = pydantic.ConfigDict(extra="forbid")
  id: str
  answers: list[_Case]


class _Conflict(pydantic.BaseModel):
  model_config = pydantic.ConfigDict(extra="forbid", str_strip_whitespace=True)
  norm: str
  actor: str
  action: str
  breaks: bool
  # Where the observer sees it (the event's place in a run); by default the
  # scenario's default place.
  place: str | None = None


class Probes(pydantic.BaseModel):
  """A scenario's labelled cases (see bench/probes/*.yaml)."""
  model_config = pydantic.ConfigDict(extra="forbid")
  referee: list[_Case] = []
  occasion: _Occasion | None = None
  conflicts: list[_Conflict] = []

  def only(self, sections: list[str] | None) -> "Probes":
    """These sections of the cases, the others left out (None: all): a
    change to one judgement measured in minutes, not the whole quarter
    hour."""
    if not sections:
      return self
    return Probes(**{k: getattr(self, k) for k in SECTIONS
                     if k in sections})


SECTIONS = ("referee", "occasion", "conflicts")
JOBS = 4  # Cases asked at once: the embedded server's slots, as in a run.


def probes_path(scenario: Scenario) -> Path:
  return PROBES / f"{scenario.name}.yaml"


def heldout_venues() -> list[tuple[Path, Path]]:
  """The held-out venues: (scenario file, probe file), by name."""
  return [(path, path.with_name(path.name.replace(".yaml", ".probes.yaml")))
          for path in sorted(HELDOUT.glob("*.yaml"))
          if not path.name.endswith(".probes.yaml")]


def probed_venues() -> list[str]:
  """The shipped scenarios that have a probe file, by name."""
  return [name for name in builtin_names()
          if (PROBES / f"{name}.yaml").is_file()]


def load_probes(path: Path, scenario: Scenario) -> Probes:
  """The cases of `path`, checked against the scenario they label.

  A label naming a behaviour the scenario lacks would count every answer
  wrong without saying why; so would a case for an occasion it lacks.
  """
  try:
    probes = Probes.model_validate(yaml.safe_load(path.read_text("utf-8")))
  except OSError as e:
    raise UserError(f"{path}: cannot be read ({e.strerror}); write the "
                    f"scenario's cases there or pass --probes FILE") from None
  except (yaml.YAMLError, pydantic.ValidationError) as e:
    first = str(e).splitlines()[0]
    raise UserError(f"{path}: not a probe file ({first}); see "
                    "bench/probes/hobbs_cafe_mini.yaml") from None
  known = set(scenario.behaviour_ids)
  problems = []
  cases = [*probes.referee, *(probes.occasion.answers if probes.occasion
                                else [])]
  for case in [*cases, *probes.conflicts]:
    if case.place not in (None, "indoors", "outdoors"):
      problems.append(f"place {case.place!r} is not indoors or outdoors")
    if case.actor not in scenario.agent_names:
      problems.append(f"{case.actor!r} is not an agent of {scenario.name}")
  for case in cases:
    problems += [f"{b!r} is not a behaviour of {scenario.name}"
                 for b in case.behaviours if b not in known]
  if probes.occasion is not None:
    occasion = next((o for o in scenario.occasions
                     if o.id == probes.occasion.id), None)
    if occasion is None or not occasion.behaviours:
      problems.append(f"{scenario.name} has no occasion {probes.occasion.id!r} "
                      "naming behaviours")
    else:
      problems += [f"{b!r} is not a behaviour of occasion {occasion.id}"
                   for case in probes.occasion.answers for b in case.behaviours
                   if b not in occasion.behaviours]
  if problems:
    raise UserError("\n".join(f"{path}: {p}" for p in dict.fromkeys(problems)))
  return probes


def report(name: str, results: list[tuple[bool, str]]) -> tuple[int, int]:
  """Prints right/total and every miss; (right, total)."""
  right = sum(ok for ok, _ in results)
  print(f"{name}: {right}/{len(results)} right")
  for ok, line in results:
    if not ok:
      print(f"   miss: {line}")
  return right, len(results)


def probe_referee(model, scenario: Scenario, cases: list[_Case],
                  decisions: list[dict] | None = None, jobs: int = JOBS
                  ) -> tuple[probe_scores.TagCounts, tuple[int, int] | None]:
  """The game master's own referee on each case (the run's code path: its
  evidence rule and the scenario's default place included): the tag
  counts and (places right, places labelled)."""
  referee = referee_lib.Referee(
      model, place=scenario.setting, default_place=scenario.default_place,
      behaviours=[b.model_dump(mode="json") for b in scenario.behaviours],
      similarity=referee_lib.similarity_of(shared_embedder()))
  counts = probe_scores.TagCounts()
  results, places = [], []
  # `jobs` at a time (by default as a run's slot asks them: the embedded
  # server's slots); the records keep the cases' order.
  with ThreadPoolExecutor(jobs) as pool:
    answers = list(pool.map(lambda c: referee.adjudicate(c.actor, c.action),
                            cases))
  for case, (event, failure) in zip(cases, answers):
    want = set(case.behaviours)
    failed = failure is not None and not event.get("adjudicated")
    if decisions is not None:  # A failed answer flags nothing.
      decisions.append(_decision(case, event, failed))
    if failed:
      counts.add(want, ())
      results.append((False, f"want {sorted(want)} failed: "
                     f"{failure['error']} | {case.action}"))
      continue
    got = set(event["behaviours"])
    ok = counts.add(want, got)
    results.append((ok, f"want {sorted(want)} got {sorted(got)}"
                    f"{_checks_said(event)} | {case.actor}: {case.action}"))
    if case.place:
      places.append((event["place"] == case.place,
                     f"want {case.place} got {event['place']} | "
                     f"{case.action}"))
  report("referee (general call)", results)
  print(f"referee tags: {counts.line()}; {counts.detail()}")
  placed = report("referee place", places) if places else None
  return counts, placed


def _decision(case: _Case, event: dict, failed: bool) -> dict:
  """What the general call gave, before the tag floor, with the scores
  the floor reads: a run's corrected estimates apply the floor its
  referee did (crsec_concordia/metrics/classifiers/referee_quality.py); and the
  second look's tag, counted only for a run whose referee took it."""
  look = event.get("second_look") or {}
  looked = [look["behaviour"]] if look.get("accepted") else []
  given = [] if failed else sorted(
      [*(i for i in event["behaviours"] if i not in looked),
       *event.get("far_from_action", ()),
       *event.get("not_by_actor", ())])
  doers = event.get("tag_doers", {})
  return {"action": case.action, "truth": sorted(set(case.behaviours)),
          "given": given,
          "scores": {i: event["tag_similarity"][i] for i in given},
          "deed_scores": {i: event["tag_deed_similarity"][i] for i in given},
          # The doer check's answer for each tag it was asked about, and
          # whether it named the actor.
          "doers": doers,
          "by_actor": {i: i in event["behaviours"] for i in doers},
          "looked": looked}


def _checks_said(event: dict) -> str:
  """What each check said of an answer, for its line: a claim without the
  action's words as evidence is not counted, so it is shown with the
  evidence given, to tell the two failures apart."""
  said = (f" (claimed {event['unsupported']}, evidence "
          f"{event['evidence']!r})" if event.get("unsupported") else
          f" (evidence {event['evidence']!r})")
  if event.get("not_by_actor"):
    said += (f" (not the actor's: {event['not_by_actor']}, who does "
             f"it: {event['tag_doers']})")
  look = event.get("second_look") or {}
  if look:
    said += (f" (second look: {look.get('behaviour')} of "
             f"{look['candidates']}"
             + (", accepted)" if look["accepted"] else
                f", not counted: {look.get('why')})"))
  if event.get("far_from_action"):
    said += (f" (far from the action: {event['far_from_action']}, "
             f"{event['tag_similarity']}, without the place words "
             f"{event['tag_deed_similarity']})")
  return said


def probe_occasion(model, scenario: Scenario, probes: _Occasion
                   ) -> tuple[str, int, int]:
  occasion = next(o for o in scenario.occasions if o.id == probes.id)
  wanted = [b.model_dump(mode="json") for b in scenario.behaviours
            if b.id in occasion.behaviours]
  embedder = shared_embedder()
  results = []
  for case in probes.answers:
    check, _ = occasion_check.check_occasion(
        model, place=scenario.setting,
        situation=occasion.situation.replace("{actor}", case.actor),
        actor=case.actor, action=case.action, behaviours=wanted,
        similarity=referee_lib.similarity_of(embedder))
    want = set(case.behaviours)
    got = {check["behaviour"]} if check["accepted"] else set()
    results.append((got == want, f"want {sorted(want)} got {sorted(got)} "
                    f"({check['behaviour']}, similarity {check['similarity']})"
                    f" | {case.action}"))
  right, total = report(
      f"{occasion.id} check (focused call + similarity gate)", results)
  return occasion.id, right, total


def probe_conflicts(model, scenario: Scenario, cases: list[_Conflict],
                    jobs: int = JOBS) -> tuple[int, int]:
  def judge(case: _Conflict):
    # The sentence nearest the rule, as ConflictDetector finds it.
    near, = nearest_rules(shared_embedder(), [case.action], [case.norm])
    return detect_conflict(
        model, actor=case.actor, behaviour=case.action,
        place=case.place or scenario.default_place or "indoors",
        norm=PersonalNorm(id="n", content=case.norm, utility=80,
                          type="injunctive"),
        focus=near.focus, on_failure=None)
  results = []
  with ThreadPoolExecutor(jobs) as pool:  # As in probe_referee.
    verdicts = list(pool.map(judge, cases))
  for case, verdict in zip(cases, verdicts):
    got = bool(verdict and verdict[0])
    said = ("failed" if verdict is None else
            f"got {'breach' if got else 'none'}, quoted {verdict[1]!r}")
    results.append((got == case.breaks, f"{case.norm} | want "
                    f"{'breach' if case.breaks else 'none'}, {said} | "
                    f"{case.action}"))
  return report("DetectConflict", results)


def record_decisions(scenario: Scenario, model_name: str,
                     decisions: list[dict], out: Path) -> Path:
  """Writes the referee's answers on the labelled cases where the
  corrected behaviour estimates read them
  (metrics/classifiers/referee_quality.py)."""
  out.mkdir(parents=True, exist_ok=True)
  path = out / f"{scenario.name}.json"
  path.write_text(json.dumps(
      {"scenario": scenario.name, "model": model_name,
       "behaviours": {b.id: b.description for b in scenario.behaviours},
       "cases": decisions}, indent=1, ensure_ascii=False) + "\n",
      encoding="utf-8")
  return path


def probe_venue(model, scenario: Scenario, probes: Probes,
                record: Path | None = None, model_name: str = "",
                jobs: int = JOBS
                ) -> tuple[str, probe_scores.TagCounts | None]:
  """Every section of one venue's cases; its summary line and tag counts.
  With `record`, the referee's answers are written there (one file per
  venue) for the corrected estimates."""
  print(f"scenario {scenario.name}", flush=True)
  tags = placed = occasion = conflicts = None
  decisions: list[dict] | None = [] if record is not None else None
  if probes.referee:
    tags, placed = probe_referee(model, scenario, probes.referee, decisions,
                                 jobs)
  if record is not None and decisions:
    print(f"recorded: {record_decisions(scenario, model_name, decisions, record)}")
  if probes.occasion is not None:
    occasion = probe_occasion(model, scenario, probes.occasion)
  if probes.conflicts:
    conflicts = probe_conflicts(model, scenario, probes.conflicts, jobs)
  line = probe_scores.summary_line(scenario.name, tags, placed, conflicts,
                                   occasion)
  print(line, end="\n\n", flush=True)
  return line, tags


def _venues(args: argparse.Namespace) -> list[tuple[Scenario, Probes]]:
  """The venues the arguments name, each with its cases (only the sections
  asked for)."""
  if not (args.all or args.heldout):
    scenario = load_scenario(args.scenario or DEFAULT_SCENARIO)
    return [(scenario, load_probes(args.probes or probes_path(scenario),
                                   scenario).only(args.only))]
  venues = []
  for name in probed_venues() if args.all else []:
    scenario = load_scenario(name)
    venues.append((scenario, load_probes(probes_path(scenario),
                                         scenario).only(args.only)))
  for path, probes in heldout_venues() if args.heldout else []:
    scenario = load_scenario(str(path))
    venues.append((scenario, load_probes(probes, scenario).only(args.only)))
  return venues


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--scenario", default=None,
                      help="a built-in scenario name or a .yaml path "
                           f"(default {DEFAULT_SCENARIO})")
  parser.add_argument("--probes", type=Path, default=None,
                      help="the labelled cases (default: "
                           "bench/probes/<scenario name>.yaml)")
  parser.add_argument("--all", action="store_true",
                      help="every shipped scenario that has a probe file, "
                           "one after the other with one model")
  parser.add_argument("--heldout", action="store_true",
                      help="the held-out venues (bench/heldout/): venues no "
                           "code or prompt was written for")
  parser.add_argument(
      "--record", nargs="?", type=Path, const=RECORD, default=None,
      metavar="DIR",
      help="write the referee's answers on the labelled cases, for the "
           "corrected behaviour estimates (default DIR: "
           "crsec_concordia/metrics/data/referee_decisions)")
  parser.add_argument("--only", nargs="+", choices=SECTIONS, default=None,
                      help="probe only these judgements")
  parser.add_argument("--jobs", type=int, default=JOBS, metavar="N",
                      help=f"cases asked at once (default {JOBS}, as in a "
                           "run; 1 asks one at a time, so the embedded "
                           "server's batching cannot change an answer)")
  parser.add_argument("--cache", type=Path, default=None, metavar="FILE",
                      help="answer from (and add to) this response cache: "
                           "a replay asks the model only new prompts")
  return parser


def main(argv: list[str] | None = None) -> int:
  parser = _parser()
  args = parser.parse_args(argv)
  if args.record and args.only and "referee" not in args.only:
    parser.error("--record records the referee's answers: --only must "
                 "include referee")
  if args.jobs < 1:
    parser.error("--jobs must be 1 or more")
  if (args.all or args.heldout) and (args.scenario or args.probes):
    parser.error("--all and --heldout run their venues' own probe files: "
                 "give them without --scenario or --probes")
  if args.heldout and args.record:
    parser.error("--record writes the shipped venues' decisions for the "
                 "corrected estimates: not with --heldout")
  try:
    venues = _venues(args)
  except UserError as e:
    print(f"judgement_probe: {e}", file=sys.stderr)
    return 2
  endpoint = models.EndpointConfig.resolve()
  model = models.make_model(endpoint, seed=1, cache_path=args.cache)
  name = str(endpoint.describe().get("model"))
  results = [probe_venue(model, scenario, probes, args.record, name,
                         args.jobs)
             for scenario, probes in venues]
  print(f"summary (target: referee P >= {probe_scores.TARGET_PRECISION} "
        f"and R >= {probe_scores.TARGET_RECALL})")
  for line, tags in results:
    below = tags is not None and not tags.meets_target()
    print(line + ("  [below target]" if below else ""))
  return 0


if __name__ == "__main__":
  sys.exit(main())

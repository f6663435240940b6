"""`crsec report --publish DIR RUN_OR_SWEEP...`: results readable without
running anything.

From any mix of run, compare and sweep directories, writes DIR/README.md
(per group of runs: the Figure 2 analog per target norm with corrected
estimates, conflicts per hour, the paper's findings each decided by a
stated rule, cost beside the runs they replaced (publish_cost.py), and
what the model can and cannot show), DIR/results.json
(the runs, their cost, the findings with their numbers) and DIR/figures/
(small PNGs). Run directories are read, never copied: DIR gets no events,
norms or logs.

A group is the runs of one scenario (and, in a sweep, one condition and
endpoint); its findings are decided on its normative runs against its
baseline runs (findings.py). A group of runs with places or groups also
gets its adoption per place and group and the norms carried between
places, and runs with committed agents at two or more shares their tipping
curve (publish_town.py). A scenario published with more than one
condition gets its conditions side by side (publish_conditions.py).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crsec_concordia.errors import UserError
from crsec_concordia.metrics.measure import run_metrics
from crsec_concordia.metrics.present import (findings, publish_conditions,
                                             publish_figures, publish_said,
                                             publish_town,
                                             sequential)
from crsec_concordia.metrics.present.cells import md_escape as _md_escape
from crsec_concordia.metrics.present.cells import number
from crsec_concordia.metrics.present.publish_cost import (cost, cost_markdown,
                                                          earlier_runs)
from crsec_concordia.rundir import reading


@dataclasses.dataclass
class RunGroup:
  """Runs that are seeds of one experiment, by arm."""
  key: tuple[str, str, str]  # scenario, condition, endpoint
  runs: dict[str, list[run_metrics.RunMetrics]]
  # The looks its findings are decided at: a compare's --until-decided
  # design, else one look at its seeds.
  design: sequential.Design | None = None

  @property
  def label(self) -> str:
    scenario, condition, endpoint = self.key
    extra = ", ".join(x for x in (condition, endpoint) if x)
    return f"{scenario} ({extra})" if extra else scenario

  @property
  def slug(self) -> str:
    return "__".join(x for x in self.key if x).replace("/", "_")


def _run_dirs(path: Path) -> list[tuple[Path, str, str]]:
  """(run directory, condition, endpoint) for a run, compare or sweep."""
  if reading.is_sweep_dir(path):
    return [(r.path, r.condition, r.endpoint)
            for r in reading.read_sweep(path)]
  if reading.is_compare_dir(path):
    compare = reading.read_compare(path)
    return [(d, "", "") for dirs in compare.runs.values() for d in dirs]
  if reading.is_run_dir(path):
    return [(path, "", "")]
  raise UserError(f"{path} is neither a run, a compare nor a sweep "
                  "directory; pass directories written by `crsec run`, "
                  "`crsec compare` or `crsec sweep`")


def _design(path: Path) -> sequential.Design | None:
  """The design of a compare made with --until-decided."""
  if not reading.is_compare_dir(path):
    return None
  block = reading.read_compare(path).manifest.get("until_decided")
  return sequential.Design.from_dict(block["design"]) if block else None


def collect(paths: Sequence[Path], matcher_factory=None) -> list[RunGroup]:
  groups: dict[tuple[str, str, str], RunGroup] = {}
  seen: set[Path] = set()
  for path in paths:
    design = _design(Path(path))
    for d, condition, endpoint in _run_dirs(Path(path)):
      if d.resolve() in seen:
        continue
      seen.add(d.resolve())
      run = reading.read_run(d)
      m = run_metrics.compute(run, matcher_factory(run) if matcher_factory
                              else None)
      key = (str(run.scenario.get("name")), condition, endpoint)
      group = groups.setdefault(key, RunGroup(key, {}, design))
      group.runs.setdefault(run.arm, []).append(m)
  if not groups:
    raise UserError("no completed or interrupted run directory found in "
                    + ", ".join(str(p) for p in paths))
  for g in groups.values():
    for ms in g.runs.values():
      ms.sort(key=lambda m: (m.run.seed is None, m.run.seed))
  return [groups[k] for k in sorted(groups)]


CAN_CANNOT = """\
**What a 1.5B model can and cannot show.** On the embedded
Qwen2.5-Coder-1.5B every operation runs and the records are complete, so
these results show that the pipeline works end to end: conflicts are
detected, norms are passed on in talk and by observation, evaluated,
planned with and measured. They cannot show that a society *of capable
agents* forms norms: the small model copies others' actions, repeats its
own, inverts norms it hears, misjudges conflicts both ways and acts against its
persona (README, "What the embedded 1.5B model can and cannot do"), and the
referee's and matcher's errors are of the same order as the effects. Read
"holds" on such a model as "the numbers are consistent with the paper's
finding", not as a replication; for that, run examples/sweeps/paper.yaml on
a 7B+ model. These runs stand on the Qwen2.5-Coder-1.5B row of the models'
judgement table (docs/calibration.md, "Models compared").
"""

OTHER_MODELS = """\
**Models.** These runs were made with {models}. The paper's findings are
judged by the same rules whatever the model; the referee's measured error
corrects behaviour only where its answers on the labelled cases were
recorded with the run's own model (see each group's measurement error).
Where these models stand among others on the labelled cases: the models'
judgement table (docs/calibration.md, "Models compared"; `crsec calibrate`
adds a model's row).
"""


def model_paragraph(groups: Sequence[RunGroup]) -> str:
  """What the results can show depends on the model: the embedded 1.5B
  model's limits, or the models named."""
  infos = [m.run.run.get("model") or {} for g in groups
           for ms in g.runs.values() for m in ms]
  if all(i.get("endpoint") == "embedded" for i in infos):
    return CAN_CANNOT
  names = sorted({str(i.get("model") or i.get("endpoint") or "an unnamed "
                      "model") for i in infos})
  return OTHER_MODELS.format(models=", ".join(f"`{_md_escape(n)}`"
                                              for n in names))


def measurement_error(g: RunGroup) -> list[dict[str, Any]]:
  """The classifiers' measured error the corrected estimates undo, per
  target and measure: the labelled counts of the first run that has them
  (every run of a group reads the same labelled sets; a baseline run has
  no belief to correct)."""
  rows: dict[tuple[str, str], dict[str, Any]] = {}
  for ms in g.runs.values():
    for m in ms:
      block = (m.summary.get("correction") or {}).get("targets") or {}
      for target, by_measure in block.items():
        for measure, entry in by_measure.items():
          if entry.get("rates") and (target, measure) not in rows:
            rows[(target, measure)] = {"target": target, "measure": measure,
                                       **entry["rates"]}
  order = {"belief": 0, "behaviour": 1}
  return [rows[k] for k in sorted(rows, key=lambda k: (k[0],
                                                       order.get(k[1], 2)))]


def uncorrected(g: RunGroup) -> list[str]:
  """Why a group's behaviour shares are raw, each reason once (no
  calibration of the runs' model and venue: the command that makes one)."""
  notes: dict[str, None] = {}
  for ms in g.runs.values():
    for m in ms:
      block = (m.summary.get("correction") or {}).get("targets") or {}
      for by_measure in block.values():
        entry = by_measure.get("behaviour") or {}
        if not entry.get("rates") and entry.get("note"):
          notes[str(entry["note"])] = None
  return list(notes)


def _uncorrected_markdown(notes: Sequence[str]) -> list[str]:
  if not notes:
    return []
  return ["", "Behaviour shares shown raw, not corrected:", ""] + [
      f"- {_md_escape(n)}" for n in notes]


def _error_markdown(errors: list[dict[str, Any]]) -> list[str]:
  if not errors:
    return []
  lines = ["", "### Measurement error corrected for", "",
           "Belief is read by the norm matcher, behaviour by the referee; "
           "their sensitivity and specificity on labelled cases are what "
           "the corrected estimates undo, and the intervals carry their "
           "uncertainty (few labelled cases make wide intervals).", "",
           "| target | measure | sensitivity | specificity | labelled from |",
           "|---|---|---|---|---|"]
  for e in errors:
    lines.append(
        f"| {_md_escape(e['target'])} | {e['measure']} | "
        f"{number(e['sensitivity'], 2)} ({e['tp']}/{e['tp'] + e['fn']}) | "
        f"{number(e['specificity'], 2)} ({e['tn']}/{e['tn'] + e['fp']}) | "
        f"{_md_escape(e['source'])} |")
  return lines


def _group_markdown(g: RunGroup, decided: list[dict[str, Any]],
                    pictures: list[tuple[str, str]], rows: list[dict[str, Any]],
                    errors: list[dict[str, Any]] = (),
                    raw: Sequence[str] = (),
                    earlier: Sequence[dict[str, Any]] = ()) -> str:
  lines = [f"## {_md_escape(g.label)}", ""]
  arms = ", ".join(f"{arm}: {len(ms)} run{'s' if len(ms) != 1 else ''} "
                   f"(seeds {', '.join(str(m.run.seed) for m in ms)})"
                   for arm, ms in sorted(g.runs.items()))
  lines += [arms, ""]
  for path, caption in pictures:
    lines += [f"![{_md_escape(caption)}]({path})", "", f"*{caption}*", ""]
  lines += ["### The paper's findings", "",
            "| finding | verdict | numbers | rule |", "|---|---|---|---|"]
  for f in decided:
    lines.append(f"| {_md_escape(f['finding'])} | **{f['verdict']}** | "
                 f"{_md_escape(f['numbers'])} | {_md_escape(f['rule'])} |")
    if "did_verdict" in f:  # The same finding, net of the start.
      lines.append(f"| ... net of the start (stated belief) | "
                   f"**{f['did_verdict']}** | {_md_escape(f['did_numbers'])}"
                   f" | {_md_escape(f['did_rule'])} |")
  lines += _error_markdown(list(errors))
  lines += _uncorrected_markdown(raw)
  lines += cost_markdown(rows, earlier)
  return "\n".join(lines) + "\n"


def _previous(path: Path) -> dict[str, Any] | None:
  """The results.json this publication writes over, if it can be read (its
  runs are what the new ones are shown beside)."""
  try:
    data = json.loads(path.read_text(encoding="utf-8"))
  except (OSError, ValueError):
    return None
  return data if isinstance(data, dict) else None


def publish(paths: Sequence[Path], out: Path, matcher_factory=None,
            notes: str | None = None) -> Path:
  """Writes out/README.md, out/results.json and out/figures/; returns the
  README's path. `notes`: the researcher's own reading (Markdown), put
  after the model paragraph under a heading of its own, so that what the
  numbers cannot show stands on the page they are read from."""
  groups = collect(paths, matcher_factory)
  out.mkdir(parents=True, exist_ok=True)
  (out / "figures").mkdir(exist_ok=True)
  runs_json, groups_json, parts = [], [], []
  earlier_json: list[dict[str, Any]] = []
  previous = _previous(out / "results.json")
  drawn: set[str] = set()
  for g in groups:
    rows = [dict(cost(m), condition=g.key[1], endpoint=g.key[2])
            for ms in g.runs.values() for m in ms]
    runs_json.extend(rows)
    earlier = earlier_runs(previous, rows)
    earlier_json.extend(earlier)
    decided = findings.decide_findings(g.runs, g.design)
    pictures = publish_figures.draw_group(g.runs, out / "figures", g.slug)
    drawn.update(Path(p).name for p, _ in pictures)
    errors = measurement_error(g)
    town, town_pictures, town_json = publish_town.places_section(
        g.runs, out / "figures", g.slug, g.label)
    drawn.update(Path(p).name for p in town_pictures)
    groups_json.append({
        "scenario": g.key[0], "condition": g.key[1], "endpoint": g.key[2],
        "findings": decided,
        "corrected": findings.final_estimates(g.runs),
        "measurement_error": errors, "not_corrected": uncorrected(g),
        "figures": [p for p, _ in pictures] + town_pictures,
        **({"places": town_json} if town_json else {})})
    said, said_json = publish_said.said_section(
        g.runs, {t.id: t.text for ms in g.runs.values() for m in ms[:1]
                 for t in m.run.targets})
    groups_json[-1].update(said_json)
    parts.append(_group_markdown(g, decided, pictures, rows, errors,
                                 uncorrected(g), earlier)
                 + "\n".join(said + town) + ("\n" if said or town else ""))
  compared, compared_json = publish_conditions.conditions_section(
      groups, out / "figures")
  drawn.update(Path(r["figure"]).name for r in compared_json
               if "figure" in r)
  if compared:
    parts.append("\n".join(compared))
  curve, curve_json = publish_town.tipping_section(
      {g.key: g for g in groups}, out / "figures")
  if curve_json:
    drawn.add(Path(curve_json["figure"]).name)
    parts.append("\n".join(curve))
  # A figure of an earlier publication that this one did not draw (another
  # group's name, a target no longer measured) would sit beside the new
  # ones as if it were of these runs.
  for old in (out / "figures").glob("*.png"):
    if old.name not in drawn:
      old.unlink()
  (out / "results.json").write_text(json.dumps(run_metrics.json_safe(
      {"runs": runs_json, "groups": groups_json,
       **({"earlier_runs": earlier_json} if earlier_json else {}),
       **({"conditions": compared_json} if compared_json else {}),
       **({"tipping": curve_json} if curve_json else {})}), indent=1,
      ensure_ascii=False) + "\n", encoding="utf-8")
  header = ["# Results", "",
            "Written by `crsec report --publish` from "
            + ", ".join(f"`{_md_escape(Path(p).name)}`" for p in paths)
            + ". Shares are of the agents present (all of them where nobody "
            "arrives or leaves); *corrected* estimates undo the "
            "matcher's (belief) and the referee's (behaviour) measured error "
            "(Rogan-Gladen, 95% interval carrying that error and the runs; "
            "docs/metrics.md). Each finding is decided by the rule beside "
            "it, a sequential test on one number per seed (docs/metrics.md);"
            " **cannot tell** when runs are incomplete, too few, or the "
            "seeds do not clear the line at the look's level, with about "
            "how many seeds would. `results.json` holds every number.", "", model_paragraph(groups)]
  if notes:
    header += ["## The researcher's reading", "", notes, ""]
  readme = out / "README.md"
  readme.write_text("\n".join(header) + "\n" + "\n".join(parts),
                    encoding="utf-8")
  return readme

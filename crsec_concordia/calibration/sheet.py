"""A labelling sheet: a venue with no labelled cases made measurable by hand.

A venue written fresh has no probe file, so its referee's error is
unknown and its behaviour shares raw. Its own run holds what is needed:
every action with the tags the run's referee gave it, and every conflict
an agent detected. `write` lays them out as a CSV a person fills (one row
per distinct action, one per conflict): the true behaviour ids of an
action (`true_tags`: ids separated by spaces, or `none`), and whether a
conflict's action really breaks its norm (`breaks_norm`: yes or no); a row
left empty is not counted. `read` takes the filled sheet back into a
calibration entry for the run's model and venue (store.py): the referee's
answers are the run's own tags, so reading it needs no model. The run
directory is named in every row (`run`), whence the model's identity and
the venue's behaviours.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from crsec_concordia import observations
from crsec_concordia.calibration import policy as policy_lib
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.errors import UserError
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.format import ACTION, CONFLICT

SHEET_COLUMNS = ("kind", "step", "actor", "action", "referee_tags",
                 "true_tags", "norm", "observer", "breaks_norm", "run")
NO_TAG = "none"
YES, NO = ("yes", "y", "true", "1"), ("no", "n", "false", "0")


def rows_of(run: reading.Run) -> list[dict[str, str]]:
  """The sheet's rows of a run: each action once (the first time it is
  written; one carried on unchanged adds nothing, nor a failed answer's
  marker), then each conflict."""
  rows, seen = [], set()
  for r in run.records:
    if r.get("kind") != ACTION or r.get("continued"):
      continue
    key = (r.get("actor"), r.get("action"))
    # A failed answer's marker is no action of the agent's to label.
    if (key in seen or not r.get("action")
        or observations.is_no_action(str(r["action"]))):
      continue
    seen.add(key)
    rows.append({"kind": "action", "step": str(r.get("step", "")),
                 "actor": str(r.get("actor", "")),
                 "action": str(r.get("action", "")),
                 "referee_tags": (" ".join(r.get("behaviours") or ())
                                  or NO_TAG)})
  for r in run.records:
    if r.get("kind") == CONFLICT:
      rows.append({"kind": "conflict", "step": str(r.get("step", "")),
                   "actor": str(r.get("actor", "")),
                   "action": str(r.get("behaviour", "")),
                   "norm": str(r.get("norm", "")),
                   "observer": str(r.get("agent", ""))})
  return [{c: row.get(c, "") for c in SHEET_COLUMNS} | {"run": str(run.path)}
          for row in rows]


def write(run_dir: Path, out: Path) -> tuple[Path, reading.Run, int]:
  """The run's labelling sheet at `out`: (its path, the run, its rows)."""
  run = reading.read_run(run_dir)
  run.path = run.path.resolve()
  rows = rows_of(run)
  if not rows:
    raise UserError(f"{run_dir}: the run holds no action to label; label a "
                    "run that played at least one step")
  try:
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8", newline="") as f:
      writer = csv.DictWriter(f, fieldnames=SHEET_COLUMNS)
      writer.writeheader()
      writer.writerows(rows)
  except OSError as e:
    raise UserError(f"--out {out}: cannot write there ({e.strerror}); pass "
                    "a file in a directory you can write to") from None
  return out, run, len(rows)


def _rows(path: Path) -> list[dict[str, str]]:
  try:
    with open(path, encoding="utf-8-sig", newline="") as f:
      reader = csv.DictReader(f)
      missing = [c for c in SHEET_COLUMNS if c not in (reader.fieldnames or ())]
      if missing:
        raise UserError(f"{path}: not a labelling sheet (no column "
                        f"{', '.join(missing)}); write one with crsec "
                        "calibrate --sheet RUN_DIR --out SHEET.csv")
      return list(reader)
  except OSError as e:
    raise UserError(f"{path}: cannot be read ({e.strerror}); pass the sheet "
                    "`crsec calibrate --sheet` wrote") from None
  except (csv.Error, UnicodeDecodeError) as e:
    raise UserError(f"{path}: not a CSV labelling sheet ({e}); write one "
                    "with crsec calibrate --sheet RUN_DIR") from None


def _run_of(path: Path, rows: list[dict[str, str]]) -> reading.Run:
  runs = {r["run"] for r in rows}
  if len(runs) != 1:
    raise UserError(f"{path}: rows of {len(runs)} runs; a sheet labels one "
                    "run's actions (write one per run)")
  return reading.read_run(runs.pop())


def _problems(rows: list[dict[str, str]], known: dict[str, str]
              ) -> list[str]:
  problems = []
  for line, row in enumerate(rows, start=2):
    if row["kind"] == "action":
      ids = (row["true_tags"] or "").replace(",", " ").split()
      problems += [f"line {line}: {i!r} is not a behaviour of the venue "
                   f"(one of: {', '.join(known)}, or {NO_TAG})"
                   for i in ids if i != NO_TAG and i not in known]
      if NO_TAG in ids and len(ids) > 1:
        problems.append(f"line {line}: {NO_TAG} with behaviour ids; give one "
                        "or the other")
    elif row["kind"] == "conflict":
      said = (row["breaks_norm"] or "").strip().lower()
      if said and said not in YES + NO:
        problems.append(f"line {line}: breaks_norm {row['breaks_norm']!r} "
                        "is not yes or no")
    else:
      problems.append(f"line {line}: kind {row['kind']!r} is not action or "
                      "conflict")
  return problems


def read(path: Path) -> tuple[ModelIdentity, dict[str, Any]]:
  """The filled sheet as (the run's model identity, its venue's
  calibration entry); every problem on a line of its own (UserError)."""
  rows = _rows(path)
  if not rows:
    raise UserError(f"{path}: the sheet has no rows; write one with crsec "
                    "calibrate --sheet RUN_DIR")
  run = _run_of(path, rows)
  known = run.behaviours
  problems = _problems(rows, known)
  if problems:
    raise UserError("\n".join(f"{path}: {p}" for p in problems))
  cases = [{"actor": r["actor"], "action": r["action"],
            "truth": sorted(set(r["true_tags"].replace(",", " ").split())
                            - {NO_TAG}),
            "tags": sorted(set(r["referee_tags"].split()) - {NO_TAG})}
           for r in rows if r["kind"] == "action" and r["true_tags"].strip()]
  judged = [r["breaks_norm"].strip().lower() in YES for r in rows
            if r["kind"] == "conflict" and r["breaks_norm"].strip()]
  if not cases and not judged:
    raise UserError(f"{path}: no row is labelled; fill true_tags (ids or "
                    f"{NO_TAG}) or breaks_norm (yes or no), then read it "
                    "again")
  counts = policy_lib.tag_counts((c["truth"], c["tags"]) for c in cases)
  model = reading.referee_model(run.run)
  entry = {
      "scenario": str(run.scenario.get("name")), "labels": "sheet",
      "prompts": model.get("judgement_prompts"), "behaviours": dict(known),
      "cases": cases, "sheet": str(path), "run": str(run.path),
      "summary": {
          "referee": {"p": policy_lib.precision(counts),
                      "r": policy_lib.recall(counts), "n": len(cases)},
          # Of the conflicts agents detected, those that break their norm:
          # DetectConflict's precision (its misses are not in a run).
          "conflicts_detected": {"labelled": len(judged),
                                 "breaches": sum(judged)}}}
  return ModelIdentity.of_described(model), entry


def merged(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
  """A venue's entry with a sheet's cases: its probe cases kept, an
  earlier sheet's replaced."""
  if not old:
    return new
  kept = [c for c in old.get("cases") or () if "tags" not in c]
  return {**new, "cases": kept + new["cases"],
          "labels": "probes and sheet" if kept else "sheet"}

"""Whether a run asks a place's slot's questions together: `--referee-batched`
and `--conflicts-batched`.

Asking about a place's new actions in one call (the referee's,
game_masters/referee/batch.py; DetectConflict's distinct questions,
operations/detect_conflict_batch.py) costs a fraction of the calls of
asking about each, but whether a model judges as well that way is a
measured fact of that model, not a given: `crsec calibrate --batch-sizes`
(and bench/judgement_probe.py `--batch-sizes ... --record-batching`) asks
every labelled venue's cases both ways and keeps, per operation, model
and batch prompts, each venue's paired difference and the rules' verdicts
(docs/calibration.md, "A place's slot judged together"): the person's own
in their calibration directory (`user_record`), the embedded model's in
the package (RECORD). With no flag (`auto`), a run batches where that
measurement says nothing was lost, the person's own entry first: on a
measured venue by its own verdict (batched not shown worse on its cases),
on any other venue, or one whose cases cannot show a loss (nothing found
asked alone), by the stricter verdict pooled over every measured venue;
a model nobody measured batched is asked one question at a time, as its
answers were never shown to hold batched. The flags decide it
outright. The choice lands in the params (config.json: a resumed run
keeps it) and in run.json, naming the person's file when it decided.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crsec_concordia.calibration import store
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.calibration.run_policy import AUTO
from crsec_concordia.errors import UserError

# The shipped measurements (the embedded model's), one entry per model
# identity and batch prompts.
RECORD = store.SHIPPED / "batching.json"
RECORD_FORMAT = 1
# The operations measured batched (an entry's `op`).
REFEREE, CONFLICTS = "referee", "conflicts"
FLAGS = {REFEREE: "--referee-batched", CONFLICTS: "--conflicts-batched"}


@dataclasses.dataclass(frozen=True)
class Batching:
  """Whether the referee judges a place's slot together, and why."""
  on: bool
  source: str

  def describe(self) -> dict[str, Any]:
    """What run.json records of it."""
    return {"on": self.on, "source": self.source}


def user_record() -> Path:
  """The person's own measurements (`crsec calibrate --batch-sizes`
  writes them there), read before the package's."""
  return store.user_dir() / RECORD.name


def read(path: Path = RECORD) -> list[dict[str, Any]]:
  """The measurements kept in `path` (none if it does not exist; one that
  cannot be read is a UserError naming the fix)."""
  if not path.is_file():
    return []
  try:
    return list(json.loads(path.read_text(encoding="utf-8"))["entries"])
  except (OSError, ValueError, KeyError, TypeError) as e:
    raise UserError(f"{path}: not a record of batched measurements ({e!r});"
                    " remove it, or measure again: crsec calibrate "
                    "--batch-sizes M L") from None


def _same(entry: Mapping[str, Any], identity: ModelIdentity,
          batch_prompts: str, op: str) -> bool:
  return (ModelIdentity.from_dict(entry["model"]).same_model(identity)
          and entry.get("batch_prompts") == batch_prompts
          and entry.get("op", REFEREE) == op)


def _matching(entries: Sequence[Mapping[str, Any]], identity: ModelIdentity,
              batch_prompts: str, op: str) -> Mapping[str, Any] | None:
  return next((e for e in entries if _same(e, identity, batch_prompts, op)),
              None)


def venue_name(venue: Any) -> str:
  """A venue's name: a Scenario's, a scenario file's stem, or the name."""
  if not isinstance(venue, str):
    return venue.name
  return Path(venue).stem if venue.endswith(".yaml") else venue


def batching_for(choice: bool | None, identity: ModelIdentity, venue: Any,
                 batch_prompts: str, op: str = REFEREE,
                 entries: Sequence[Mapping[str, Any]] | None = None
                 ) -> Batching:
  """The run's batching of `op`: `choice` (True or False) as given, else
  (None, `auto`) what the measurement of `identity` in the batch prompts
  whose hash is `batch_prompts` says of `venue`."""
  if choice is not None:
    flag = FLAGS[op]
    return Batching(bool(choice), flag if choice
                    else flag.replace("--", "--no-", 1))
  entry, mine = _found(identity, batch_prompts, op, entries)
  if entry is None:
    return Batching(False, f"{AUTO}: nobody measured {identity.name} "
                    "batched in these batch prompts")
  whose = "" if mine is None else f" (your measurement, {mine})"
  name = venue_name(venue)
  measured = entry["venues"].get(name)
  if measured is not None and measured["keeps"] is not None:
    verdict = bool(measured["keeps"])
    return Batching(verdict, f"{AUTO}: {name}'s labelled cases "
                    + ("held batched" if verdict else "lost accuracy batched")
                    + whose)
  # A venue nobody labelled, or one whose cases cannot show a loss
  # (nothing found asked alone: paired.BatchRule.venue_verdict).
  mute = "" if measured is None else (
      f"{name}'s labelled cases cannot tell (nothing found asked alone); ")
  passes = bool(entry["pooled"]["passes"])
  return Batching(passes, f"{AUTO}: {mute}the measured venues pooled "
                  + ("held batched" if passes else "lost accuracy batched")
                  + whose)


def _found(identity: ModelIdentity, batch_prompts: str, op: str,
           entries: Sequence[Mapping[str, Any]] | None
           ) -> tuple[Mapping[str, Any] | None, Path | None]:
  """The measurement of `op` by `identity` in these batch prompts, and the
  person's file it came from (None: the package's, or `entries` given)."""
  if entries is not None:
    return _matching(entries, identity, batch_prompts, op), None
  mine = user_record()
  entry = _matching(read(mine), identity, batch_prompts, op)
  if entry is not None:
    return entry, mine
  return _matching(read(RECORD), identity, batch_prompts, op), None


def record(path: Path, identity: ModelIdentity, batch_prompts: str,
           venues: Mapping[str, Mapping[str, Any]],
           pooled: Mapping[str, Any], op: str = REFEREE) -> Path:
  """Keeps a measurement of `op` in `path`, replacing one of the same
  model and batch prompts; `venues`: {name: figures with `keeps`},
  `pooled`: figures with `passes`."""
  entries = [e for e in read(path)
             if not _same(e, identity, batch_prompts, op)]
  entries.append({"op": op, "model": identity.to_dict(),
                  "batch_prompts": batch_prompts, "venues": dict(venues),
                  "pooled": dict(pooled)})
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(json.dumps({"format": RECORD_FORMAT, "entries": entries},
                             indent=1, sort_keys=True) + "\n",
                  encoding="utf-8")
  return path

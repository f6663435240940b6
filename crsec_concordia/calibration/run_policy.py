"""Which of the referee's structures a run applies: `--referee-policy`.

The structures were built against the embedded model, and each can refuse
a right answer of another model, so a run names its policy: `all-on`
(every structure, as the embedded model's recorded runs and the golden
replay were made), `trusting` (none that can refuse an answer), `calibrated`
(the policy `crsec calibrate` chose from this model's own measured error,
read from its calibration: same name, endpoint kind and judgement prompts),
or a JSON file of switches (`RefereePolicy.to_dict()`'s form). The default,
`auto`, keeps every structure for the embedded model and for a model a
program hands over (whose author composes its own referee), and gives a
model behind an endpoint its own calibration's choice, or, measured by
nobody, `trusting`: no structure tuned to another model refuses its
answers. The choice lands in the game master's params (config.json), so a
resumed run keeps it, and in run.json, whose policy the corrected
estimates replay on the model's calibration.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crsec_concordia.calibration import store
from crsec_concordia.calibration.identity import (EMBEDDED, GIVEN,
                                                  ModelIdentity)
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.errors import UserError

AUTO, ALL_ON, TRUSTING, CALIBRATED = ("auto", "all-on", "trusting",
                                      "calibrated")
NAMES = (AUTO, ALL_ON, TRUSTING, CALIBRATED)
DEFAULT = AUTO
PARAM = "referee_policy"  # The game master's param (game_masters/prefab.py).


@dataclasses.dataclass(frozen=True)
class Chosen:
  """A run's referee policy and where it came from (`source`: the choice's
  name, and the file it was read from if any)."""
  policy: RefereePolicy
  source: str

  def describe(self) -> dict[str, Any]:
    """What run.json records of it."""
    return {"source": self.source, "structures": list(
        self.policy.structures())}


def _from_file(path: Path) -> Chosen:
  try:
    data = json.loads(path.read_text(encoding="utf-8"))
    return Chosen(RefereePolicy.from_dict(data), str(path))
  except OSError as e:
    raise UserError(f"--referee-policy {path}: cannot be read "
                    f"({e.strerror}); give {', '.join(NAMES)} or a JSON "
                    "file of switches") from None
  except ValueError as e:
    raise UserError(f"--referee-policy {path}: {e}; write every switch "
                    "as true or false") from None


def calibrated(identity: ModelIdentity, venue: str,
               entries: Sequence[Mapping[str, Any]] | None = None) -> Chosen:
  """The policy chosen from `identity`'s own calibration: the venue's
  entry if it has one, else any of its venues' (`choose` pools them all,
  so every entry of one calibration holds the same)."""
  found = [e for e in (store.entries() if entries is None else entries)
           if ModelIdentity.from_dict(e["model"]) == identity
           and e.get("chosen_policy")]
  if not found:
    raise UserError(
        f"--referee-policy {CALIBRATED}: no calibration of {identity} with "
        f"a chosen policy (prompts {identity.prompts}); run `crsec calibrate` "
        f"with the same model first, or pass --referee-policy {ALL_ON} or "
        f"{TRUSTING}")
  entry = next((e for e in found if e.get("scenario") == venue), found[0])
  return Chosen(RefereePolicy.from_dict(entry["chosen_policy"]),
                f"{CALIBRATED} ({entry['path']})")


def _auto(identity: ModelIdentity, venue: str,
          embedder: str | None = None) -> Chosen | None:
  """Every structure for the embedded model and a given one; an endpoint's
  model its calibration's choice, else trusting(). `embedder`: the name of
  an embedder nobody measured, with which no pair (model, embedder) was
  measured to gain from a structure: trusting()."""
  if embedder is not None:
    return Chosen(RefereePolicy.trusting(),
                  f"{AUTO}: {TRUSTING} (no thresholds measured for the "
                  f"embedder {embedder})")
  if identity.endpoint in (EMBEDDED, GIVEN):
    return None
  try:
    found = calibrated(identity, venue)
  except UserError:
    return Chosen(RefereePolicy.trusting(),
                  f"{AUTO}: {TRUSTING} (no calibration of {identity})")
  return dataclasses.replace(found, source=f"{AUTO}: {found.source}")


def resolve(choice: str | Chosen | None, identity: ModelIdentity, venue: str,
            unmeasured_embedder: str | None = None) -> Chosen | None:
  """The named policy (a Chosen one as it is: a sweep's driver resolves
  them; None: `auto`), or None for every structure (the game master's
  default, with nothing added to its params: runs made before the choice
  existed replay byte for byte)."""
  if isinstance(choice, Chosen):
    return choice
  if choice is None or choice == AUTO:
    return _auto(identity, venue, unmeasured_embedder)
  if choice == ALL_ON:
    return None
  if choice == TRUSTING:
    return Chosen(RefereePolicy.trusting(), TRUSTING)
  if choice == CALIBRATED:
    return calibrated(identity, venue)
  path = Path(choice)
  if path.suffix != ".json" and not path.is_file():
    raise UserError(f"--referee-policy {choice!r}: give one of "
                    f"{', '.join(NAMES)}, or a JSON file of switches")
  return _from_file(path)


def of_run(info: Mapping[str, Any]) -> RefereePolicy | None:
  """The policy a run's run.json names (`referee_policy`), or None: every
  structure the run's code had (its records say which)."""
  named = info.get("referee_policy")
  if not named:
    return None
  on = set(named.get("structures") or ())
  return RefereePolicy(**{n: n in on for n in RefereePolicy.names()})


def of_config(config: Mapping[str, Any]) -> RefereePolicy | None:
  """The policy a run's config.json gave its game master, if any."""
  for instance in config.get("instances", ()):
    if instance.get("role") == "game_master" and PARAM in instance.get(
        "params", {}):
      return RefereePolicy.from_dict(instance["params"][PARAM])
  return None

"""Which of the referee's structures a run applies: `--referee-policy`.

The structures were built against the embedded model, and each can refuse
a right answer of another model, so a run names its policy: `all-on`
(every structure, as the embedded model's recorded runs and the golden
replay were made), `trusting` (none that can refuse an answer), `calibrated`
(the policy `crsec calibrate` chose from this model's own measured error,
read from its calibration: same name, endpoint kind and judgement prompts),
or a JSON file of switches (`RefereePolicy.to_dict()`'s form). The default,
`auto`, gives the embedded model every structure on a venue with labelled
cases of its own (as it was measured there), and on any other venue the
default chosen from its answers by leave-one-venue-out over the shipped
venues' labelled cases (data/default_policy.json,
bench/referee_heldout.py); a model a program hands over every structure
(its author composes its own referee); a model behind an endpoint its own
calibration's choice, or, measured by nobody, `trusting`: no structure
tuned to another model refuses its answers. The choice lands in the game
master's params (config.json), so a resumed run keeps it, and in run.json,
whose policy the corrected estimates replay on the model's calibration.
`settings` then builds what the referee applies, the policy with the
embedder's thresholds and its near tie, in one place for the game master,
the probe runner, `crsec calibrate` and the bench (`for_venue`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crsec_concordia.calibration import probes, store
from crsec_concordia.calibration.identity import (EMBEDDED, GIVEN,
                                                  ModelIdentity)
from crsec_concordia.calibration.policy import RefereePolicy
from crsec_concordia.embedding.records import SimilarityThresholds
from crsec_concordia.errors import UserError
from crsec_concordia.scenarios import (Scenario, ScenarioError,
                                       builtin_path)

AUTO, ALL_ON, TRUSTING, CALIBRATED = ("auto", "all-on", "trusting",
                                      "calibrated")
NAMES = (AUTO, ALL_ON, TRUSTING, CALIBRATED)
DEFAULT = AUTO
PARAM = "referee_policy"  # The game master's param (game_masters/prefab.py).
# The game master's param that turns RefereeSettings.batched on (absent:
# off, so a run's config.json is as it was without it).
BATCHED_PARAM = "referee_batched"
# The policy chosen by leave-one-venue-out for a venue with no labelled
# cases of its own (written by bench/referee_heldout.py --write).
DEFAULT_POLICY = store.SHIPPED / "default_policy.json"


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


def held_out_default() -> Chosen:
  """The policy for a venue with no labelled cases of its own: each
  structure on only where the F1 summed over the shipped venues' held-out
  folds is higher with it (docs/calibration.md)."""
  data = json.loads(DEFAULT_POLICY.read_text(encoding="utf-8"))
  return Chosen(RefereePolicy.from_dict(data["policy"]),
                f"{AUTO}: the held-out default ({DEFAULT_POLICY.name})")


def _venue_name(venue: str | Scenario) -> str:
  if not isinstance(venue, str):  # A Scenario, or anything named like one.
    return venue.name
  return Path(venue).stem if venue.endswith(".yaml") else venue


def _shipped(venue: str | Scenario) -> bool:
  """Whether the venue is a shipped scenario (not a file of the same name
  elsewhere)."""
  name = _venue_name(venue)
  try:
    path = builtin_path(name)
  except ScenarioError:
    return False
  if not isinstance(venue, str):
    source = getattr(venue, "source_path", None)
  else:
    source = Path(venue) if venue.endswith(".yaml") else None
  return source is None or Path(source).resolve() == path.resolve()


def labelled(venue: str | Scenario, identity: ModelIdentity) -> bool:
  """Whether the venue has labelled cases of its own: a shipped venue with
  a probe file, or one this model was calibrated on (its probes beside it,
  or a labelled sheet). The held-out venues (bench/heldout/) stand for
  venues nobody labelled until a calibration of them is made."""
  name = _venue_name(venue)
  if name in probes.probed_venues() and _shipped(venue):
    return True
  return any(e.get("scenario") == name and (e["model"].get("name"),
             e["model"].get("endpoint")) == (identity.name, identity.endpoint)
             for e in store.entries())


def _auto(identity: ModelIdentity, venue: str | Scenario,
          embedder: str | None = None) -> Chosen | None:
  """The embedded model: every structure on a venue with labelled cases of
  its own, the held-out default elsewhere; a given one every structure; an
  endpoint's model its calibration's choice, else trusting(). `embedder`:
  the name of an embedder nobody measured, with which no pair (model,
  embedder) was measured to gain from a structure: trusting()."""
  if embedder is not None:
    return Chosen(RefereePolicy.trusting(),
                  f"{AUTO}: {TRUSTING} (no thresholds measured for the "
                  f"embedder {embedder})")
  if identity.endpoint == GIVEN or (identity.endpoint == EMBEDDED
                                    and labelled(venue, identity)):
    return None
  if identity.endpoint == EMBEDDED:
    return held_out_default()
  try:
    found = calibrated(identity, _venue_name(venue))
  except UserError:
    return Chosen(RefereePolicy.trusting(),
                  f"{AUTO}: {TRUSTING} (no calibration of {identity})")
  return dataclasses.replace(found, source=f"{AUTO}: {found.source}")


def resolve(choice: str | Chosen | None, identity: ModelIdentity,
            venue: str | Scenario, unmeasured_embedder: str | None = None
            ) -> Chosen | None:
  """The named policy (a Chosen one as it is: a sweep's driver resolves
  them; None: `auto`) for `venue` (a scenario, its name or its file), or
  None for every structure (the game master's default, with nothing added
  to its params: runs made before the choice existed replay byte for
  byte)."""
  if isinstance(choice, Chosen):
    return choice
  if choice is None or choice == AUTO:
    return _auto(identity, venue, unmeasured_embedder)
  if choice == ALL_ON:
    return None
  if choice == TRUSTING:
    return Chosen(RefereePolicy.trusting(), TRUSTING)
  if choice == CALIBRATED:
    return calibrated(identity, _venue_name(venue))
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


@dataclasses.dataclass(frozen=True)
class RefereeSettings:
  """What the referee applies: its structures and the embedder's
  thresholds they read, the nearest rule's tie among them."""
  policy: RefereePolicy
  floors: SimilarityThresholds
  # The new actions of one place in a slot judged in one call
  # (game_masters/referee/batch.py) rather than one call each. Off by
  # default until the embedded model's accuracy batched is measured
  # against per action on every venue (docs/calibration.md).
  batched: bool = False

  @property
  def tie(self) -> float:
    """The gap to the nearest behaviour's score the nearest rule spares."""
    return 0.0 if self.policy.look_strict else self.floors.near_tie

  def recorded(self) -> dict[str, float | None]:
    """The thresholds a calibration keeps with the answers they gate
    (policy.py replays them; None: an unmeasured embedder's open gate or
    tie, as JSON holds no infinity)."""
    values = {k: getattr(self.floors, k)
              for k in ("tag", "spare_far", "look", "occasion", "near_tie")}
    return {k: v if math.isfinite(v) else None for k, v in values.items()}


def settings(policy: Chosen | RefereePolicy | None,
             floors: SimilarityThresholds, batched: bool = False
             ) -> RefereeSettings:
  """The referee's settings: `policy` as `resolve` gives it or a game
  master's params hold it (None: every structure), with the embedder's
  record of thresholds (`floors`) and so its near tie; `batched`: a
  place's slot judged in one call (RefereeSettings.batched)."""
  if isinstance(policy, Chosen):
    policy = policy.policy
  return RefereeSettings(RefereePolicy.all_on() if policy is None
                         else policy, floors, batched)


def for_venue(venue: str | Scenario, identity: ModelIdentity,
              floors: SimilarityThresholds,
              choice: str | Chosen | None = AUTO, batched: bool = False
              ) -> RefereeSettings:
  """The settings a run of `venue` by the model `identity` applies, with
  the embedder whose record is `floors`: what the probe runner, `crsec
  calibrate` and the bench score a venue under (`batched`: a place's slot
  judged together, RefereeSettings.batched)."""
  return settings(resolve(choice, identity, venue,
                          None if floors.measured else floors.embedder),
                  floors, batched)

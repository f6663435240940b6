"""The matcher's labelled norms, and the venues they were written for.

`data/norm_labels.jsonl` holds norms written to look like agents' output
(long policy sentences, hedged, conditional, descriptive, place-naming,
wider, compound, near-misses, opposites, unrelated) for the café's three
targets and the community garden's three, each labelled with the targets
it MEANS (the rule in docs/metrics.md) and put, before any rule was tried,
in the `calibration` or the `test` half. A venue's norms are scored against
its targets as the venue's shipped scenario file states them. The held-out
venues' labels (the workrooms' invented custom, tea_crates.yaml) were
written after the rule and its thresholds were chosen and take no part in
choosing or fitting anything: they only measure the chosen rule on a
target no model has read about.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from pathlib import Path
from typing import Any

from crsec_concordia.metrics.classifiers import DATA
from crsec_concordia.rundir.reading import behaviour_texts, target_norms
from crsec_concordia.scenarios import TargetNorm, load_scenario

LABELS_PATH = DATA / "norm_labels.jsonl"
# The scenario whose target norms each venue's labels refer to.
VENUES = {"cafe": "hobbs_cafe", "garden": "community_garden"}
# Venues whose labels only measure the chosen rule, never choose or fit it.
HELD_OUT_VENUES = {"workrooms": "tea_crates"}
SPLITS = ("calibration", "test")


@dataclasses.dataclass(frozen=True)
class LabelledNorm:
  venue: str
  split: str
  kind: str
  targets: tuple[str, ...]
  text: str


def load_items(path: Path = LABELS_PATH) -> list[LabelledNorm]:
  items = []
  for line in Path(path).read_text(encoding="utf-8").splitlines():
    if line.strip():
      d = json.loads(line)
      items.append(LabelledNorm(d["venue"], d["split"], d["kind"],
                                tuple(d["targets"]), d["text"]))
  return items


@functools.cache
def _venue_scenario(venue: str) -> dict[str, Any]:
  return load_scenario({**VENUES, **HELD_OUT_VENUES}[venue]).to_dict()


def venue_targets(venue: str) -> list[TargetNorm]:
  """The venue's target norms as its shipped scenario file states them."""
  return target_norms(_venue_scenario(venue))


def venue_behaviours(venue: str) -> dict[str, str]:
  """The venue's behaviour descriptions (id -> description)."""
  return behaviour_texts(_venue_scenario(venue))


def venue_norms(split: str, path: Path = LABELS_PATH) -> dict[str, int]:
  """Labelled norms per venue in `split`: every one is scored against every
  target of its venue, so a target's negatives are the venue's norms that
  do not mean it."""
  counts = {v: 0 for v in (*VENUES, *HELD_OUT_VENUES)}
  for item in load_items(path):
    if item.split == split:
      counts[item.venue] = counts.get(item.venue, 0) + 1
  return counts

"""`crsec compare --until-decided`: seed pairs added until the findings are
decided.

The compare plays its first seeds (--seeds, at least three), decides the
paper's findings on them at the first look of a group-sequential design
(metrics/present/sequential.py) and, while a finding the venue allows is
still undecided and fewer than --max-seeds seeds have run, adds the next
seed to both arms and looks again. Each look is an ordinary compare of the
seeds so far (runs in place are reused, interrupted ones resumed), and
compare.json's `until_decided` block holds the design, every look's
verdicts and the findings the venue cannot decide, so the same command
continues an interrupted compare at its last look, and `crsec report
--publish` decides the findings with the same design.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crsec_concordia.errors import UserError
from crsec_concordia.metrics.measure.aggregate import CompareMetrics
from crsec_concordia.metrics.present import findings, sequential
from crsec_concordia.metrics.present.sequential import Design
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.format import COMPARE_JSON

BLOCK = "until_decided"


class Looks:
  """One look's decision, made on the compare's metrics; its `block` (the
  dict compare.json holds) gains the look."""

  def __init__(self, design: Design, block: dict[str, Any]):
    self.design = design
    self.block = block
    self.decided: list[dict[str, Any]] = []

  def decide(self, metrics: CompareMetrics) -> None:
    self.decided = findings.decide_findings(metrics.runs, self.design)
    seeds = len(metrics.runs.get("normative", []))
    self.block["looks"] = [look for look in self.block["looks"]
                           if look["seeds"] != seeds] + [{
                               "seeds": seeds, "level": round(
                                   self.design.level(seeds), 6),
                               "findings": {f["finding"]: f["verdict"]
                                            for f in self.decided}}]
    self.block["venue"] = {f["finding"]: f["venue"] for f in self.decided
                           if f.get("venue")}
    self.block["undecided"] = {f["finding"]: f.get("seeds_needed")
                               for f in self.decided
                               if f["finding"] in findings.undecided(
                                   self.decided)}


def design_from(args: argparse.Namespace, first: int) -> Design:
  most = args.max_seeds or max(sequential.MOST, first)
  if first < sequential.FIRST:
    raise UserError(f"--until-decided needs at least {sequential.FIRST} "
                    f"seeds in --seeds for its first look, not {first}; pass "
                    f"e.g. --seeds 1-{sequential.FIRST}")
  if most < first:
    raise UserError(f"--max-seeds {most} is fewer than the {first} seeds of "
                    "--seeds; pass a larger --max-seeds")
  return Design(first=first, most=most)


def _previous(out: Path, design: Design) -> dict[str, Any] | None:
  """The block of a compare this one continues, if its design is this one
  (a design changed after a look would spend its level again)."""
  if not (out / COMPARE_JSON).is_file():
    return None
  block = reading.read_compare(out).manifest.get(BLOCK)
  if not block:
    return None
  planned = Design.from_dict(block["design"])
  if planned != design:
    raise UserError(f"{out} was planned with a first look at {planned.first}"
                    f" and at most {planned.most} seeds; pass --seeds with "
                    f"{planned.first} seeds and --max-seeds {planned.most}, "
                    "or a new --out (a plan changed after a look would spend "
                    "its error again)")
  return block


def until_decided(args: argparse.Namespace, out: Path, seeds: list[int],
                  play: Callable[[list[int], Looks], int]) -> int:
  """Looks until decided or --max-seeds; `play(seeds, looks)` is one
  compare of these seeds that calls `looks.decide` on its metrics."""
  design = design_from(args, len(seeds))
  block = _previous(out, design)
  if block:
    seeds = list(block["seeds"])
    print(f"compare: continuing at the look at {len(seeds)} seeds", flush=True)
  else:
    block = {"design": design.as_dict(), "looks": []}
  while True:
    block["seeds"] = seeds
    looks = Looks(design, block)
    code = play(seeds, looks)
    if code != 0 or not looks.decided:
      return code
    left = findings.undecided(looks.decided)
    _say(len(seeds), looks.decided, left)
    if not left or len(seeds) >= design.most:
      break
    seeds = seeds + [max(seeds) + 1]
  for name, why in block["venue"].items():
    print(f"compare: the venue cannot decide {name!r}: {why}", flush=True)
  for name, needed in block["undecided"].items():
    print(f"compare: undecided at {len(seeds)} seeds (--max-seeds): {name!r};"
          + (f" about {needed} seeds would decide it" if needed else
             " no number of seeds would, if its mean stayed"), flush=True)
  return 0


def _say(seeds: int, decided: list[dict[str, Any]], left: list[str]) -> None:
  told = [f"{f['finding']}: {f['verdict']}" for f in decided
          if f["verdict"] != findings.UNSURE]
  print(f"compare: look at {seeds} seeds: {len(told)} finding(s) decided"
        + (f" ({'; '.join(told)})" if told else "") + f", {len(left)} left",
        flush=True)

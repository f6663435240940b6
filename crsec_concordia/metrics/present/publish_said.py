"""What the agents said, on the published page: stated belief at the start
and the end in each arm with the difference in differences, and the
say-hold-do cells with the say-do gap (docs/metrics.md, "Stated belief"
and "Say, hold, do").

The same blocks the compare report shows (aggregate.py builds them from
each run's measures), written as Markdown and kept in results.json, so
that a published page says how much of a target the agents brought before
the first slot. A group whose runs asked nobody gets no section.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia.metrics.measure import run_metrics, say_hold_do
from crsec_concordia.metrics.measure import say_hold_table, stated_shares
from crsec_concordia.metrics.present import say_hold_report, stated_report
from crsec_concordia.metrics.present.cells import md_escape
from crsec_concordia.metrics.present.templating import Lines

Runs = Mapping[str, Sequence[run_metrics.RunMetrics]]


def _md(cell: Any) -> str:
  return md_escape(" / ".join(cell.items) if isinstance(cell, Lines)
                   else str(cell))


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
  return (["| " + " | ".join(map(_md, header)) + " |",
           "|" + "---|" * len(header)]
          + ["| " + " | ".join(map(_md, r)) + " |" for r in rows])


def said_blocks(runs: Runs) -> dict[str, Any]:
  """{"stated_belief": block, "say_hold_do": {arm: block}}, each only when
  some run asked its agents."""
  out: dict[str, Any] = {}
  stated = {arm: [m.stated for m in ms if m.stated is not None]
            for arm, ms in runs.items()}
  block = stated_shares.stated_block(stated)
  if block.get("asked"):
    out["stated_belief"] = run_metrics.json_safe(block)
  if any(say_hold_do.asked(m.run) for ms in runs.values() for m in ms):
    out["say_hold_do"] = run_metrics.json_safe({
        arm: say_hold_table.block([m.say_hold_do for m in ms])
        for arm, ms in sorted(runs.items())})
  return out


def said_section(runs: Runs, texts: Mapping[str, str]
                 ) -> tuple[list[str], dict[str, Any]]:
  """(Markdown lines, results.json's part) of one group."""
  found = said_blocks(runs)
  lines: list[str] = []
  if "stated_belief" in found:
    s = stated_report.stated_section(found["stated_belief"], texts)
    lines += ["", "### Stated belief, start and end", "",
              "Each agent was asked, before the first slot and after the "
              "last, what rules people here follow; its rules are read by "
              "the norm matcher as held norms are. Shares are of the agents "
              "who answered, entrepreneurs apart (below); corrected for the "
              "matcher's measured error.", ""]
    lines += _table(s["header"], s["rows"])
    lines += ["", f"*{s['held']}*", "",
              *_table(["arm", "phase", "failed", "entrepreneurs",
                       "entrepreneurs stating"], s["apart"])]
  if "say_hold_do" in found:
    groups = list(found["say_hold_do"].items())
    shd = say_hold_report.shd_section(groups, texts)
    lines += ["", "### Say, hold, do", "",
              f"{shd['definition']}.", ""]
    for g in shd["groups"]:
      for t in g["targets"]:
        lines += [f"**{g['label']}: {t['text']}**: say-do gap {t['gap']}",
                  "", *_table(["say", "hold", "do", "agents", "share"],
                              t["cells"]), ""]
  return lines, found

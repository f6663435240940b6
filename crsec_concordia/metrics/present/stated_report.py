"""Stated belief at the start and the end, as the report shows it: the rows
of metrics/stated_belief.csv, the page's table "Stated belief, start and
end", and the reading of the finding "target norms emerge" on the
difference in differences (measure/stated_shares.py).

The finding's held-by-50% rule reads end belief alone, which cannot tell a
norm the society made from one the model and the personas brought: every
agent may state it before meeting anyone. The difference in differences
nets out both what the agents brought (the start) and what the baseline
arm, the same agents without CRSEC, came to state anyway (its change).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from crsec_concordia.interviews.stated_table import PHASES, START
from crsec_concordia.metrics.classifiers.correction import CONFIDENCE
from crsec_concordia.metrics.measure import stated_seeds, stated_shares
from crsec_concordia.metrics.measure.stated_shares import DID, NOT_ASKED, POOLED
from crsec_concordia.metrics.present import sequential
from crsec_concordia.metrics.present.sequential import Design
from crsec_concordia.metrics.present.templating import Lines

STATED_CSV = "stated_belief"
COMPARE_STATED_CSV = "compare_stated_belief"
STATED_COLUMNS_OUT = ["target", "phase", "group", "value", "low", "high",
                      "kind", "raw", "raw_low", "raw_high", "agents", "runs",
                      "held_at_start"]
ARM_ORDER = ("normative", "baseline")
HOLDS_DID, FAILS_DID, UNSURE_DID = "holds", "does not hold", "cannot tell"
HELD_AT_START = ("held at the start: the lower end of its corrected start "
                 "share's 95% interval, pooled over both arms' "
                 "non-entrepreneurs, is above 0, so the agents brought it "
                 "before meeting anyone and its emergence cannot be read "
                 "from end belief alone")


def _arms(block: Mapping[str, Any]) -> list[str]:
  known = list(block.get("runs") or {})
  return [a for a in ARM_ORDER if a in known] + [
      a for a in known if a not in ARM_ORDER]


def _share_row(tid: str, phase: str, arm: str, e: Mapping[str, Any] | None,
               held: bool | None) -> dict[str, Any]:
  e = e or {}
  corrected = e.get("corrected") is not None
  return {"target": tid, "phase": phase, "group": arm,
          "value": e.get("corrected"), "low": e.get("low"),
          "high": e.get("high"),
          "kind": "corrected" if corrected else (
              "raw" if e.get("raw") is not None else NOT_ASKED),
          "raw": e.get("raw"), "raw_low": e.get("raw_low"),
          "raw_high": e.get("raw_high"), "agents": e.get("agents"),
          "runs": e.get("runs"), "held_at_start": held}


def stated_table_rows(block: Mapping[str, Any]) -> pd.DataFrame:
  """Per target: the share per phase and arm, the start pooled over the
  arms (with `held_at_start`), each arm's change and the DiD."""
  out: list[dict[str, Any]] = []
  if not block.get("asked"):
    return pd.DataFrame(columns=STATED_COLUMNS_OUT)
  for tid, t in block["targets"].items():
    for phase in PHASES:
      for arm in _arms(block):
        out.append(_share_row(tid, phase, arm, t["shares"][phase].get(arm),
                              None))
    out.append(_share_row(tid, START, POOLED, t["start_pooled"],
                          bool(t["held_at_start"])))
    for arm, d in [*t["change"].items(), (DID, t.get("did"))]:
      if d is None:
        continue
      out.append({"target": tid, "phase": "did" if arm == DID else "change",
                  "group": arm, "value": d["value"], "low": d["low"],
                  "high": d["high"], "kind": d["kind"], "raw": None,
                  "raw_low": None, "raw_high": None, "agents": None,
                  "runs": None, "held_at_start": None})
  return pd.DataFrame(out, columns=STATED_COLUMNS_OUT)


def _pct(v: Any) -> str:
  return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else (
      f"{100 * float(v):.0f}%")


def _signed(v: Any) -> str:
  return "–" if v is None else f"{100 * float(v):+.0f} pts"


def _share(e: Mapping[str, Any] | None) -> str:
  if not e or e.get("raw") is None:
    return NOT_ASKED
  if e.get("corrected") is not None and e.get("low") is not None:
    return (f"{_pct(e['corrected'])} [{_pct(e['low'])}, {_pct(e['high'])}]"
            f" (raw {_pct(e['raw'])}, n={e['agents']})")
  return (f"{_pct(e['raw'])} [{_pct(e['raw_low'])}, {_pct(e['raw_high'])}]"
          f" raw, n={e['agents']}")


def show_difference(d: Mapping[str, Any] | None) -> str:
  if not d or d.get("value") is None:
    return NOT_ASKED if d else "–"
  return (f"{_signed(d['value'])} [{_signed(d['low'])}, "
          f"{_signed(d['high'])}] {d['kind']}")


def stated_section(block: Mapping[str, Any] | None, texts: Mapping[str, str]
            ) -> dict[str, Any]:
  """What the partial _stated.html.j2 shows."""
  if not block or not block.get("asked"):
    return {"asked": False, "header": [], "rows": [], "apart": []}
  arms = _arms(block)
  header = ["target norm"] + [f"{arm} {phase}" for phase in PHASES
                              for arm in arms]
  header += [f"{arm} change" for arm in arms]
  with_did = any(t.get("did") for t in block["targets"].values())
  header += ["difference in differences"] if with_did else []
  header += ["at the start"]
  table = []
  for tid, t in block["targets"].items():
    row: list[Any] = [Lines([texts.get(tid, tid), tid])]
    row += [_share(t["shares"][phase].get(arm)) for phase in PHASES
            for arm in arms]
    row += [show_difference(t["change"].get(arm)) for arm in arms]
    row += [show_difference(t.get("did"))] if with_did else []
    row.append("held at the start" if t["held_at_start"] else "–")
    table.append(row)
  apart = []
  for arm in arms:
    for phase in PHASES:
      a = block["apart"][arm][phase]
      stating = ", ".join(f"{tid} {n}" for tid, n in
                          a["entrepreneurs_stating"].items())
      apart.append([arm, phase, str(a["failed"]), str(a["entrepreneurs"]),
                    stating or "–"])
  return {"asked": True, "header": header, "rows": table, "apart": apart,
          "held": HELD_AT_START}


def did_finding(runs: Mapping[str, Sequence[Any]], design: Design
                ) -> dict[str, Any]:
  """The finding "target norms emerge" read on the DiD, for
  findings._emerge, by the findings' own sequential rule: per target, the
  seeds' differences (stated_seeds.py) shown > 0 by the one-sided t bound
  at the look's level (spread floored at the sampling one), and the pooled
  bootstrap interval at the same level above 0 (it carries the matcher's
  uncertainty, as _share_part's does); holds when every target's is,
  does not hold when one target's is shown < 0 both ways."""
  by_arm = {arm: [m.stated for m in ms if m.stated is not None]
            for arm, ms in runs.items()}
  rule = ("per target and seed, (normative end - start) - (baseline end - "
          "start) of the stated-belief shares (corrected at the matcher's "
          "point figures): holds when every target's mean is shown > 0 at "
          "the look's level and its pooled corrected interval at that level "
          "lies above 0, does not hold when one's is shown < 0 both ways")
  level = design.level(len(runs.get("normative", [])))
  asked = {arm for arm, rs in by_arm.items() if any(r.asked for r in rs)}
  out = {"did_rule": rule, "did_verdict": UNSURE_DID}
  if not {"normative", "baseline"} <= asked:
    out["did_numbers"] = (NOT_ASKED if not asked else
                          f"only the {', '.join(sorted(asked))} arm asked")
    return out
  shown, pooled = stated_shares.differences_at(
      by_arm, (CONFIDENCE, 1.0 - 2 * level if level else CONFIDENCE))
  out["did_numbers"] = "; ".join(f"{tid}: {show_difference(d.get(DID))}"
                                 for tid, d in shown.items())
  if not level:  # No look at this many seeds: nothing is decided.
    return out
  above, below = [], []
  for tid, d in pooled.items():
    values, floor = stated_seeds.seed_differences(by_arm, tid)
    interval = d.get(DID) or {}
    if values.size < 2 or interval.get("low") is None:
      above.append(False)
      below.append(False)
      continue
    up, down = sequential.mean_rule(values, 0.0, floor, level)
    above.append(bool(up) and interval["low"] > 0)
    below.append(bool(down) and interval["high"] < 0)
  if above and all(above):
    out["did_verdict"] = HOLDS_DID
  elif any(below):
    out["did_verdict"] = FAILS_DID
  return out

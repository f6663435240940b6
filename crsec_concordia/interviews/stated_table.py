"""The rules each agent stated before the first slot and after the last, as
a table (light: pandas only, so that `load_run` and the metrics read it
without loading a simulation).

RUN_DIR/stated_belief.csv holds one row per stated rule: its `phase`
("start": after the agents are built, before any event; "end": after the
last slot), the `slot` it was asked after (0 for the start), the agent, its
role and model, the rule's place in the agent's list (`rule_index`, from 0)
and the `rule`. An agent that stated no rule has one row with `rule_index`
-1 and an empty rule; an agent whose question failed has one row with
`rule_index` -1, an empty rule and its `error`. So every agent asked is in
the table, and a failure is never read as "states nothing".
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from crsec_concordia.rundir.format import STATED_BELIEF_CSV

START = "start"
END = "end"
PHASES = (START, END)
STATED_COLUMNS = ["phase", "slot", "agent", "role", "model", "rule_index",
                  "rule", "error"]
# `rule_index` of an agent's one row when it stated no rule or failed.
NO_RULE = -1
# run.json's key: whether the run asked them (the switch, as it ran).
STATED_BELIEF_KEY = "stated_belief"


def read_stated(run_dir: Path | str) -> pd.DataFrame:
  """The run's stated rules (columns STATED_COLUMNS); empty when it asked
  none."""
  path = Path(run_dir) / STATED_BELIEF_CSV
  if not path.is_file():
    return pd.DataFrame(columns=STATED_COLUMNS)
  frame = pd.read_csv(path, dtype=str, keep_default_na=False)
  for column in ("slot", "rule_index"):
    frame[column] = pd.to_numeric(frame[column]).astype(int)
  return frame[STATED_COLUMNS]


def stated_rules(frame: pd.DataFrame, phase: str
                 ) -> dict[str, tuple[str, ...] | None]:
  """{agent: its stated rules in order} for `phase`; None for an agent
  whose question failed (its belief is unknown, not empty)."""
  out: dict[str, tuple[str, ...] | None] = {}
  for agent, rows in frame[frame["phase"] == phase].groupby("agent",
                                                              sort=True):
    if (rows["error"] != "").any():
      out[str(agent)] = None
      continue
    kept = rows[rows["rule_index"] != NO_RULE].sort_values("rule_index")
    out[str(agent)] = tuple(kept["rule"])
  return out

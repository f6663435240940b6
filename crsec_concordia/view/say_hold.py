"""Say, hold, do on the page: each agent's three readings per target
(metrics/measure/say_hold_do.py), shown side by side in its panel.

A reported run whose report wrote them (RUN_DIR/metrics/say_hold_do.csv)
shows the report's readings. Otherwise the view reads them itself, as it
reads belief: SAY is the agent's rules stated after the last slot
(stated_belief.csv) read by the view's matcher (without one, a rule counts
for the targets whose exact wording it is), HOLD the last slot's reading of
its norms, DO the referee's tags and the occasions met, which need no
matcher.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pandas as pd

from crsec_concordia.interviews.stated_table import (END, read_stated,
                                                     stated_rules)
from crsec_concordia.metrics.measure import say_hold_do as shd
from crsec_concordia.rundir import format as fmt
from crsec_concordia.view.load import Loaded
from crsec_concordia.view.norms import fold

# Wording -> the target ids it means: the view's reader (belief.py), or the
# exact wordings when it has none.
Reader = Callable[[Sequence[str]], Mapping[str, frozenset[str]]]
# Per agent, per target: [say, hold, do].
Readings = list[list[list[str]]]


def _reported(loaded: Loaded, names: Sequence[str], ids: Sequence[str]
              ) -> Readings | None:
  path = loaded.run.path / fmt.METRICS / f"{shd.SHD_TABLE}.csv"
  if not path.is_file():
    return None
  frame = pd.read_csv(path, dtype=str, keep_default_na=False)
  found = {(r.agent, r.target): [r.say, r.hold, r.do]
           for r in frame.itertuples()}
  if not all((a, t) in found for a in names for t in ids):
    return None  # Written for other agents or targets: read anew.
  return [[found[(a, t)] for t in ids] for a in names]


def _said(loaded: Loaded, ids: Sequence[str], read: Reader
          ) -> dict[str, frozenset[str] | None]:
  rules = stated_rules(read_stated(loaded.run.path), END)
  meant = read([r for said in rules.values() if said for r in said])
  return {agent: None if said is None else
          frozenset(i for r in said for i in meant.get(r, ()) if i in ids)
          for agent, said in rules.items()}


def exact_reader(means: Mapping[str, set[str]]) -> Reader:
  """A reader by exact wording (case and spacing aside)."""
  return lambda texts: {t: frozenset(means.get(fold(t), ())) for t in texts}


def readings(loaded: Loaded, names: Sequence[str], ids: Sequence[str],
             last_hold: Sequence[int], read: Reader) -> Readings:
  """Per agent (in `names`' order), per target (`ids`): [say, hold, do];
  `last_hold`: the last slot's target bit masks (bit i: ids[i])."""
  reported = _reported(loaded, names, ids)
  if reported is not None:
    return reported
  run = loaded.run
  said = _said(loaded, ids, read)
  targets = [t for t in run.targets if t.id in ids]
  done = shd.deed_counts(run, targets)
  out = []
  for k, agent in enumerate(names):
    row = []
    for i, tid in enumerate(ids):
      stated = said.get(agent, ...)
      row.append([
          shd.NOT_ASKED if stated is ... else shd.UNKNOWN if stated is None
          else shd.STATES if tid in stated else shd.SILENT,
          shd.NO_MEMORY if not run.snapshots else
          shd.HOLDS if last_hold and last_hold[k] >> i & 1 else shd.NOT_HELD,
          shd.deed(done.get(tid, {}).get(agent))])
    out.append(row)
  return out

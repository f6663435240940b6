"""The human-evaluation kit: the paper's questionnaire, per agent.

For each agent and each CRSEC operation, up to N input/output pairs from the
run's records (seeded sampling, kept in time order), each to be rated on a
7-point Likert agreement scale: "The output is a reasonable result of this
operation on this input for this agent". The paper's raters gave creation
6.44, sender 5.86, receiver 5.77, observation 5.13, immediate evaluation
5.14, synthesis 5.97, plan 6.43, action 6.40.

The items (an operation's input and output) are questionnaire_items.py's.
"""

from __future__ import annotations

import csv
import io
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crsec_concordia.metrics.present import templating
from crsec_concordia.metrics.present.csv_cells import safe_cell
from crsec_concordia.metrics.present.questionnaire_items import (
    Item, items_for_run)
from crsec_concordia.rundir.reading import Run

# What each operation does, as the raters read it. No venue: `{place}` is
# the scenario's own setting name (the part of its `setting` line before the
# first comma), as in every prompt of the run (docs/design.md).
OPERATIONS: dict[str, str] = {
    "creation": "Creation: the norm entrepreneur writes personal norms "
                "that fit its description and {place}.",
    "sender": "Communication, sender: the agent sees a behaviour, decides "
              "whether it conflicts with one of its norms, and whether to "
              "talk to the person about it.",
    "receiver": "Communication, receiver: after a conversation, the agent "
                "identifies the norm (standard of behaviour) it conveyed.",
    "observation": "Observation: the agent forms thoughts from what it saw "
                   "and identifies a norm in its thoughts.",
    "immediate_evaluation": "Immediate evaluation: the agent accepts or "
                            "rejects a candidate norm (consistent with its "
                            "source? a duplicate? really a norm? in "
                            "conflict with its norms?) and scores it.",
    "synthesis": "Long-term synthesis: the agent replaces several specific "
                 "norms with one abstract norm.",
    "plan": "Planning: the agent plans its time at {place}, weighing its "
            "norms.",
    "action": "Action: what the agent did, given its plan and norms.",
}
QUESTION = ("How much do you agree: the output is a reasonable result of "
            "this operation on this input, for this agent?")
NO_PLACE = "the setting"  # A scenario without a setting line.
LIKERT = ("strongly disagree", "disagree", "somewhat disagree", "neutral",
          "somewhat agree", "agree", "strongly agree")


def place_of(run: Run) -> str:
  """The run's setting name: "Hobbs Cafe" from "Hobbs Cafe, a small café
  ...", "Maple Street Community Garden" from its line."""
  setting = " ".join(str(run.scenario.get("setting") or "").split())
  return setting.split(",")[0].strip() or NO_PLACE


def describe(operation: str, place: str) -> str:
  """The operation's description for raters, at `place`."""
  return OPERATIONS[operation].format(place=place)


def slug(name: str) -> str:
  """A file-name-safe form of an agent's name: never a path, never long."""
  return re.sub(r"[^a-z0-9]+", "-", name.lower())[:60].strip("-") or "agent"


def slugs(agents: Sequence[str]) -> dict[str, str]:
  """A distinct slug per agent. Names can fold to the same slug ("Ana Lee"
  and "ana-lee", any two names in a non-Latin script), and then one agent's
  page and item ids would overwrite the other's."""
  out: dict[str, str] = {}
  for agent in agents:
    base = name = slug(agent)
    n = 2
    while name in out.values():
      name, n = f"{base}-{n}", n + 1
    out[agent] = name
  return out


def sample(items: Sequence[Item], agents: Sequence[str], *, per_op: int = 20,
           seed: int = 0) -> dict[str, list[Item]]:
  """{agent: items}, at most `per_op` per operation, seeded, in time order."""
  by_agent: dict[str, list[Item]] = {}
  names = slugs(agents)
  for agent in agents:
    chosen: list[Item] = []
    for op in OPERATIONS:
      pool = [i for i in items if i.agent == agent and i.operation == op]
      if len(pool) > per_op:
        rng = random.Random(f"{seed}|{agent}|{op}")
        keep = sorted(rng.sample(range(len(pool)), per_op))
        pool = [pool[k] for k in keep]
      for n, item in enumerate(pool, 1):
        item.id = f"{names[agent]}-{op}-{n:02d}"
      chosen.extend(pool)
    by_agent[agent] = chosen
  return by_agent


CSV_FIELDS = ("id", "agent", "operation", "run", "step", "time", "input",
              "output", "question", "rating_1_to_7")


def _csv(items: Sequence[Item]) -> str:
  buffer = io.StringIO()
  writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS)
  writer.writeheader()
  for i in items:
    writer.writerow({k: safe_cell(v) for k, v in {
        "id": i.id, "agent": i.agent, "operation": i.operation,
        "run": i.run, "step": i.step, "time": i.time, "input": i.input,
        "output": i.output, "question": QUESTION, "rating_1_to_7": ""}.items()})
  return buffer.getvalue()


def _agent_html(agent: str, name: str, items: Sequence[Item],
                place: str = NO_PLACE) -> str:
  """The agent's page (templates/questionnaire_agent.html.j2); `name` is
  its slug, the prefix of the answers file the page downloads."""
  operations = [{"title": op.replace("_", " "),
                 "description": describe(op, place),
                 "chosen": [i for i in items if i.operation == op]}
                for op in OPERATIONS]
  return templating.render("questionnaire_agent.html.j2", agent=agent,
                           name=name, question=QUESTION, likert=LIKERT,
                           operations=operations)


def write(runs: Sequence[Run], out_dir: str | Path, *,
          per_op: int = 20, seed: int = 0) -> Path:
  """Writes questionnaire/index.html, one HTML and CSV per agent, all.csv."""
  out = Path(out_dir)
  out.mkdir(parents=True, exist_ok=True)
  agents: list[str] = []
  places: dict[str, str] = {}  # Each agent's, from the first run it is in.
  items: list[Item] = []
  for run in runs:
    for agent in run.agents:
      if agent not in agents:
        agents.append(agent)
        places[agent] = place_of(run)
    items.extend(items_for_run(run))
  chosen = sample(items, agents, per_op=per_op, seed=seed)
  rows: list[dict[str, Any]] = []  # The index's, one per agent.
  everything: list[Item] = []
  names = slugs(list(chosen))
  for agent, agent_items in chosen.items():
    name = names[agent]
    (out / f"{name}.html").write_text(
        _agent_html(agent, name, agent_items, places[agent]),
        encoding="utf-8")
    (out / f"{name}.csv").write_text(_csv(agent_items), encoding="utf-8")
    everything.extend(agent_items)
    rows.append({"agent": agent, "name": name,
                 "counts": [sum(i.operation == op for i in agent_items)
                            for op in OPERATIONS]})
  (out / "all.csv").write_text(_csv(everything), encoding="utf-8")
  index = templating.render(
      "questionnaire_index.html.j2", per_op=per_op, seed=seed,
      titles=[op.replace("_", " ") for op in OPERATIONS], rows=rows)
  (out / "index.html").write_text(index, encoding="utf-8")
  return out

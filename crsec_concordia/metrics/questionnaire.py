"""The human-evaluation kit: the paper's questionnaire, per agent.

For each agent and each CRSEC operation, up to N input/output pairs from the
run's records (seeded sampling, kept in time order), each to be rated on a
7-point Likert agreement scale: "The output is a reasonable result of this
operation on this input for this agent". The paper's raters gave creation
6.44, sender 5.86, receiver 5.77, observation 5.13, immediate evaluation
5.14, synthesis 5.97, plan 6.43, action 6.40.

Where the items come from (docs/design.md record kinds):
  creation             `created`: the agent's persona -> the norm
  sender               `conflict` (+ its `talk_decision`): the observed
                       behaviour and the agent's norm -> conflict, talk or not
  receiver             `candidate` of origin conversation: the conversation
                       -> the norm identified
  observation          `thought`: the actions seen since the agent's last
                       thought -> the thoughts; `candidate` of origin
                       observation: the thoughts -> the norm identified
  immediate_evaluation `verdict`: the candidate and its source -> accepted
                       or rejected, why, type and utility
  synthesis            `synthesis`: the source norms -> the abstract norm
  plan                 `plan`: the agent's qualified norms -> the plan
  action               `action` events of the agent: its current plan item
                       -> what it did and how the game master resolved it
"""

from __future__ import annotations

import csv
import dataclasses
import io
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crsec_concordia.metrics import rundir, templating
from crsec_concordia.metrics.csv_cells import safe_cell

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


@dataclasses.dataclass
class Item:
  run: str
  agent: str
  operation: str
  step: int
  time: str
  input: str
  output: str
  id: str = ""


def place_of(run: rundir.RunData) -> str:
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


def _norm_text(content: Any, type_: Any = None, utility: Any = None) -> str:
  extra = ", ".join(str(x) for x in (
      type_, f"importance {utility}/100" if utility is not None else None)
                    if x)
  return f"{content}" + (f" ({extra})" if extra else "")


def _transcript(conversation: dict[str, Any]) -> str:
  lines = [f"Conversation between {conversation.get('initiator')} and "
           f"{conversation.get('partner')} about "
           f"{conversation.get('topic')}:"]
  for turn in conversation.get("turns") or ():
    lines.append(f"{turn.get('speaker')}: \"{turn.get('text')}\"")
  return "\n".join(lines)


def items_for_run(run: rundir.RunData) -> list[Item]:
  """Every candidate item of every operation in one run."""
  label = run.name
  records = run.records
  index = rundir.norm_index(run)
  personas = {a["name"]: a.get("persona", "")
              for a in run.scenario.get("agents", []) if "name" in a}
  setting = run.scenario.get("setting", "")
  out: list[Item] = []

  def add(agent: str, op: str, record: dict[str, Any], inp: str,
          outp: str) -> None:
    out.append(Item(run=label, agent=agent, operation=op,
                    step=int(record.get("step", 0)),
                    time=str(record.get("time", "")), input=inp.strip(),
                    output=outp.strip()))

  talks = {}
  for r in run.of_kind("talk_decision"):
    talks.setdefault((r.get("agent"), r.get("actor"), r.get("step")), r)
  conversations = run.of_kind("conversation")
  actions = run.of_kind("action")
  plans = run.of_kind("plan")
  last_thought: dict[str, int] = {}

  for r in records:
    kind, agent = r.get("kind"), r.get("agent")
    if kind == "created":
      add(agent, "creation", r,
          f"Agent: {agent}\nDescription: {personas.get(agent, '')}\n"
          f"Setting: {setting}",
          _norm_text(r.get("content"), r.get("type"), r.get("utility")))
    elif kind == "conflict":
      talk = talks.get((agent, r.get("actor"), r.get("step")))
      decision = ("no decision recorded" if talk is None else
                  "talks to them" if talk.get("talk") else
                  "decides not to talk")
      add(agent, "sender", r,
          f"{agent} observes {r.get('actor')}: {r.get('behaviour')}\n"
          f"{agent}'s norm: {r.get('norm')}",
          f"Conflict with \"{r.get('norm')}\": yes; {decision}.")
    elif kind == "candidate" and r.get("origin") == "conversation":
      source = r.get("source_agent")
      talk_with = [c for c in conversations
                   if int(c.get("step", 0)) <= int(r.get("step", 0))
                   and {agent, source} <= {c.get("initiator"),
                                           c.get("partner")}]
      inp = (_transcript(talk_with[-1]) if talk_with
             else str(r.get("source_text") or "(conversation not recorded)"))
      add(agent, "receiver", r, inp,
          _norm_text(r.get("content"), r.get("type"), r.get("utility")))
    elif kind == "candidate" and r.get("origin") == "observation":
      add(agent, "observation", r,
          f"Thoughts: {r.get('source_text') or '(not recorded)'}",
          "Norm identified: " + _norm_text(r.get("content"), r.get("type"),
                                           r.get("utility")))
    elif kind == "thought":
      step = int(r.get("step", 0))
      since = last_thought.get(agent, -1)
      seen = [a for a in actions if since < int(a.get("step", 0)) <= step]
      last_thought[agent] = step
      observed = "\n".join(
          f"[{a.get('time')}] {a.get('narration') or a.get('action')}"
          for a in seen[-8:]) or "(no action recorded since the last thoughts)"
      add(agent, "observation", r, f"Observations:\n{observed}",
          "Thoughts:\n" + "\n".join(f"- {t}" for t in r.get("thoughts") or ()))
    elif kind == "verdict":
      source = index.get((agent, r.get("norm_id")), {})
      inp = f"Candidate norm: {r.get('content')}"
      if source.get("source_text"):
        inp += f"\nFrom: {str(source['source_text'])[:600]}"
      if r.get("accepted"):
        outp = ("Accepted: " + _norm_text(r.get("content"), r.get("type"),
                                          r.get("utility")))
      else:
        outp = f"Rejected: {r.get('reason')}"
        if r.get("detail"):
          outp += f" ({r.get('detail')})"
      add(agent, "immediate_evaluation", r, inp, outp)
    elif kind == "synthesis":
      sources = r.get("sources") or []
      weights = r.get("weights") or []
      lines = []
      for i, norm_id in enumerate(sources):
        content = index.get((agent, norm_id), {}).get("content", norm_id)
        weight = f" (weight {weights[i]})" if i < len(weights) else ""
        lines.append(f"- {content}{weight}")
      add(agent, "synthesis", r, "Specific norms:\n" + "\n".join(lines),
          ("Abstract norm: " + _norm_text(r.get("content"), r.get("type"),
                                          r.get("utility"))
           + ("" if r.get("accepted") else " [rejected by evaluation]")))
    elif kind == "plan":
      snapshot = rundir.snapshot_at(run.snapshots, int(r.get("step", 0)))
      held = rundir.qualified((snapshot or {}).get(agent))
      norms = "\n".join(
          "- " + _norm_text(n["content"], n.get("type"), n.get("utility"))
          for n in held) or "(no norms recorded)"
      plan_lines = "\n".join(
          f"{i.get('start')}-{i.get('end')}: {i.get('activity')}"
          for i in r.get("items") or ())
      observed = [index.get((agent, n), {}).get("content", n)
                  for n in r.get("norms_observed") or ()]
      add(agent, "plan", r, f"{agent}'s norms:\n{norms}",
          f"Plan:\n{plan_lines}\nNorms it says it observes: "
          + ("; ".join(observed) or "none"))

  for a in actions:
    actor = a.get("actor")
    clock = str(a.get("clock", ""))
    current = "(no plan recorded)"
    for p in plans:
      if p.get("agent") != actor or int(p.get("step", 0)) > int(a["step"]):
        continue
      for item in p.get("items") or ():
        if str(item.get("start", "")) <= clock < str(item.get("end", "~")):
          current = (f"{item.get('start')}-{item.get('end')}: "
                     f"{item.get('activity')}")
    add(actor, "action", a, f"Plan item now: {current}",
        f"Attempt: {a.get('action')}\nWhat happened: {a.get('narration')}")
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


def write(runs: Sequence[rundir.RunData], out_dir: str | Path, *,
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

"""The questionnaire's items: each CRSEC operation's input and output, per
agent, read from a run's records.

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
A rater reads the input as the agent had it, so each item shows what the
records say the operation saw, in words, never the prompt. An act that
failed (its record holds the no-action marker) is no action, and a talk
in which nothing was said no conversation: nobody perceived either, and
no rater reads them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from crsec_concordia import observations
from crsec_concordia.rundir import reading
from crsec_concordia.rundir.format import (ACTION, CANDIDATE, CONFLICT,
                                           CONVERSATION, CREATED, PLAN,
                                           SYNTHESIS, TALK_DECISION, THOUGHT,
                                           VERDICT)
from crsec_concordia.rundir.reading import Record, Run


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


@dataclasses.dataclass
class _Records:
  """A run's records as the items are read from them."""
  run: Run
  index: dict[tuple[str, str], dict[str, Any]]  # reading.norm_index
  talks: dict[tuple[Any, Any, Any], Record]     # (agent, actor, step)
  conversations: list[Record]
  actions: list[Record]
  plans: list[Record]
  # Each agent's step of its last thought so far (observation items).
  last_thought: dict[str, int] = dataclasses.field(default_factory=dict)

  def item(self, agent: str, operation: str, record: Record, inp: str,
           outp: str) -> Item:
    return Item(run=self.run.name, agent=agent, operation=operation,
                step=int(record.get("step", 0)),
                time=str(record.get("time", "")), input=inp.strip(),
                output=outp.strip())


def _norm_text(content: Any, type_: Any = None, utility: Any = None) -> str:
  extra = ", ".join(str(x) for x in (
      type_, f"importance {utility}/100" if utility is not None else None)
                    if x)
  return f"{content}" + (f" ({extra})" if extra else "")


def _of(r: Record) -> str:
  """The norm of a record, with its type and utility."""
  return _norm_text(r.get("content"), r.get("type"), r.get("utility"))


def _transcript(conversation: Record) -> str:
  lines = [f"Conversation between {conversation.get('initiator')} and "
           f"{conversation.get('partner')} about "
           f"{conversation.get('topic')}:"]
  for turn in conversation.get("turns") or ():
    lines.append(f"{turn.get('speaker')}: \"{turn.get('text')}\"")
  return "\n".join(lines)


def _creation(rs: _Records, r: Record) -> Item:
  agent = r.get("agent")
  personas = {a["name"]: a.get("persona", "")
              for a in rs.run.scenario.get("agents", []) if "name" in a}
  return rs.item(agent, "creation", r,
                 f"Agent: {agent}\nDescription: {personas.get(agent, '')}\n"
                 f"Setting: {rs.run.scenario.get('setting', '')}", _of(r))


def _sender(rs: _Records, r: Record) -> Item:
  agent = r.get("agent")
  talk = rs.talks.get((agent, r.get("actor"), r.get("step")))
  decision = ("no decision recorded" if talk is None else
              "talks to them" if talk.get("talk") else "decides not to talk")
  return rs.item(agent, "sender", r,
                 f"{agent} observes {r.get('actor')}: {r.get('behaviour')}\n"
                 f"{agent}'s norm: {r.get('norm')}",
                 f"Conflict with \"{r.get('norm')}\": yes; {decision}.")


def _candidate(rs: _Records, r: Record) -> Item | None:
  agent = r.get("agent")
  if r.get("origin") == "observation":
    return rs.item(agent, "observation", r,
                   f"Thoughts: {r.get('source_text') or '(not recorded)'}",
                   "Norm identified: " + _of(r))
  if r.get("origin") != "conversation":
    return None
  source = r.get("source_agent")
  talk_with = [c for c in rs.conversations
               if int(c.get("step", 0)) <= int(r.get("step", 0))
               and {agent, source} <= {c.get("initiator"), c.get("partner")}]
  inp = (_transcript(talk_with[-1]) if talk_with
         else str(r.get("source_text") or "(conversation not recorded)"))
  return rs.item(agent, "receiver", r, inp, _of(r))


def _thought(rs: _Records, r: Record) -> Item:
  agent = r.get("agent")
  step = int(r.get("step", 0))
  since = rs.last_thought.get(agent, -1)
  seen = [a for a in rs.actions if since < int(a.get("step", 0)) <= step]
  rs.last_thought[agent] = step
  observed = "\n".join(
      f"[{a.get('time')}] {a.get('narration') or a.get('action')}"
      for a in seen[-8:]) or "(no action recorded since the last thoughts)"
  return rs.item(agent, "observation", r, f"Observations:\n{observed}",
                 "Thoughts:\n" + "\n".join(
                     f"- {t}" for t in r.get("thoughts") or ()))


def _verdict(rs: _Records, r: Record) -> Item:
  agent = r.get("agent")
  source = rs.index.get((agent, r.get("norm_id")), {})
  inp = f"Candidate norm: {r.get('content')}"
  if source.get("source_text"):
    inp += f"\nFrom: {str(source['source_text'])[:600]}"
  if r.get("accepted"):
    outp = "Accepted: " + _of(r)
  else:
    outp = f"Rejected: {r.get('reason')}"
    if r.get("detail"):
      outp += f" ({r.get('detail')})"
  return rs.item(agent, "immediate_evaluation", r, inp, outp)


def _synthesis(rs: _Records, r: Record) -> Item:
  agent = r.get("agent")
  weights = r.get("weights") or []
  lines = []
  for i, norm_id in enumerate(r.get("sources") or []):
    content = rs.index.get((agent, norm_id), {}).get("content", norm_id)
    weight = f" (weight {weights[i]})" if i < len(weights) else ""
    lines.append(f"- {content}{weight}")
  return rs.item(agent, "synthesis", r, "Specific norms:\n" + "\n".join(lines),
                 "Abstract norm: " + _of(r)
                 + ("" if r.get("accepted") else " [rejected by evaluation]"))


def _plan(rs: _Records, r: Record) -> Item:
  agent = r.get("agent")
  snapshot = reading.snapshot_at(rs.run.snapshots, int(r.get("step", 0)))
  held = reading.qualified((snapshot or {}).get(agent))
  norms = "\n".join(
      "- " + _norm_text(n["content"], n.get("type"), n.get("utility"))
      for n in held) or "(no norms recorded)"
  plan_lines = "\n".join(
      f"{i.get('start')}-{i.get('end')}: {i.get('activity')}"
      for i in r.get("items") or ())
  observed = [rs.index.get((agent, n), {}).get("content", n)
              for n in r.get("norms_observed") or ()]
  return rs.item(agent, "plan", r, f"{agent}'s norms:\n{norms}",
                 f"Plan:\n{plan_lines}\nNorms it says it observes: "
                 + ("; ".join(observed) or "none"))


def _action(rs: _Records, a: Record) -> Item:
  actor = a.get("actor")
  clock = str(a.get("clock", ""))
  current = "(no plan recorded)"
  for p in rs.plans:
    if p.get("agent") != actor or int(p.get("step", 0)) > int(a["step"]):
      continue
    for item in p.get("items") or ():
      if str(item.get("start", "")) <= clock < str(item.get("end", "~")):
        current = (f"{item.get('start')}-{item.get('end')}: "
                   f"{item.get('activity')}")
  return rs.item(actor, "action", a, f"Plan item now: {current}",
                 f"Attempt: {a.get('action')}\n"
                 f"What happened: {a.get('narration')}")


# The agents' records an item is read from, by kind.
_READERS: dict[str, Callable[[_Records, Record], Item | None]] = {
    CREATED: _creation, CONFLICT: _sender, CANDIDATE: _candidate,
    THOUGHT: _thought, VERDICT: _verdict, SYNTHESIS: _synthesis, PLAN: _plan}


def items_for_run(run: Run) -> list[Item]:
  """Every candidate item of every operation in one run: the agents'
  records in their order, then the actions."""
  talks: dict[tuple[Any, Any, Any], Record] = {}
  for r in run.of_kind(TALK_DECISION):
    talks.setdefault((r.get("agent"), r.get("actor"), r.get("step")), r)
  rs = _Records(run=run, index=reading.norm_index(run), talks=talks,
                # A talk in which nothing was said reached no one.
                conversations=[c for c in run.of_kind(CONVERSATION)
                               if c.get("turns")],
                actions=[a for a in run.of_kind(ACTION) if not
                         observations.is_no_action(str(a.get("action", "")))],
                plans=run.of_kind(PLAN))
  out = []
  for r in run.records:
    reader = _READERS.get(r.get("kind"))
    item = reader(rs, r) if reader else None
    if item is not None:
      out.append(item)
  out.extend(_action(rs, a) for a in rs.actions)
  return out

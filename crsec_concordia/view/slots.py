"""What each slot shows: where everyone is, and the slot's records, compact.

Where an agent stands in a slot is where the referee put its action of
that slot (its `action` record's `place`); before its first action it is
at its home (else the scenario's default place), and in a slot without an
action of its own it is where it last was. A scenario without declared
places is one panel, the venue.

A slot's records are kept in a compact form the page reads (agent names
as indices into the page's agent list, short keys): a society of a
thousand agents and a day of slots stays a page a browser loads. An action
that continues an earlier one (`continued`) keeps no copy of its text.
Records of a kind the page does not know are left out, except an
`intervention` (a record kind reserved for changes made to a running
society: its fields are shown as they are, on the timeline).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia.rundir import format as fmt
from crsec_concordia.rundir import reading

INTERVENTION = fmt.INTERVENTION
# A long utterance or action is cut to this many characters on the page.
MAX_TEXT = 600


def places(scenario: Mapping[str, Any]) -> list[dict[str, str]]:
  """The panels: the declared places, else one for the whole venue."""
  declared = [{"id": str(p["id"]), "desc": str(p.get("description") or "")}
              for p in scenario.get("places") or ()
              if isinstance(p, Mapping) and "id" in p]
  if declared:
    return declared
  venue = str(scenario.get("setting") or scenario.get("name") or "the venue")
  return [{"id": "", "desc": venue}]


def steps_of(run: reading.Run) -> list[dict[str, Any]]:
  """The slots: from the `step` records (with their usage totals), else
  from the slots any record names."""
  out: dict[int, dict[str, Any]] = {}
  for r in run.of_kind(fmt.STEP):
    out[int(r["step"])] = {
        "s": int(r["step"]), "t": r.get("time") or "",
        "calls": int(r.get("calls") or 0),
        "cached": int(r.get("cached_calls") or 0),
        "failed": int(r.get("failed_calls") or 0),
        "tokens": int(r.get("prompt_tokens") or 0)
        + int(r.get("completion_tokens") or 0)}
  for r in run.records:
    step = int(r["step"])
    if step not in out:
      out[step] = {"s": step, "t": r.get("time") or "", "partial": True}
  return [out[s] for s in sorted(out)]


def panel_positions(run: reading.Run, agents: Sequence[str],
                    panels: Sequence[Mapping[str, str]], steps: Sequence[int]
                    ) -> list[list[int]]:
  """Per step, per agent: the index of the panel it is in."""
  if len(panels) == 1:
    return [[0] * len(agents) for _ in steps]
  panel = {p["id"]: i for i, p in enumerate(panels)}
  default = run.scenario.get("default_place") or panels[0]["id"]
  homes = {a["name"]: a.get("home") or default
           for a in run.scenario.get("agents", []) if "name" in a}
  where = [panel.get(str(homes.get(a, default)), 0) for a in agents]
  index = {a: i for i, a in enumerate(agents)}
  at: dict[int, dict[int, int]] = {}
  for r in run.of_kind(fmt.ACTION):
    if r.get("actor") in index and str(r.get("place")) in panel:
      at.setdefault(int(r["step"]), {})[index[r["actor"]]] = panel[
          str(r["place"])]
  out = []
  for step in steps:
    for i, p in at.get(step, {}).items():
      where[i] = p
    out.append(list(where))
  return out


def _cut(text: Any) -> str:
  text = str(text or "")
  return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def compact(record: Mapping[str, Any], index: Mapping[str, int],
            panel: Mapping[str, int]) -> dict[str, Any] | None:
  """One record as the page keeps it; None for a kind it leaves out."""
  kind = record.get("kind")

  def who(key: str) -> int | None:
    return index.get(record.get(key))

  if kind == fmt.ACTION:
    out = {"k": "action", "a": who("actor"),
           "p": panel.get(str(record.get("place"))),
           "b": list(record.get("behaviours") or [])}
    if record.get("continued"):
      out["c"] = record.get("continues_step")
    else:
      out["x"] = _cut(record.get("narration") or record.get("action"))
      if record.get("evidence") not in (None, "", "none"):
        out["ev"] = _cut(record.get("evidence"))
    if record.get("moved_from") is not None:
      out["m"] = panel.get(str(record["moved_from"]))
    return out
  if kind == fmt.CONVERSATION:
    return {"k": "talk", "a": who("initiator"), "w": who("partner"),
            "topic": record.get("topic"), "n": record.get("norm"),
            "ended": record.get("ended"),
            "turns": [[index.get(t.get("speaker"), t.get("speaker")),
                       _cut(t.get("text"))]
                      for t in record.get("turns") or ()]}
  if kind == fmt.TALK_DROPPED:
    return {"k": "dropped", "a": who("initiator"), "w": who("partner"),
            "why": record.get("reason")}
  if kind == fmt.CONFLICT:
    return {"k": "conflict", "a": who("agent"), "w": who("actor"),
            "x": _cut(record.get("behaviour")), "n": record.get("norm"),
            "id": record.get("norm_id"),
            "p": panel.get(str(record.get("place")))}
  if kind in (fmt.CREATED, fmt.CANDIDATE, fmt.VERDICT):
    out = {"k": kind, "a": who("agent"), "id": record.get("norm_id"),
           "n": record.get("content")}
    if kind == fmt.CREATED and record.get("accepted") is False:
      # Rejected at creation (a duplicate of a norm it holds).
      out.update(ok=False, why=record.get("reason"))
    if kind == fmt.CANDIDATE:
      out.update(o=record.get("origin"), w=who("source_agent"))
    if kind == fmt.VERDICT:
      out.update(ok=bool(record.get("accepted")), why=record.get("reason"),
                 o=record.get("origin"))
    return out
  if kind == fmt.SYNTHESIS:
    return {"k": "synthesis", "a": who("agent"),
            "id": record.get("abstract_id"), "n": record.get("content"),
            "src": list(record.get("sources") or ()),
            "ok": bool(record.get("accepted"))}
  if kind == fmt.PLAN:
    return {"k": "plan", "a": who("agent"),
            "items": [[i.get("start"), i.get("end"), i.get("activity")]
                      for i in record.get("items") or ()],
            "rev": bool(record.get("revised"))}
  if kind == fmt.FAILURE:
    return {"k": "failure", "a": index.get(record.get("agent")),
            "op": record.get("op"), "x": _cut(record.get("error"))}
  if kind == INTERVENTION:
    return {"k": "intervention",
            "x": {k: v for k, v in record.items()
                  if k not in ("kind", "step", "day", "clock")}}
  return None


def events(run: reading.Run, agents: Sequence[str],
           panels: Sequence[Mapping[str, str]], steps: Sequence[int]
           ) -> list[list[dict[str, Any]]]:
  """Per step: its records, compact, in the order the run wrote them."""
  index = {a: i for i, a in enumerate(agents)}
  panel = {p["id"]: i for i, p in enumerate(panels)} if len(panels) > 1 else {}
  where = {s: i for i, s in enumerate(steps)}
  out: list[list[dict[str, Any]]] = [[] for _ in steps]
  for r in run.records:
    item = compact(r, index, panel)
    if item is not None and int(r["step"]) in where:
      out[where[int(r["step"])]].append(item)
  return out

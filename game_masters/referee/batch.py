"""A place's slot judged together: one call for the new actions of a place.

The actions of one place in one slot share the place, its behaviours and
the questions asked; one call per action states that shared part again for
each. With the referee's `batched` setting (calibration/run_policy.py) the
game master asks about them in one call (batch_prompts.py): each action
under an id, one answer keyed by the ids, each answer with the general
call's fields and the doer's name. Today's guarantees are kept per action:
the gate that spares an action far from every behaviour; a tag counts only
with a quote of THAT action's words (an answer quoting another action's
words is asked once more, for those actions only); the embedder's gates;
the doer must name the actor; a failed call is asked once more, then
recorded for each of its actions as a per-action failure is, never filled
in. The second look asks about the place's leftover actions in one call
too, and once more in reverse order for those whose first answer may count.
A batch's prompt and answers must fit the model's context for one request
(the embedded server's per-request window), so a crowded place is split,
in the order the caller gives (by actor name), never by thread order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from crsec_concordia import gate_tally, observations
from crsec_concordia.game_masters.referee import batch_prompts as prompts
from crsec_concordia.game_masters.referee import doer_check, general_call
from crsec_concordia.game_masters.referee import second_look as look_lib
from crsec_concordia.game_masters.referee._shared import (combined,
                                                          failure_record)
from crsec_concordia.models.base import EndpointError, StructuredOutputError
from crsec_concordia.models.request_budget import (CONTEXT_TOKENS, in_batches,
                                                   prompt_tokens)

# The doer's name in an answer: the doer check's own answer budget.
DOER_TOKENS = 40
_FAILED = (StructuredOutputError, EndpointError)


@dataclasses.dataclass(frozen=True)
class PlaceAction:
  """One new action of the place's slot and what its own part says."""
  actor: str
  action: str
  situation: str = ""
  checked: tuple[str, ...] = ()


Result = tuple[dict[str, Any], "dict[str, Any] | None"]


def _ask_twice(model, prompt: str, schema: Mapping[str, Any],
               max_tokens: int) -> Mapping[str, Any]:
  """The answer, asked once more if the first is invalid (a longer answer
  than one action's, so likelier cut short; raises the second failure).
  An endpoint that fails past its own retries is not asked again here."""
  try:
    return model.sample_json(prompt, schema, max_tokens=max_tokens,
                             temperature=0.0)
  except StructuredOutputError:
    return model.sample_json(prompt, schema, max_tokens=max_tokens,
                             temperature=0.0)


class PlaceBatch:
  """The batched steps of one Referee (pipeline.py), whose settings,
  gates and counters it uses; safe to call from many threads (it keeps
  nothing between calls)."""

  def __init__(self, referee, *, failed: str, no_action: str,
               budget: int = CONTEXT_TOKENS):
    """`failed` and `no_action`: the evidence the pipeline records of an
    action whose call failed (with `{error}`) and of no action."""
    self._r = referee
    self._failed_evidence = failed
    self._no_action = no_action
    self._budget = budget
    self._doer = referee._doer_model is not None  # noqa: SLF001

  def judge(self, items: Sequence[PlaceAction]) -> list[Result]:
    """Each item's (event fields, failure record or None), in order."""
    r = self._r
    results: list[Result | None] = [None] * len(items)
    asked = []
    for n, item in enumerate(items):
      if observations.is_no_action(item.action):
        results[n] = (r._unjudged(item.action,  # noqa: SLF001
                                  self._no_action, False), None)
        continue
      near = (r._nearest(item.actor, item.action, item.situation,  # noqa: SLF001
                         item.checked)
              if r._policy.spare_far_actions else None)  # noqa: SLF001
      if near is not None and near[1] < r._floors.spare_far:  # noqa: SLF001
        r.gates.add(gate_tally.SPARED_FAR_ACTION, 1, r._log)  # noqa: SLF001
        results[n] = (r._unjudged(item.action, "none", True,  # noqa: SLF001
                                  referee_asked=False,
                                  nearest_behaviour=list(near)), None)
        continue
      asked.append(n)
    for batch in in_batches(asked, lambda ns: self._tokens([items[n] for n in ns]),
                       self._budget):
      for n, result in zip(batch, self._general([items[n] for n in batch])):
        results[n] = result
    self._looks(items, results)
    return [r_ for r_ in results if r_ is not None]

  # The general call, batched.

  def _lines(self, items: Sequence[PlaceAction]) -> list[dict[str, str]]:
    r = self._r
    return [{"key": prompts.key_of(k), "actor": i.actor, "action": i.action,
             "situation": i.situation,
             "here": r._where(i.actor) if r._where is not None else ""}  # noqa: SLF001
            for k, i in enumerate(items)]

  def _prompt(self, items: Sequence[PlaceAction]) -> str:
    r = self._r
    return prompts.batch_prompt(
        place=r._place, behaviours=r._behaviours,  # noqa: SLF001
        items=self._lines(items), places=self._places(items),
        default_place=r._default_place, doer=self._doer)  # noqa: SLF001

  def _places(self, items: Sequence[PlaceAction]) -> list[dict[str, str]] | None:
    """The places any of the actions' prompts would list (the general
    call's per action), in the scenario's order."""
    r = self._r
    if r._places is None or r._listed is None:  # noqa: SLF001
      return r._places  # noqa: SLF001
    ids = {p for i in items for p in r._listed(i.actor, i.action)}  # noqa: SLF001
    return [p for p in r._places if p["id"] in ids]  # noqa: SLF001

  def _schema(self, n: int) -> dict[str, Any]:
    r = self._r
    places = r._schema["properties"]["place"]["enum"]  # noqa: SLF001
    return prompts.batch_schema([prompts.key_of(k) for k in range(n)],
                                r._ids, places, self._doer)  # noqa: SLF001

  def _answer_tokens(self, n: int) -> int:
    return n * (self._r._max_tokens + DOER_TOKENS)  # noqa: SLF001

  def _tokens(self, items: Sequence[PlaceAction]) -> int:
    return prompt_tokens(self._prompt(items)) + self._answer_tokens(
        len(items))

  def _general(self, items: Sequence[PlaceAction]) -> list[Result]:
    """One batch's results: its call (asked once more if it fails), the
    actions whose quote is not their own words asked once more together,
    then each action's fields as the per-action pipeline makes them."""
    r = self._r
    prompt = self._prompt(items)
    try:
      answer = _ask_twice(r._model, prompt, self._schema(len(items)),  # noqa: SLF001
                          self._answer_tokens(len(items)))
    except _FAILED as e:
      failure = failure_record(general_call.TAG, e)
      return [(r._unjudged(i.action, self._failed_evidence.format(  # noqa: SLF001
          error=e), False), dict(failure)) for i in items]
    answers = [answer[prompts.key_of(k)] for k in range(len(items))]
    failures: list[dict[str, Any] | None] = [None] * len(items)
    wrong = [k for k, (a, i) in enumerate(zip(answers, items))
             if not r._supported(a, i.actor, i.action)]  # noqa: SLF001
    if wrong:
      again = [items[k] for k in wrong]
      note = prompts.retry_note(
          {prompts.key_of(j): (items[k].actor, str(answers[k]["evidence"]))
           for j, k in enumerate(wrong)}, r._ids)  # noqa: SLF001
      try:
        second = r._model.sample_json(  # noqa: SLF001
            self._prompt(again) + note, self._schema(len(again)),
            max_tokens=self._answer_tokens(len(again)), temperature=0.0)
        for j, k in enumerate(wrong):
          answers[k] = second[prompts.key_of(j)]
      except _FAILED as e:
        for k in wrong:
          failures[k] = failure_record(general_call.TAG, e)
    return [(self._fields(a, i), f) for a, i, f in
            zip(answers, items, failures)]

  def _fields(self, answer: Mapping[str, Any], item: PlaceAction) -> dict[str, Any]:
    """An action's event fields from its answer: Referee.adjudicate's,
    with the doer read from the answer's `doer`."""
    r = self._r
    ids = general_call.behaviours_of(answer, r._ids)  # noqa: SLF001
    fields: dict[str, Any] = {
        "narration": " ".join(str(answer["narration"]).split())
                     or item.action,
        "place": answer["place"], "behaviours": ids,
        "evidence": str(answer["evidence"]).strip(), "adjudicated": True,
        "batched": True}
    if not r._supported(answer, item.actor, item.action):  # noqa: SLF001
      fields["behaviours"] = []
      fields["unsupported"] = ids
      return fields
    if not ids or r._similarity is None:  # noqa: SLF001
      return fields
    if r._policy.tag_floor or r._policy.deed_floor:  # noqa: SLF001
      fields.update(r._gated(item.action, ids))  # noqa: SLF001
    kept = fields["behaviours"]
    far = [i for i in ids if i not in kept]
    if far:
      fields["far_from_action"] = far
      r.gates.add(gate_tally.TAG_FLOOR, len(far), r._log)  # noqa: SLF001
    if kept and self._doer:
      who = " ".join(str(answer[prompts.DOER_FIELD]).split())
      fields["tag_doers"] = dict.fromkeys(kept, who)
      fields["behaviours"] = (kept if doer_check.names_actor(who, item.actor)
                              else [])
      if not fields["behaviours"]:
        fields["not_by_actor"] = list(kept)
    return fields

  # The second look, batched.

  def _looks(self, items: Sequence[PlaceAction], results: list[Result | None]
             ) -> None:
    """The second look at every action no tag counts for, its record and
    failure joined to the action's result."""
    r = self._r
    if not r._policy.second_look or r._similarity is None:  # noqa: SLF001
      return
    wanted = []
    for n, result in enumerate(results):
      fields = result[0] if result is not None else None
      if (fields is None or fields["behaviours"] or not fields["adjudicated"]
          or not fields.get("referee_asked", True)):
        continue
      item = items[n]
      rest = {i: d for i, d in r._descriptions.items()  # noqa: SLF001
              if i not in item.checked}
      if not rest:
        continue
      near = look_lib.candidates(item.action, rest, r._similarity,  # noqa: SLF001
                                 r._place_words, r._floors)  # noqa: SLF001
      if not near:
        r._count_look(None)  # noqa: SLF001
        continue
      wanted.append((n, near))
    looks = {}
    for batch in in_batches(wanted, lambda b: self._look_tokens(items, b),
                       self._budget):
      looks.update(self._look_batch(items, batch))
    for n, (look, failure) in sorted(looks.items()):
      fields, earlier = results[n]  # type: ignore[misc]
      r._count_look(look)  # noqa: SLF001
      fields["second_look"] = look
      if look["accepted"]:
        fields["behaviours"] = [look["behaviour"]]
        fields["evidence"] = look["evidence"]
      results[n] = (fields, combined(earlier, failure))

  def _look_lines(self, items: Sequence[PlaceAction], batch, reverse_only=None
                  ) -> list[dict[str, Any]]:
    r = self._r
    return [{"key": prompts.key_of(k), "actor": items[n].actor,
             "action": items[n].action,
             "listed": [{"id": i, "description": r._descriptions[i]}  # noqa: SLF001
                        for i, _ in near]}
            for k, (n, near) in enumerate(batch)
            if reverse_only is None or n in reverse_only]

  def _look_ask(self, lines: Sequence[Mapping[str, Any]], reverse: bool
                ) -> Mapping[str, Any]:
    r = self._r
    none = general_call.none_token(r._ids)  # noqa: SLF001
    schema = prompts.batch_look_schema(
        {line["key"]: [b["id"] for b in line["listed"]] for line in lines},
        none, self._doer and not reverse)
    return _ask_twice(r._look_model, prompts.batch_look_prompt(  # noqa: SLF001
        place=r._place, items=lines, none=none, reverse=reverse,  # noqa: SLF001
        doer=self._doer and not reverse), schema,
        len(lines) * (r._max_tokens + DOER_TOKENS))  # noqa: SLF001

  def _look_tokens(self, items: Sequence[PlaceAction], batch) -> int:
    r = self._r
    lines = self._look_lines(items, batch)
    return prompt_tokens(prompts.batch_look_prompt(
        place=r._place, items=lines, none="none", reverse=False,  # noqa: SLF001
        doer=self._doer)) + self._answer_tokens(len(lines))

  def _look_batch(self, items: Sequence[PlaceAction], batch
                  ) -> dict[int, tuple[dict[str, Any], dict[str, Any] | None]]:
    """{index: (the look's record, failure record or None)} of a batch, as
    second_look.second_look records each."""
    r = self._r
    records = {n: {"candidates": dict(near), "accepted": False,
                   "batched": True} for n, near in batch}
    keys = {n: prompts.key_of(k) for k, (n, _) in enumerate(batch)}
    try:
      first = self._look_ask(self._look_lines(items, batch), reverse=False)
    except _FAILED as e:
      return {n: ({**rec, "why": "the call failed"},
                  failure_record(look_lib.TAG, e))
              for n, rec in records.items()}
    out: dict[int, tuple[dict[str, Any], dict[str, Any] | None]] = {}
    passed = []
    for n, near in batch:
      item, rec, answer = items[n], records[n], first[keys[n]]
      proposed = answer["behaviour"]
      rec.update(behaviour=proposed,
                 evidence=str(answer["evidence"]).strip())
      nearest = near[0][0] if r._policy.look_nearest else None  # noqa: SLF001
      if nearest is not None and proposed in (r._sides or {}).get(  # noqa: SLF001
          nearest, ()):
        nearest = None
      why = look_lib._refused(proposed, rec["evidence"], nearest,  # noqa: SLF001
                              rec["candidates"], item.actor, item.action,
                              r.settings.tie)
      if why is not None:
        out[n] = ({**rec, "why": why}, None)
      else:
        passed.append(n)
    if passed and r._policy.look_reverse:  # noqa: SLF001
      lines = self._look_lines(items, batch, reverse_only=set(passed))
      try:
        second = self._look_ask(lines, reverse=True)
      except _FAILED as e:
        for n in passed:
          out[n] = ({**records[n], "why": "the call in reverse order failed"},
                    failure_record(look_lib.TAG, e))
        return out
      by_actor = {line["key"]: second[line["key"]]["behaviour"]
                  for line in lines}
      for n in list(passed):
        records[n]["reversed"] = by_actor[keys[n]]
        if records[n]["reversed"] != records[n]["behaviour"]:
          out[n] = ({**records[n], "why": "another answer with the "
                     "candidates in reverse order"}, None)
          passed.remove(n)
    for n in passed:
      rec = records[n]
      if self._doer:
        rec["doer"] = " ".join(str(first[keys[n]][prompts.DOER_FIELD]).split())
        rec["accepted"] = doer_check.names_actor(rec["doer"], items[n].actor)
        if not rec["accepted"]:
          rec["why"] = "the doer check named someone else"
      else:
        rec["accepted"] = True
      out[n] = (rec, None)
    return out

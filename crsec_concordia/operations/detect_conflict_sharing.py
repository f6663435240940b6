"""DetectConflict shared: each question of a slot asked once (SharedJudgements).

Whether a deed breaks a rule is one question for everyone who holds the
rule's words, so in a society it is asked once per slot and its answer
given to every holder (each still decides for itself what to do with it:
DecideToTalk, the talk, its own records). A question is a deed (who, what,
where, the sentence of it nearest the rule) and a rule's text; it is keyed
so, not by the deeds near a rule, because observers who see the same deed
differ in which other deeds are new to them (each judges a deed once), so
deed sets rarely match while single deeds do (the measurements:
docs/trials/operations.md#detectconflict).

Answers must not depend on which thread asks first, and a call must not
name its observer unless it has only one, so the questions are grouped
only when all of a slot's are known. The slot engine opens a slot with the
agents who observe in it (`open_slot`); a ConflictDetector takes a ticket
when it starts a detection (`enter`, in its pre_observe), says it will
take no other (`observed`, at the end of its pre_observe, before the
agent's slower observing: reflection, identification, evaluation) and
hands in its questions with the ticket (`judge`, from its own thread); the
engine says `observed` too after each agent's observation, for a detector
that never ran. When every holder of the slot has said so and every
ticket has its questions, the slot's calls are fixed: an observer who
shares no question asks in a call of its own, as a ConflictDetector alone
asks (its prompt unchanged); every other question is asked once, with no
observer in the prompt, pooled (a rule's questions together, at most
SHARED_ITEMS to a call: kept apart, an observer's unshared questions
would cost a call per observer again). Each call is made by the first
holder to need it while the others wait (single flight), and its cost is
counted once; a failed call is recorded once, in the journal of its first
holder by name, and every holder goes on without those judgements, as
after any failed call. A holder that hands its questions in `batched`
(ConflictDetector's switch) has every question it holds asked with the
slot's other questions of the same place, each once, in as few calls as a
request holds (detect_conflict_batch.py), planned in place, rule and
question order; each holder then reads the verdicts of its own questions,
and a failure is recorded per question, in the journal of its first holder
by name. Nothing outlives the slot, so a checkpoint holds nothing of it.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Iterable, Sequence

from crsec_concordia import threads
from crsec_concordia.models.base import StructuredModel
from crsec_concordia.operations import detect_conflict_batch as batch_lib
from crsec_concordia.operations.base import FailureSink
from crsec_concordia.operations.detect_conflict import (OP, Judgement,
                                                        Observed,
                                                        detect_conflicts)

# A question: the deed (actor, behaviour, place, the sentence nearest the
# rule) and the rule's text.
Question = tuple[str, str, str, str, str]
# One judgement: (breaks, the words quoted); None where its call failed.
Answer = tuple[bool, str] | None
# Questions in one shared call at most: about what one observer's own
# call holds (an observation's deeds near its norms), so that no prompt
# grows with the population.
SHARED_ITEMS = 10


def question_of(item: Observed) -> Question:
  """The shared question `item` asks: the same for every holder of it."""
  return (item.actor, item.behaviour, item.place, item.focus,
          item.norm.content)


class _Call:
  """One DetectConflict call of the slot, made once (single flight)."""

  def __init__(self, observer: str | None, items: list[Observed],
               holders: tuple[str, ...], on_failure: FailureSink):
    self.observer = observer  # The sole holder; None for a shared call.
    self.items = items
    self.holders = holders
    self._on_failure = on_failure
    self._lock = threading.Lock()
    self._started = False
    self._done = threading.Event()
    self._answers: dict[Question, tuple[bool, str]] = {}

  def _failed(self, failure) -> None:
    """Recorded once, by the first holder by name."""
    if self.observer is None:
      failure = {**failure, "holders": list(self.holders)}
    self._on_failure(failure)

  def answers(self, model: StructuredModel
              ) -> dict[Question, tuple[bool, str]]:
    """The call's judgements by question ({} if it failed): made here if no
    holder has made it yet, else waited for."""
    with self._lock:
      mine, self._started = not self._started, True
    if not mine:
      self._done.wait()
      return self._answers
    try:
      self._answers = {question_of(j.observed): (j.breaks, j.evidence)
                       for j in self._ask(model) if j is not None}
    except Exception as e:  # pylint: disable=broad-except
      self._failed({"op": OP, "error": f"{type(e).__name__}: {e}"})
    finally:
      self._done.set()
    return self._answers

  def _ask(self, model: StructuredModel) -> list[Judgement | None]:
    return detect_conflicts(model, observer=self.observer, items=self.items,
                            on_failure=self._failed) or []


class _BatchCall(_Call):
  """The questions of one place's slot asked together (detect_conflict_batch),
  each failure recorded per question by its first holder by name."""

  def __init__(self, items: list[Observed],
               holders: dict[Question, tuple[str, ...]],
               sinks: dict[str, FailureSink]):
    names = tuple(sorted({n for q in holders.values() for n in q}))
    super().__init__(None, items, names, sinks[names[0]])
    self._by_question = holders
    self._sinks = sinks

  def _ask(self, model: StructuredModel) -> list[Judgement | None]:
    def failed(index: int, failure) -> None:
      names = self._by_question[question_of(self.items[index])]
      self._sinks[names[0]]({**failure, "holders": list(names)})
    return batch_lib.detect_conflicts_batched(model, self.items, failed)


@dataclasses.dataclass
class _Asked:
  items: list[Observed]
  on_failure: FailureSink
  batched: bool = False


class _Slot:
  """One slot's observers, questions and calls."""

  def __init__(self, observers: Iterable[str], budget: int):
    self.budget = budget
    self.expected = frozenset(observers)
    self.observed: set[str] = set()
    self.tickets: set[str] = set()
    self.asked: dict[str, _Asked] = {}
    self.calls: dict[tuple[str, Question], _Call] = {}
    self.ready = threading.Event()

  def complete(self) -> bool:
    return (self.observed >= self.expected
            and set(self.asked) >= self.tickets)

  def plan(self) -> None:
    """The slot's calls, from every holder's questions (name order)."""
    holders: dict[Question, list[str]] = {}
    first: dict[Question, Observed] = {}
    for name in sorted(self.asked):
      for item in self.asked[name].items:
        q = question_of(item)
        if name not in holders.setdefault(q, []):
          holders[q].append(name)
        first.setdefault(q, item)
    batched = {q for q, names in holders.items()
               if any(self.asked[n].batched for n in names)}
    self._plan_batches({q: holders[q] for q in batched}, first)
    holders = {q: names for q, names in holders.items() if q not in batched}
    sharing = {n for names in holders.values() if len(names) > 1
               for n in names}
    for name in sorted(set(self.asked) - sharing):
      # Shares no question: asks as it would alone, its items in its order.
      items = [i for i in self.asked[name].items
               if question_of(i) not in batched]
      if items:
        call = _Call(name, list(items), (name,), self.asked[name].on_failure)
        for item in items:
          self.calls[(name, question_of(item))] = call
    # Everything the others ask, each question once, a rule's questions
    # together, in calls of at most SHARED_ITEMS.
    pool = sorted({q for q, names in holders.items()
                   if sharing.intersection(names)},
                  key=lambda q: (q[4], q))
    for start in range(0, len(pool), SHARED_ITEMS):
      questions = pool[start:start + SHARED_ITEMS]
      names = tuple(sorted({n for q in questions for n in holders[q]}))
      call = _Call(None, [first[q] for q in questions], names,
                   self.asked[names[0]].on_failure)
      for q in questions:
        for name in holders[q]:
          self.calls[(name, q)] = call

  def _plan_batches(self, holders: dict[Question, list[str]],
                    first: dict[Question, Observed]) -> None:
    """The batched questions: a place's together, in place, rule and
    question order, cut to fit a request."""
    sinks = {n: a.on_failure for n, a in self.asked.items()}
    ordered = sorted(holders, key=lambda q: (q[2], q[4], q))
    places: dict[str, list[Question]] = {}
    for q in ordered:
      places.setdefault(q[2], []).append(q)
    for questions in places.values():
      for batch in batch_lib.questions_in_calls(
          [first[q] for q in questions], self.budget):
        call = _BatchCall(batch, {question_of(i): tuple(holders[
            question_of(i)]) for i in batch}, sinks)
        for item in batch:
          for name in holders[question_of(item)]:
            self.calls[(name, question_of(item))] = call


@dataclasses.dataclass(frozen=True)
class Ticket:
  """A holder's place in a slot's questions (see `SharedJudgements.enter`)."""
  holder: str
  slot: _Slot


class SharedJudgements:
  """The DetectConflict questions of a simulation's slots, each asked once."""

  def __init__(self, holders: Iterable[str],
               budget: int = batch_lib.CONTEXT_TOKENS):
    """Shares the questions of `holders`, the agents whose
    ConflictDetectors are given this service; `budget`: the tokens of one
    batched call (a request's context)."""
    self._holders = frozenset(holders)
    self._budget = budget
    self._lock = threading.Lock()
    self._slot: _Slot | None = None

  def open_slot(self, observers: Iterable[str]) -> None:
    """A slot begins; `observers` are the agents who observe in it."""
    slot = _Slot(self._holders.intersection(observers), self._budget)
    with self._lock:
      self._slot = slot
    self._check(slot)

  def observed(self, observer: str) -> None:
    """`observer` will ask nothing more this slot: its ConflictDetector has
    taken its ticket or has none (it says so at the end of its
    pre_observe; the engine says so after each agent's observation, for a
    detector that never ran)."""
    with self._lock:
      slot = self._slot
      if slot is None or observer not in slot.expected:
        return
      slot.observed.add(observer)
    self._check(slot)

  def enter(self, holder: str) -> Ticket | None:
    """A ticket for `holder`'s questions of this slot, taken before it has
    observed; None (it asks alone) outside a slot, or for an agent the
    slot does not expect or has already heard from."""
    with self._lock:
      slot = self._slot
      if (slot is None or holder not in slot.expected
          or holder in slot.observed or holder in slot.tickets):
        return None
      slot.tickets.add(holder)
      return Ticket(holder, slot)

  def withdraw(self, ticket: Ticket) -> None:
    """The ticket's holder asks nothing this slot (if it has not asked)."""
    with self._lock:
      if ticket.holder in ticket.slot.asked:
        return
      ticket.slot.asked[ticket.holder] = _Asked([], lambda failure: None)
    self._check(ticket.slot)

  def judge(self, ticket: Ticket, items: Sequence[Observed],
            model: StructuredModel, on_failure: FailureSink,
            batched: bool = False) -> list[Answer]:
    """`hand_in`, then `answers`."""
    self.hand_in(ticket, items, on_failure, batched)
    return self.answers(ticket, items, model)

  def hand_in(self, ticket: Ticket, items: Sequence[Observed],
              on_failure: FailureSink, batched: bool = False) -> None:
    """The ticket's questions, `items`; `on_failure` records the failures
    of the calls its holder is the first holder of; `batched`: asked with
    the place's other questions of the slot. It does not wait."""
    slot = ticket.slot
    with self._lock:
      if ticket.holder in slot.asked:
        raise ValueError(f"{ticket.holder} has already asked this slot")
      slot.asked[ticket.holder] = _Asked(list(items), on_failure, batched)
    self._check(slot)

  def answers(self, ticket: Ticket, items: Sequence[Observed],
              model: StructuredModel) -> list[Answer]:
    """The judgement of each of the handed-in `items` (in order), once the
    slot's questions are all known; `model` makes the calls this holder is
    the first to need."""
    slot = ticket.slot
    slot.ready.wait()
    calls = list(dict.fromkeys(
        slot.calls[(ticket.holder, question_of(i))] for i in items))
    answered = threads.run_tasks({
        f"{n:04d}": functools.partial(call.answers, model)
        for n, call in enumerate(calls)})
    found: dict[Question, tuple[bool, str]] = {}
    for answers in answered.values():
      found.update(answers)
    return [found.get(question_of(i)) for i in items]

  def _check(self, slot: _Slot) -> None:
    """Plans the slot's calls once everything is in."""
    with self._lock:
      if slot.ready.is_set() or not slot.complete():
        return
      slot.plan()
      slot.ready.set()

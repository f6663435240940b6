"""StructuredAct: the act component of both normative and baseline agents.

Concordia's ConcatActComponent samples free text; here the act, like every
LLM operation of the project, is one schema-constrained call whose prompt is
the agent's component contexts in order and the game master's call to
action, shared by both arms so that a comparison isolates CRSEC. Nothing is
invented on the agent's behalf: an answer that fails its schema, says no
deed, or copies another agent's action in view (asked once more, naming the
copy) is recorded as no action of the agent's; a line of talk whose
answer fails raises, so the talk ends instead of carrying a marker as the
speaker's words. Plan-driven, as in Generative Agents, the agent asks the
model only for a reason (components/_acting_reasons.py) and otherwise goes
on with its current action, with no call (`observations.continuing`). The
trials behind these choices: docs/trials/acting-and-planning.md.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from concordia.language_model import language_model
from concordia.typing import entity as entity_lib
from concordia.typing import entity_component

from crsec_concordia import invalid_action, observations
from crsec_concordia.components import _act_answer as answer_lib
from crsec_concordia.components import _acting_reasons as reasons_lib
from crsec_concordia.components import _copies as copies
from crsec_concordia.components.agent_journal import JOURNAL_KEY
from crsec_concordia.models.base import EndpointError, StructuredOutputError
from crsec_concordia.models.concordia_adapter import structured_view
from crsec_concordia.operations import failure_notice

NO_VALID_ACTION = (f"{observations.NO_ACTION_MARK}: the model's answer failed "
                   "its schema)")
TALK_TAG = "Talk"
NO_OWN_ACTION = (f"{observations.NO_ACTION_MARK}: the model copied another "
                 "agent's action when asked once more)")


@dataclasses.dataclass
class _Turn:
  """One act in progress: what is asked, and what came back."""
  name: str
  planner: Any = None
  task: dict | None = None
  two: bool = False  # Also writes the next slot's action (an occasion).
  prompt: str = ""
  schema: Mapping[str, Any] | None = None
  answer: str = ""
  then: str = ""  # A two-part answer's second part.
  own: str = ""  # The words the prompt gives the agent as its own.


class StructuredAct(entity_component.ActingComponent,
                    entity_component.ComponentWithLogging):
  """Writes the agent's action or answer with a schema-constrained call."""

  def __init__(self, model: language_model.LanguageModel, *,
               component_order: Sequence[str] | None = None,
               speech_components: Sequence[str] | None = None,
               max_tokens: int = 120, temperature: float = 0.7,
               journal_key: str = JOURNAL_KEY,
               plan_key: str | None = None,
               on_invalid_action: str = invalid_action.DEFAULT_CHOICE):
    """Creates the act component.

    Args:
      model: any Concordia LanguageModel (the prefabs give a view of theirs
        tagged "act", so its calls are counted apart).
      component_order: the order of the context components in the prompt.
      speech_components: the components a conversation turn sees.
      max_tokens, temperature: the answer's budget and sampling.
      journal_key: the AgentJournal failures are recorded in, if the
        agent has one.
      plan_key: the planner (NormativePlanner) to follow: with one, the
        agent acts from its plan and asks the model only for a reason.
      on_invalid_action: what is returned when there is no valid action
        of the agent's own: "mark", "nothing" or "raise"
        (crsec_concordia/invalid_action.py).
    """
    super().__init__()
    self._model = structured_view(model)
    # Conversation turns are counted apart ("Talk"): they are the paper's
    # communication, not acting, and a reader of the cost per operation
    # should see how much of it the talks take.
    tagged = getattr(self._model, "tagged", None)
    self._talk_model = tagged(TALK_TAG) if callable(tagged) else self._model
    self._order = tuple(component_order) if component_order else None
    # A conversation turn carries its transcript in the call, so it sees
    # only these components, not the recent events or the plan.
    self._speech = (tuple(speech_components) if speech_components is not None
                    else None)
    self._max_tokens = max_tokens
    self._temperature = temperature
    self._journal_key = journal_key
    self._plan_key = plan_key
    self._on_invalid = on_invalid_action
    self._follow_lock = threading.Lock()
    self._follow = reasons_lib.FollowState()

  def _context(self, contexts: entity_component.ComponentContextMapping,
               speech: bool = False) -> str:
    if speech and self._speech is not None:
      order = self._speech
    else:
      order = self._order or tuple(contexts)
      order += tuple(sorted(set(contexts) - set(order)))
    return answer_lib.context_text(contexts, order)

  def _report_failure(self, error: str, raw: str, op: str = "Act") -> None:
    """Records a failed act (op "Act", or TALK_TAG for a line of talk)
    where the agent's failures go (its AgentJournal, or a baseline agent's
    planner), which tells the first in the log; an agent with neither has
    it told here."""
    entity = self.get_entity()
    components = entity.get_all_context_components()  # type: ignore[attr-defined]
    failure = {"op": op, "error": error, "raw": raw[:2000]}
    if self._journal_key in components:
      entity.get_component(self._journal_key).record_failure(failure)
    elif self._plan_key in components:  # A baseline agent's journal.
      entity.get_component(self._plan_key).record_failure(failure)
    else:
      failure_notice.tell_once(self._model, failure)

  @property
  def last_reasons(self) -> tuple[str, ...]:
    """Why the agent last acted (("continued",): it went on, no call)."""
    with self._follow_lock:
      return self._follow.reasons

  def _planner(self):
    components = self.get_entity().get_all_context_components()  # type: ignore[attr-defined]
    return components.get(self._plan_key) if self._plan_key else None

  def _news(self) -> list[str]:
    """What the agent's components found new this slot (a detection still
    running is waited for first: a conflict it finds is a reason)."""
    components = self.get_entity().get_all_context_components()  # type: ignore[attr-defined]
    for key in sorted(components):
      join = getattr(components[key], "join", None)
      if callable(join):
        join()
    news = []
    for key in sorted(components):
      pop = getattr(components[key], "pop_news", None)
      if callable(pop):
        news.extend(pop())
    return news

  def _reasons(self, planner, action_spec, task
               ) -> tuple[list[str], list[str]]:
    """(the reasons to ask the model now, the partners of ended talks)."""
    with self._follow_lock:
      state = self._follow
    partners = planner.pop_talks()
    reasons = reasons_lib.reasons_to_act(
        state, task=task,
        occasion=action_spec.tag == reasons_lib.OCCASION_TAG,
        talked=bool(partners), news=self._news())
    return reasons, partners

  def get_action_attempt(
      self,
      contexts: entity_component.ComponentContextMapping,
      action_spec: entity_lib.ActionSpec,
  ) -> str:
    """The agent's action or answer: its current one going on (no call)
    when a plan-driven agent has no reason to act anew, else one structured
    call whose answer is checked (`_check_action`)."""
    name = self.get_entity().name
    call = action_spec.call_to_action.format(name=name)
    speech = action_spec.tag == observations.SPEECH_TAG
    is_action = (action_spec.output_type == entity_lib.OutputType.FREE
                 and not speech)
    turn = _Turn(name, planner=self._planner() if is_action else None)
    news = ""
    if turn.planner is not None:
      news, done = self._news_or_no_call(turn, action_spec)
      if done is not None:
        return done
    self._ask(turn, contexts, action_spec, call, news, speech)
    try:
      turn.answer, turn.then = self._sample(turn.prompt, turn.schema, speech)
      if is_action:
        went_on = self._check_action(turn, contexts)
        if went_on is not None:
          return went_on
    except StructuredOutputError as e:
      self._report_failure(str(e), e.raw, TALK_TAG if speech else "Act")
      if action_spec.output_type != entity_lib.OutputType.FREE or speech:
        # No option, number or line of talk may be made up for the agent:
        # the caller learns the turn failed (a talk ends there).
        raise
      turn.answer = f"{name} {NO_VALID_ACTION}"
    except EndpointError as e:
      if speech:
        # Recorded here as a schema failure is: the talk that catches it
        # records only how it ended. (A turn's action that raises is
        # recorded by the game master, as the engine reports it.)
        self._report_failure(f"{type(e).__name__}: {e}", "", TALK_TAG)
      raise
    output = str(turn.answer).strip()
    if turn.planner is not None:
      self._settle(output, turn.task, action_spec)
    self._log_act(output, turn)
    return invalid_action.shown(output, name, self._on_invalid)

  def _news_or_no_call(self, turn: "_Turn",
                       action_spec: entity_lib.ActionSpec
                       ) -> tuple[str, str | None]:
    """(the prompt's lines on what is new, None), or ("", the action) when
    no call is needed: one written ahead, or the current one going on."""
    turn.task = turn.planner.current_task()
    reasons, partners = self._reasons(turn.planner, action_spec, turn.task)
    with self._follow_lock:
      ahead = reasons_lib.ahead_now(self._follow, reasons, turn.task)
      self._follow.ahead = None  # Good for the next slot only.
    if ahead is not None:
      return "", self._take_ahead(ahead, turn.task)
    if not reasons:
      return "", self._go_on()
    turn.two = reasons_lib.writes_ahead(reasons)
    news = reasons_lib.why_now(turn.name, reasons, turn.task, partners)
    with self._follow_lock:
      self._follow.reasons = tuple(reasons)
      # Until an action of its own is written: a turn that raises is a
      # failed one, and a reason to ask again next slot.
      self._follow.failed = True
    return news, None

  def _ask(self, turn: "_Turn",
           contexts: entity_component.ComponentContextMapping,
           action_spec: entity_lib.ActionSpec, call: str, news: str,
           speech: bool) -> None:
    """The prompt and the schema of the answer, by the action spec."""
    turn.prompt, turn.schema = answer_lib.question(
        self._context(contexts, speech), news, call, action_spec,
        name=turn.name, kind="speech" if speech else "two" if turn.two
        else "action")
    if not speech:  # Only an action is checked for copies.
      turn.own = copies.given(
          contexts, self.get_entity().get_all_context_components(),  # type: ignore[attr-defined]
          call, news)

  def _check_action(self, turn: "_Turn",
                    contexts: entity_component.ComponentContextMapping
                    ) -> str | None:
    """Checks a written action, asking once more where it says nothing,
    copies another agent or repeats the agent's own; returns the action
    going on if the agent chose to carry on, else None (`turn` holds the
    answer)."""
    self._said_nothing(turn)
    if observations.is_no_action(turn.answer):
      return None
    others, own = self._in_view(contexts)
    copy = self._copied(turn.answer, others, turn.own)
    repeat = None if copy is not None else self._copied(turn.answer, own)
    if repeat is not None and self._may_go_on(repeat[2]):
      return self._go_on(turn.prompt)
    name = turn.name
    if copy is not None:
      # Once more, naming the copy; a second copy is no action of theirs.
      who, verb, done = copy
      turn.prompt += (f"\n\"{done}\" is what {who} {verb}, not {name}. Write "
                      f"what {name} does now, in {name}'s own way.")
    elif repeat is not None:
      # Once more, saying it is done, and only after a repeat; the second
      # answer stands, a repeat or not: going on with what one is doing is
      # a choice an agent may make.
      _, _, done = repeat
      turn.prompt += (f"\n\"{done}\" is what {name} already did. Write "
                      f"what {name} does now, going on from there.")
    if copy is not None or repeat is not None:
      turn.answer, turn.then = self._once_more(turn.prompt, turn.schema,
                                               turn.planner)
      self._no_deed_again(turn)
      again = self._copied(turn.answer, others, turn.own)
      if again is not None and not observations.is_no_action(turn.answer):
        self._report_failure(
            f"copied another agent's action ({again[0]}'s) when asked "
            "once more", turn.answer)
        turn.answer = f"{name} {NO_OWN_ACTION}"
    if turn.two and not observations.is_no_action(turn.answer):
      self._keep_ahead(turn, others, own)
    return None

  def _said_nothing(self, turn: "_Turn") -> None:
    """An answer with no deed in it (or a data record for a sentence) is
    asked for once more, saying so; a second such answer is no action
    (observations.NO_DEED)."""
    name = turn.name
    said = _no_deed(name, turn.answer)
    if said is None:
      return
    turn.prompt += f"\n{said} Write what {name} does now."
    turn.answer, turn.then = self._once_more(turn.prompt, turn.schema,
                                             turn.planner)
    self._no_deed_again(turn)

  def _no_deed_again(self, turn: "_Turn") -> None:
    """A second answer with no deed in it is no action, recorded so."""
    if _no_deed(turn.name, turn.answer) is not None:
      self._report_failure(
          ("wrote a data record, not a sentence," if observations.is_data(
              turn.answer) else "said nothing the agent does")
          + " when asked once more", turn.answer)
      turn.answer = f"{turn.name} {observations.NO_DEED}"

  def _settle(self, output: str, task: dict | None,
              action_spec: entity_lib.ActionSpec) -> None:
    """What the agent goes on with from now, after a written action."""
    with self._follow_lock:
      self._follow.failed = observations.is_no_action(output)
      if (not self._follow.failed
          and action_spec.tag != reasons_lib.OCCASION_TAG):
        # An answer to an occasion is a deed of the moment: afterwards
        # the agent goes on with what it was doing before.
        self._follow.action = output
        self._follow.task = reasons_lib.task_key(task)
      elif self._follow.action is None:
        self._follow.task = None

  def _log_act(self, output: str, turn: "_Turn") -> None:
    entry = {"Key": "act", "Summary": output, "Value": output,
             "Prompt": turn.prompt.splitlines(),
             "Reasons": list(self.last_reasons)}
    if turn.two:
      with self._follow_lock:
        kept = self._follow.ahead is not None
      entry["Next"] = {"text": turn.then, "kept": kept}
    self._logging_channel(entry)

  def _may_go_on(self, repeated: str) -> bool:
    """Whether an answer that repeats `repeated` is the agent going on.

    Asked because of news (a conflict seen, a norm, a talk that ended),
    an agent that answers with what it is doing has chosen to carry on, as
    a Generative Agents agent that perceives something and does not react:
    its action goes on, carried forward with its adjudication, rather than
    asked once more and adjudicated again. A task that begins, an occasion
    or a failed turn wants a new action: a repeat of the last one is asked
    once more, as before.
    """
    with self._follow_lock:
      going_on, reasons = self._follow.action, self._follow.reasons
    return (going_on is not None and repeated == going_on
            and not set(reasons) & set(reasons_lib.NEED_NEW))

  def _go_on(self, prompt: str | None = None) -> str:
    """The agent's current action, going on: with no call, or (`prompt`)
    after a call whose answer chose so (`_may_go_on`)."""
    with self._follow_lock:
      if prompt is None:
        self._follow.reasons = (reasons_lib.CONTINUED,)
      else:
        self._follow.reasons += (reasons_lib.WENT_ON,)
        self._follow.failed = False
      action, reasons = self._follow.action or "", self._follow.reasons
    output = observations.continuing(action)
    entry = {"Key": "act", "Summary": output, "Value": output,
             "Reasons": list(reasons)}
    if prompt is not None:
      entry["Prompt"] = prompt.splitlines()
    self._logging_channel(entry)
    return output

  def _once_more(self, prompt: str, schema, planner) -> tuple[str, str]:
    """An action asked for again (the prompt says why), the second call
    recorded among the act's reasons."""
    if planner is not None:
      with self._follow_lock:
        self._follow.reasons += (reasons_lib.ASKED_AGAIN,)
    return self._sample(prompt, schema)

  def _sample(self, prompt: str, schema, speech: bool = False
              ) -> tuple[str, str]:
    """(the answer, a two-part answer's second part or "")."""
    model = self._talk_model if speech else self._model
    two = schema is answer_lib.TWO_SCHEMA
    answers = model.sample_json(
        prompt, schema,
        max_tokens=self._max_tokens * (2 if two else 1),
        temperature=self._temperature)
    answer = answers["answer"]
    whole = answer_lib.whole_sentences
    return (whole(answer) if isinstance(answer, str) else str(answer),
            whole(answers["next"]) if two else "")

  def _keep_ahead(self, turn: "_Turn", others: Sequence[copies.Seen],
                  own: Sequence[copies.Seen]) -> None:
    """Keeps the action written after the turn's answer for the next slot,
    unless it copies another agent or repeats the agent's own (the answer
    included): then the next slot asks, as any slot whose task begins."""
    action, name = turn.then, turn.name
    if not action or self._copied(action, others, turn.own) is not None or (
        self._copied(action, [*own, (name, "did", turn.answer)]) is not None):
      return
    with self._follow_lock:
      self._follow.ahead = (reasons_lib.task_key(turn.task), action)

  def _take_ahead(self, action: str, task) -> str:
    """The action written ahead with an occasion's answer, now, no call."""
    with self._follow_lock:
      self._follow.reasons = (reasons_lib.WRITTEN_AHEAD,)
      self._follow.failed = False
      self._follow.action = action
      self._follow.task = reasons_lib.task_key(task)
    self._logging_channel({"Key": "act", "Summary": action, "Value": action,
                           "Reasons": [reasons_lib.WRITTEN_AHEAD]})
    return action

  def _in_view(self, contexts: entity_component.ComponentContextMapping
               ) -> tuple[list[copies.Seen], list[copies.Seen]]:
    """(others', the agent's own) actions and lines in view (_copies.py)."""
    with self._follow_lock:
      going_on = self._follow.action
    entity = self.get_entity()
    return copies.in_view(
        entity.name, going_on, contexts,
        entity.get_all_context_components())  # type: ignore[attr-defined]

  def _copied(self, answer: str, seen: Sequence[copies.Seen], own: str = ""
              ) -> copies.Seen | None:
    """The entry of `seen` that `answer` copies, or None (_copies.py); the
    stretches of `own` are the agent's words."""
    return copies.copied(self.get_entity().name, answer, seen, own)

  def get_state(self) -> entity_component.ComponentState:
    with self._follow_lock:
      return {"follow": self._follow.to_json()}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._follow_lock:
      self._follow = reasons_lib.FollowState.from_json(state.get("follow"))


def _no_deed(name: str, answer: str) -> str | None:
  """What the prompt says of an answer with no deed in it, or None."""
  if observations.is_data(answer):
    return "The answer was a data record, not a sentence."
  if observations.says_nothing(name, answer):
    return (f"\"{answer}\" says nothing {name} does." if answer.strip()
            else "The answer was empty.")
  return None

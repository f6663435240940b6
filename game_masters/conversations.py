"""NormConversations: the bounded talk a CRSEC sender asks for.

When an agent's ConflictDetector sees behaviour that breaks one of its norms
and decides to speak up, it files a conversation request, which the game
master takes through the agent's port (components/port.py: agents observe
at the start of a slot, so requests arrive while the slot is being played).
When the game master resolves the slot, this component runs the requested
conversations, alongside the adjudication of the slot's actions: a fixed
number of rounds of two utterances, each utterance an ordinary `act` of the
speaker with a free-text call to action that holds the transcript so far
(what a turn is asked and what counts as words said:
game_masters/utterances.py).

A talk belongs to the slot it is held in: the agents acted in that slot and
then talked, so one agent holds at most one conversation per slot (further
requests involving a busy agent are dropped, and the record of the talk held
lists them). Talk is between agents in the same place (where they were when
they asked, game_masters/whereabouts.py): a request to someone elsewhere is
dropped, in a `talk_dropped` record that says where each was; under a
scenario's `network: {talk: tied}` a request to someone not tied to the
initiator is dropped too, its record saying so (`reason`).
Conversations between different people run in parallel. The transcript is
delivered verbatim to both participants with the next slot's observations
(the receivers' norm identification reads it) and kept in a
`conversation` record; a turn that fails ends the talk (`ended` says
why), and a talk in which nothing was said reaches nobody. Rounds are
bounded so a chatty pair cannot stall the episode.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from concordia.typing import entity as entity_lib
from concordia.typing import entity_component

from crsec_concordia import observations, threads
from crsec_concordia.components.port import port_of
from crsec_concordia.game_masters import clock as clock_lib
from crsec_concordia.game_masters import exact_observations as queue_lib
from crsec_concordia.game_masters import whereabouts as whereabouts_lib
from crsec_concordia.game_masters.utterances import (
    clean_utterance, out_of_character, repeats_earlier, topic_of,
    turn_call_to_action)
from crsec_concordia.rundir.format import CONVERSATION, TALK_DROPPED

CONVERSATIONS_KEY = "conversations"
# Why a request was dropped before scheduling (its TALK_DROPPED record).
APART = "not in the same place"
UNTIED = "not tied"


class _TurnFailed(Exception):
  """A speaker's act raised (the endpoint failed past its retries)."""


def group_requests(requests: Sequence[Mapping[str, Any]],
                   names: Sequence[str]) -> list[dict[str, Any]]:
  """One conversation per (initiator, partner): several norms, one talk.

  Requests naming someone absent, or oneself, are dropped. The result is in
  (initiator, partner) order whatever order the requests came in.
  """
  grouped: dict[tuple[str, str], dict[str, Any]] = {}
  for r in requests:
    initiator, partner = r.get("initiator"), r.get("partner")
    if (initiator not in names or partner not in names
        or initiator == partner):
      continue
    key = (initiator, partner)
    if key not in grouped:
      grouped[key] = {"initiator": initiator, "partner": partner,
                      "topics": [], "norms": [], "norm_ids": [],
                      "behaviours": []}
    g = grouped[key]
    for field, value in (("topics", r.get("topic")), ("norms", r.get("norm")),
                         ("norm_ids", r.get("norm_id")),
                         ("behaviours", r.get("behaviour"))):
      if value and value not in g[field]:
        g[field].append(value)
  return [grouped[k] for k in sorted(grouped)]


def schedule(requests: Sequence[Mapping[str, Any]]
             ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
  """(talks held this slot, talks dropped): one talk per agent per slot.

  Taken in order (grouped requests are sorted by initiator, then partner),
  so the same requests always give the same talks.
  """
  busy: set[str] = set()
  held, dropped = [], []
  for r in requests:
    pair = {r["initiator"], r["partner"]}
    if pair & busy:
      dropped.append(r)
    else:
      busy |= pair
      held.append(r)
  return held, dropped


class NormConversations(entity_component.ContextComponent,
                        entity_component.ComponentWithLogging):
  """Runs the conversations agents ask for, when a slot is resolved."""

  # Agents taking no part (game_masters/interventions.py): a request to
  # talk with one is dropped unheld.
  absent: frozenset[str] = frozenset()

  def __init__(
      self,
      *,
      entities: Sequence[entity_lib.Entity],
      place: str,
      max_rounds: int,
      clock_key: str = clock_lib.CLOCK_KEY,
      observations_key: str = queue_lib.EXACT_OBSERVATIONS_KEY,
      whereabouts_key: str = whereabouts_lib.WHEREABOUTS_KEY,
      ties: Mapping[str, frozenset[str]] | None = None,
  ):
    """Creates the component.

    Args:
      entities: the agents (the simulation's live list).
      place: the short name of the setting.
      max_rounds: rounds of two utterances (initiator, then partner).
      clock_key: the key of the game master's SlotClock.
      observations_key: the key of the game master's ExactObservations
        (transcripts reach the participants with the next slot).
      whereabouts_key: the key of the game master's Whereabouts (without
        one, anyone may talk with anyone).
      ties: each agent's neighbours, when only tied agents may talk (an
        agent missing from it has none); None: ties do not govern talk.
    """
    super().__init__()
    if max_rounds < 1:
      raise ValueError("a conversation needs at least one round")
    self._entities = entities
    self._place = place
    self._rounds = max_rounds
    self._clock_key = clock_key
    self._observations_key = observations_key
    self._whereabouts_key = whereabouts_key
    self._ties = None if ties is None else dict(ties)
    self._lock = threading.Lock()
    self._records: list[dict[str, Any]] = []
    self._count = 0

  def drain_records(self) -> list[dict[str, Any]]:
    """The conversation records since the last drain."""
    with self._lock:
      records, self._records = self._records, []
    return records

  def _by_name(self) -> dict[str, entity_lib.Entity]:
    return {e.name: e for e in self._entities}

  def collect_requests(self) -> list[dict[str, Any]]:
    """Every agent's pending requests (its port's `talk_requests`), in a
    fixed (name) order."""
    requests = []
    for _, entity in sorted(self._by_name().items()):
      requests.extend(port_of(entity).talk_requests())
    return requests

  def _utterance(self, speaker: entity_lib.Entity,
                 stamp: observations.Stamp, request: Mapping[str, Any],
                 topic: str, turns: list[tuple[str, str]], norm: str | None,
                 behaviour: str | None) -> str | None:
    """One turn's words; None if two tries give no line of the speaker's own.

    An answer with no words in it, one that only repeats an earlier line,
    or the model stepping out of character, is not an utterance. The
    second try asks for something new outright (a different prompt, so a
    different seed). A talk whose speaker has nothing of their own to say
    ends there: no line is made up for anyone.
    """
    call = turn_call_to_action(
        stamp=stamp, place=self._place, initiator=request["initiator"],
        partner=request["partner"], topic=topic, speaker=speaker.name,
        turns=turns, norm=norm, behaviour=behaviour)
    for extra in ("", f"\n{speaker.name} says something not said yet."):
      try:
        answer = speaker.act(entity_lib.ActionSpec(
            call_to_action=call + extra,
            output_type=entity_lib.OutputType.FREE,
            tag=observations.SPEECH_TAG))
      except Exception as e:  # pylint: disable=broad-except
        # The endpoint failed past its retries: the talk ends here, and
        # the record says why (`ended`); the run goes on.
        raise _TurnFailed(f"{speaker.name}'s turn failed: "
                          f"{type(e).__name__}: {e}") from None
      if observations.is_no_action(answer):
        # An act that returns a no-action marker (StructuredAct raises
        # instead, having recorded its failure): no line of talk, and the
        # partner must not read it as the speaker's words.
        raise _TurnFailed(f"{speaker.name}'s turn failed: {answer.strip()}")
      said = clean_utterance(answer, speaker.name)
      if (said and not repeats_earlier(said, turns)
          and not out_of_character(said)):
        return said
    return None

  def run_conversation(self, request: Mapping[str, Any],
                       stamp: observations.Stamp) -> dict[str, Any]:
    """Runs one conversation; returns its record (see `deliver`)."""
    entities = self._by_name()
    initiator, partner = request["initiator"], request["partner"]
    topic = (" and ".join(topic_of(t) for t in request["topics"])
             or "how people behave here")
    norm = request["norms"][0] if request["norms"] else None
    behaviour = request["behaviours"][0] if request["behaviours"] else None
    turns: list[tuple[str, str]] = []
    ended = "rounds"
    for _ in range(self._rounds):
      for speaker in (initiator, partner):
        try:
          said = self._utterance(entities[speaker], stamp, request, topic,
                                 turns, norm, behaviour)
        except _TurnFailed as e:
          ended = str(e)
          break
        if said is None:
          ended = f"{speaker} had nothing new to say in character"
          break
        turns.append((speaker, said))
      if ended != "rounds":
        break
    return {"kind": CONVERSATION, **clock_lib.stamp_fields(stamp),
            "initiator": initiator, "partner": partner, "topic": topic,
            "norm": norm, "norms": list(request["norms"]),
            "norm_ids": list(request["norm_ids"]), "behaviour": behaviour,
            "ended": ended,
            "turns": [{"speaker": s, "text": t} for s, t in turns],
            **({"place": request["place"]} if "place" in request else {})}

  def deliver(self, record: Mapping[str, Any]) -> None:
    """Queues a talk's transcript for both participants' next observation.

    A talk in which nobody said a word (its first turn failed) is no talk:
    only its record says it was tried. An empty transcript would tell both
    that they talked about the topic, and the receiver would look for a
    norm in it.
    """
    if not record["turns"]:
      return
    stamp = observations.Stamp(record["day"], record["clock"], record["step"])
    text = observations.format_conversation(
        stamp, record["initiator"], record["partner"], record["topic"],
        [(t["speaker"], t["text"]) for t in record["turns"]])
    queue = self.get_entity().get_component(
        self._observations_key, type_=queue_lib.ExactObservations)
    for name in (record["initiator"], record["partner"]):
      queue.add(name, text)

  def _together(self, requests: list[dict[str, Any]],
                stamp: observations.Stamp
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the requests between agents in the same place, the records of
    those dropped because they were not)."""
    whereabouts = self.get_entity().get_all_context_components().get(  # type: ignore[attr-defined]
        self._whereabouts_key)
    if not isinstance(whereabouts, whereabouts_lib.Whereabouts):
      return requests, []
    kept, apart = whereabouts.together(requests, stamp.step)
    return kept, [{"kind": TALK_DROPPED, **clock_lib.stamp_fields(stamp),
                   "initiator": r["initiator"], "partner": r["partner"],
                   "norms": list(r["norms"]), "reason": APART,
                   "places": places} for r, places in apart]

  def _tied(self, requests: list[dict[str, Any]],
             stamp: observations.Stamp
             ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the requests between tied agents, the records of those dropped
    because the initiator is not tied to the partner)."""
    if self._ties is None:
      return requests, []
    kept, untied = [], []
    for r in requests:
      tied = r["partner"] in self._ties.get(r["initiator"], frozenset())
      (kept if tied else untied).append(r)
    return kept, [{"kind": TALK_DROPPED, **clock_lib.stamp_fields(stamp),
                   "initiator": r["initiator"], "partner": r["partner"],
                   "norms": list(r["norms"]), "reason": UNTIED}
                  for r in untied]

  def waits_on_model(self, hook: str) -> bool:
    """pre_act holds the talks when the slot is resolved."""
    return hook == "pre_act"

  def pre_act(self, action_spec: entity_lib.ActionSpec) -> str:
    # Agents asked to talk while observing at the start of this slot; the
    # talks are held while the slot's actions are adjudicated.
    if action_spec.output_type != entity_lib.OutputType.RESOLVE:
      return ""
    requests = group_requests(self.collect_requests(),
                              [n for n in self._by_name() if n not in self.absent])
    if not requests:
      return ""
    stamp = self.get_entity().get_component(
        self._clock_key, type_=clock_lib.SlotClock).current_stamp()
    requests, untied = self._tied(requests, stamp)
    requests, apart = self._together(requests, stamp)
    apart = untied + apart
    held, dropped = schedule(requests)
    results = threads.run_tasks({
        f"{i:04d}": functools.partial(self.run_conversation, r, stamp)
        for i, r in enumerate(held)})
    records = [results[k] for k in sorted(results)]
    for record in records:
      record["dropped"] = [
          {"initiator": d["initiator"], "partner": d["partner"],
           "norms": list(d["norms"])} for d in dropped
          if {d["initiator"], d["partner"]} & {record["initiator"],
                                                record["partner"]}]
    with self._lock:
      self._records.extend(records)
      self._records.extend(apart)
      self._count += len(records)
    for record in records:
      self.deliver(record)
      self._logging_channel({
          "Key": "conversation",
          "Summary": f"{record['initiator']} -> {record['partner']}: "
                     f"{record['topic']}",
          "Value": record})
    return ""

  def get_state(self) -> entity_component.ComponentState:
    with self._lock:
      return {"conversations": self._count}

  def set_state(self, state: entity_component.ComponentState) -> None:
    with self._lock:
      self._count = int(state.get("conversations", 0))

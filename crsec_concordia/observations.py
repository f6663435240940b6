"""The exact text of the game master's observations, and its parser.

The café game master writes every observation in this format and never lets
a model reword it; the CRSEC components parse it to know who did what, where
and when. A Concordia user's own game master can use `format_*` to feed our
components; other observations are simply not treated as behaviour.

  [Day 1 09:20 | step 8] It is Day 1 09:20.
  [Day 1 09:10 | step 7] Carlos Gomez (indoors): Carlos lights a cigarette.
  [Day 1 09:20 | step 8] Carlos Gomez (indoors, continuing): Carlos lights a cigarette.
  [Day 1 09:10 | step 7] Tom Gomez (reading_room): Tom opens a book.
  [Day 1 09:10 | step 7] Conversation between A and B about smoking indoors:
  A: "..."
  B: "..."

Every slot's observation opens with the clock line of the slot it is
delivered in: the events it reports happened in the slot before, and an
agent that only learnt the time from them would plan and record one slot
late.
"""

from __future__ import annotations

import dataclasses
import re

from crsec_concordia.name_patterns import pattern_of

_HEADER = re.compile(r"^\[Day (?P<day>\d+) (?P<clock>\d\d:\d\d) \| step (?P<step>\d+)\] ")
# The place is the id of one of the scenario's places (indoors or outdoors
# in a scenario that declares none).
_ACTION = re.compile(r"^(?P<actor>[^:()\n]+?) \((?P<place>[a-z][a-z0-9_]*)(?P<continuing>, continuing)?\): (?P<text>.*)$", re.S)
# The body's turns are one per line as delivered; Concordia's observation
# component joins lines with spaces when it shows them, so a turn is found
# by its shape (`Name: "words"`; words never hold a double quote) anywhere.
_CONVERSATION = re.compile(
    r"^Conversation between (?P<a>[^\n]+?) and (?P<b>[^\n]+?) about (?P<topic>[^\n]*?):[\n ](?P<body>.*)$",
    re.S)
_TURN = re.compile(r'(?:^|\s)(?P<speaker>[^:\n"]+): "(?P<text>[^"\n]*)"')

# How an agent's act says it produced no action of its own (the model failed
# its schema, or only copied others): the game master records the turn
# without adjudicating it and observers pass over it, so a failure is never
# judged as behaviour.
NO_ACTION_MARK = "(no valid action"


def is_no_action(text: str) -> bool:
  return NO_ACTION_MARK in text


# An answer with no word beyond the actor's name ("", "Abigail Chen."), as a
# model too weak for the prompt gives: the referee, asked about it, narrates
# a scene of its own making, which observers would read as what happened
# (docs/trials/models.md#a-model-too-small).
NO_DEED = f"{NO_ACTION_MARK}: the answer said nothing the agent does)"
_LETTER = re.compile(r"[^\W\d_]")


def says_nothing(actor: str, text: str) -> bool:
  """Whether `text` holds no word but the actor's name (or its first)."""
  rest = text
  for name in (actor, *actor.split()[:1]):
    rest = pattern_of(rf"\b{re.escape(name)}\b", re.I).sub(" ", rest)
  return not _LETTER.search(rest)


# An answer written as a data record (a JSON object or list, whole or cut
# off by the length limit) instead of a sentence: no model that followed the
# prompt writes one, and observers would read the record as what happened.
_DATA = re.compile(r'\s*(?:\{\s*"|\[\s*[{"\[])')


def is_data(text: str) -> bool:
  """Whether `text` is a data record (`{"...` or `[{...`), not a sentence."""
  return _DATA.match(text) is not None


# How an agent's act says that it goes on with what it was doing, with no
# new decision (no model call): the mark, then the action it continues, word
# for word. The game master carries that action's adjudication forward
# instead of adjudicating it again (docs/design.md, "Acting").
CONTINUE_MARK = "(continuing) "


def continuing(action: str) -> str:
  """The action text an agent's act returns when it goes on with `action`."""
  return f"{CONTINUE_MARK}{action.strip()}"


def continued_action(text: str) -> str | None:
  """The action `text` continues, or None if it is a new action."""
  text = text.strip()
  return text[len(CONTINUE_MARK):].strip() if text.startswith(
      CONTINUE_MARK) else None


# The tag of the action spec for one conversation turn: the agent answers
# with spoken words, not with a narrated action.
SPEECH_TAG = "speech"
# The tag of the action spec of a slot in which the game master puts an
# occasion to the agent: a reason for a plan-driven act to decide anew.
OCCASION_TAG = "occasion"


@dataclasses.dataclass(frozen=True)
class Stamp:
  day: int
  clock: str
  step: int

  @property
  def time(self) -> str:
    return f"Day {self.day} {self.clock}"


@dataclasses.dataclass(frozen=True)
class ClockObservation:
  """The time of the slot an observation is delivered in."""
  stamp: Stamp


@dataclasses.dataclass(frozen=True)
class ActionObservation:
  """One agent's action in one slot. `continued`: the actor goes on with
  the action it began in an earlier slot (the same text), nothing new."""
  stamp: Stamp
  actor: str
  place: str
  text: str
  continued: bool = False


@dataclasses.dataclass(frozen=True)
class ConversationObservation:
  stamp: Stamp
  participants: tuple[str, str]
  topic: str
  turns: tuple[tuple[str, str], ...]

  @property
  def transcript(self) -> str:
    return "\n".join(f'{s}: "{t}"' for s, t in self.turns)


def header(stamp: Stamp) -> str:
  return f"[Day {stamp.day} {stamp.clock} | step {stamp.step}] "


def format_clock(stamp: Stamp) -> str:
  return f"{header(stamp)}It is {stamp.time}."


def format_action(stamp: Stamp, actor: str, place: str, text: str,
                  continued: bool = False) -> str:
  """One action event; a continued one says so plainly in its header."""
  where = f"{place}, continuing" if continued else place
  return f"{header(stamp)}{actor} ({where}): {text.strip()}"


def action_line(actor: str, place: str | None, text: str) -> str:
  """An action as a prompt reads it, its actor named once: an action
  starts with its actor's name ("Tom Gomez (indoors) reads."), so the
  record's "Tom Gomez (indoors): Tom Gomez reads." says the name twice; an
  action that does not start with it keeps the record's form. With no
  `place` (a heading above the line says it), none is written."""
  text = text.strip()
  where = f" ({place})" if place else ""
  if text.startswith(f"{actor} "):
    return f"{actor}{where}{text[len(actor):]}"
  return f"{actor}{where}: {text}"


_PLACED = re.compile(r"^(?P<actor>[^:()\n]+?) \((?P<place>[a-z][a-z0-9_]*)\)"
                     r"(?P<rest>:? .*)$", re.S)


def unplaced(line: str) -> tuple[str | None, str]:
  """(its place, the line without it) for an `action_line` with a place
  (or the record's form); (None, the line) for any other line."""
  found = _PLACED.match(line)
  if found is None:
    return None, line
  return found["place"], found["actor"] + found["rest"]


def format_conversation(stamp: Stamp, a: str, b: str, topic: str,
                        turns: list[tuple[str, str]]) -> str:
  body = "\n".join(f'{s}: "{t.strip()}"' for s, t in turns)
  return f"{header(stamp)}Conversation between {a} and {b} about {topic}:\n{body}"


def parse_stamp(text: str) -> Stamp | None:
  m = _HEADER.match(text)
  if not m:
    return None
  return Stamp(int(m["day"]), m["clock"], int(m["step"]))


# Anywhere, not only at a line's start: a slot's events arrive as one
# observation, one per line, and Concordia's memory shows it on one line.
_ANY_HEADER = re.compile(r"\[Day \d+ \d\d:\d\d \| step \d+\] ")


def split(text: str) -> list[str]:
  """Splits one observation into its events (one per header)."""
  starts = [m.start() for m in _ANY_HEADER.finditer(text)]
  if not starts:
    return [text] if text.strip() else []
  return [text[a:b].strip() for a, b in zip(starts, starts[1:] + [len(text)])]


Event = ClockObservation | ActionObservation | ConversationObservation


def parse_all(text: str) -> list[Event]:
  """Every structured event in an observation; other text is ignored."""
  return [e for part in split(text) if (e := parse(part)) is not None]


def events_of(text: str, kind: type) -> list:
  """The events of one kind (e.g. ActionObservation) in an observation."""
  return [e for e in parse_all(text) if isinstance(e, kind)]


def parse(text: str) -> Event | None:
  """The structured observation, or None for any other text."""
  m = _HEADER.match(text)
  if not m:
    return None
  stamp = Stamp(int(m["day"]), m["clock"], int(m["step"]))
  rest = text[m.end():]
  if rest.startswith(f"It is {stamp.time}."):
    return ClockObservation(stamp)
  if c := _CONVERSATION.match(rest):
    turns = [(t["speaker"].strip(), t["text"])
             for t in _TURN.finditer(c["body"])]
    return ConversationObservation(stamp, (c["a"], c["b"]), c["topic"],
                                   tuple(turns))
  if a := _ACTION.match(rest):
    return ActionObservation(stamp, a["actor"].strip(), a["place"],
                             a["text"].strip(), bool(a["continuing"]))
  return None

"""What one turn of a talk is asked, and what counts as words said in it.

A NormConversations turn is an ordinary act of the speaker with a free-text
call to action (`turn_call_to_action`); its answer is cut to the words
spoken (`clean_utterance`), and an answer that only repeats an earlier
line or is the model speaking out of character is no utterance (asked once
more, then the talk ends). Kept apart from the component
(game_masters/conversations.py), which schedules and runs the talks: the
text rules are read alone by the prompt-leak and robustness checks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from crsec_concordia import observations, repetition

MAX_UTTERANCE_CHARS = 400
# Word-sequence similarity at which an utterance counts as a repeat.
ECHO_RATIO = 0.7

_SPEECH_VERBS = (r"(?:says?|said|asks?|asked|replies|replied|responds?|"
                 r"responded|answers?|answered|tells|told|whispers?|adds?|"
                 r"shouts?|explains?|nods|smiles)")


def clean_utterance(text: str, speaker: str) -> str:
  """The words spoken, without quotes, name prefixes or stage directions.

  Agents answer in many shapes: `Abigail Chen: "Hi"`, `Abigail says, "Hi"`,
  `"Hi"`, or plain `Hi`. The transcript keeps only the words, on one line;
  "" if there are none (a bare name or speech tag), which is no line of talk.
  """
  text = " ".join(text.replace("{", "(").replace("}", ")").split())
  quoted = re.findall(r'"([^"]+)"', text) or re.findall(
      r"\u201c([^\u201d]+)\u201d", text)
  # Single quotes after narration: `Abigail smiles: 'I'm glad you came.'`
  # (apostrophes inside the words rule out pairing quotes by regex).
  single = re.search(r"[:,]\s+'(.+)", text) if not quoted else None
  if quoted:
    text = " ".join(q.strip() for q in quoted)
  elif single:
    text = single.group(1).strip()
    text = text[:-1] if text.endswith("'") else text
  else:
    names = sorted({speaker, speaker.split()[0]}, key=len, reverse=True)
    for name in names:
      pattern = (rf"^{re.escape(name)}\s*(?::|,?\s+{_SPEECH_VERBS}\b[^:,]*"
                 rf"[:,]?)\s*")
      new = re.sub(pattern, "", text, flags=re.I)
      if new != text:
        text = new
        break
    text = text.strip().strip("'\"").strip()
  text = text.replace('"', "'")
  if len(text) > MAX_UTTERANCE_CHARS:
    text = text[:MAX_UTTERANCE_CHARS].rsplit(" ", 1)[0] + "..."
  return text


def repeats_earlier(text: str, turns: Sequence[tuple[str, str]],
                    threshold: float = ECHO_RATIO) -> bool:
  """Whether an utterance only repeats one already said (by anyone).

  Small models copy the last line of a transcript; a copied line adds
  nothing to the talk and would be read by IdentifyNorm as a second voice.
  """
  return repetition.copied_from(
      text, (said for _, said in turns), ratio=threshold) is not None


_OUT_OF_CHARACTER = re.compile(
    r"\b(?:I'?m sorry,? but I(?: can(?:'|no)t| am unable| don'?t know|"
    r"'m not sure| am not sure)|I can(?:'|no)t "
    r"(?:assist|help with|participate|engage)|as an AI\b|language model|"
    r"(?:will|would) say next)"
    # Only a speech tag, no words: "Abigail Chen, Tamara Rodriguez says,".
    r"|\b(?:says?|said|asks?|asked|replies|replied)\s*[,:]?\s*$",
    re.I)


def out_of_character(text: str) -> bool:
  """Whether an utterance is the model refusing, not the person speaking.

  The 1.5B model sometimes answers "I'm sorry, but I can't participate in
  that discussion" (or "... I don't know what Tom Gomez will say next") in
  the middle of a café chat, or gives a speech tag with nothing said.
  """
  return bool(_OUT_OF_CHARACTER.search(text))


def turn_call_to_action(*, stamp: observations.Stamp, place: str,
                        initiator: str, partner: str, topic: str,
                        speaker: str, turns: Sequence[tuple[str, str]],
                        norm: str | None = None,
                        behaviour: str | None = None) -> str:
  """The free-text question for one utterance (braces never appear).

  Who speaks to whom is said outright: with "A is talking with B about X"
  alone, the 1.5B model let the initiator open with the partner's reply
  ("Thank you for the reminder, I'll keep my voice down"). No instruction
  about the answer's form here: the act component asks for spoken words
  (a second, longer instruction made the model refuse or echo).
  """
  listener = partner if speaker == initiator else initiator
  lines = [f"It is {stamp.time} at {place}."]
  if speaker == initiator and behaviour:
    lines.append(f"{initiator} saw this: {behaviour}")
    if norm:
      lines.append(f"To {initiator}, this goes against a norm: {norm}")
      # The topic is that norm, just said: not said again.
      topic = "this" if topic == topic_of(norm) else topic
  if turns:
    lines.append(f"{initiator} and {partner} are talking about {topic}. "
                 "Conversation so far:")
    lines.extend(f'{s}: "{t}"' for s, t in turns)
    lines.append(f"What does {speaker} say next, in reply to {listener}?")
  else:
    lines.append(f"{initiator} goes over to {partner} to talk about {topic}.")
    lines.append(f"What does {speaker} say to {listener}?")
  return "\n".join(lines).replace("{", "(").replace("}", ")")


def topic_of(text: str) -> str:
  """A norm as the topic of a sentence: "No smoking indoors." -> "no smoking indoors"."""
  text = " ".join(text.split()).rstrip(".!?;: ")
  if len(text) > 1 and text[0].isupper() and text[1].islower():
    text = text[0].lower() + text[1:]
  return text

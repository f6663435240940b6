"""Which rule a deed is most about, found sentence by sentence
(operations/detect_conflict_relevance.py), and the sentence shown to
DetectConflict."""

from __future__ import annotations

from crsec_concordia import embedding
from crsec_concordia import observations as obs
from crsec_concordia.components.conflict_detector import ConflictDetector
from crsec_concordia.models.scripted import ScriptedModel
from crsec_concordia.norms import PersonalNorm
from crsec_concordia.operations import Observed
from crsec_concordia.operations.detect_conflict import prompt
from crsec_concordia.operations.detect_conflict_relevance import (
    nearest_rules, sentences)

# An action as the embedded model wrote it in a demo: the smoking is in its
# second sentence, and embedded whole it was barely about the rule (0.17).
BURIED = ("Carlos Gomez continues to drink coffee while waiting for Tamara "
          "Rodriguez to finish her meal. He stays seated at his corner table, "
          "lighting one cigarette after another, as he has always done.")
RULES = ["People should keep their voices down in public.",
         "People should not smoke indoors.",
         "When someone makes the room unpleasant for others she speaks up, "
         "warmly but directly."]


def test_sentences_split_at_ends_not_at_titles_or_numbers():
  assert sentences('He says "Stop it!" Then he leaves. Mr. Smith waits.') == [
      'He says "Stop it!"', "Then he leaves.", "Mr. Smith waits."]
  assert sentences("Pays 3.50 dollars  for a\ncoffee.") == [
      "Pays 3.50 dollars for a coffee."]
  assert sentences("") == [""]


def test_the_sentence_about_a_rule_finds_it(embedder):
  whole = embedding.similarity(embedder, [BURIED], RULES)[0]
  near, = nearest_rules(embedder, [BURIED], RULES)
  assert near.rule == 1
  assert near.focus == sentences(BURIED)[1]
  assert near.similarity > float(whole[1]) + 0.1
  # One sentence: the text itself, nothing to point at.
  one, = nearest_rules(embedder, ["Carlos Gomez lights a cigarette."], RULES)
  assert (one.rule, one.focus) == (1, "")
  assert nearest_rules(embedder, [BURIED], []) == [None]


def test_detect_conflict_is_shown_the_sentence_nearest_the_rule(embedder):
  detector = ConflictDetector(ScriptedModel(), embedder=embedder)
  norms = [PersonalNorm(id=f"n{i}", content=c, utility=80,
                        type="injunctive") for i, c in enumerate(RULES)]
  seen = obs.ActionObservation(obs.Stamp(1, "09:45", 4), "Carlos Gomez",
                               "indoors", BURIED)
  (event, item), = detector.related([seen], norms)
  assert event is seen
  assert item == Observed("Carlos Gomez", BURIED, "indoors", norms[1],
                          sentences(BURIED)[1])
  text = prompt("Abigail Chen", [item])
  assert (f'The part of it nearest the rule: "{sentences(BURIED)[1]}"\n'
          f"Rule: {RULES[1]}") in text
  # A one-sentence deed is shown as before, with no such line.
  assert "nearest the rule" not in prompt(
      "Abigail Chen", [Observed("Carlos Gomez", "Carlos Gomez lights a "
                                "cigarette.", "indoors", norms[1])])

"""A norm's type comes from its wording where the wording settles it
(crsec_concordia/operations/norm_type.py): the 1.5B model typed 162 of the
2-day café's 163 norms "descriptive", "People should not smoke indoors."
among them."""

import pytest

from crsec_concordia.embedding import shared_embedder
from crsec_concordia.norms import NormDatabase
from crsec_concordia.operations import (create_norm, identify_norm,
                                        immediate_evaluation, synthesize_norm)
from crsec_concordia.operations.norm_type import worded_type
from tests import crsec_script as cs


@pytest.mark.parametrize("content, expected", [
    ("People should not take produce from other plots.", "injunctive"),
    ("Visitors must return books to the desk.", "injunctive"),
    ("Do not leave your bag on the seats.", "injunctive"),
    ("No running near the pool.", "injunctive"),
    ("Nobody is allowed to park in front of the gate.", "injunctive"),
    ("Everyone has to wear a helmet on the site.", "injunctive"),
    ("Most people wipe down the machines after using them.", "descriptive"),
    ("People usually bring their own towel.", "descriptive"),
    ("Colleagues tend to clean their own mugs after lunch.", "descriptive"),
    # Neither, or both: the wording settles nothing, the model's type stands.
    ("Keep the terrace tidy.", None),
    ("Tip after meals.", None),
    ("Most people think you should queue.", None),
    ("No one smokes in the hall.", None),
    ("No one should smoke in the hall.", "injunctive"),
])
def test_the_wording_settles_the_type_or_leaves_it_open(content, expected):
  assert worded_type(content) == expected


def test_created_norms_take_the_type_their_wording_shows():
  model = cs.cafe_model(**{cs.CREATE: {"norms": [
      {"content": "People should not run near the pool.",
       "type": "descriptive", "utility": 90},
      {"content": "Most swimmers shower before swimming.",
       "type": "injunctive", "utility": 60},
      {"content": "Keep the lanes clear.", "type": "descriptive",
       "utility": 50}]}})
  norms = create_norm(model, name="Ana Ruiz", persona="A lifeguard.",
                      setting="A pool", count=3, on_failure=None)
  assert [n["type"] for n in norms] == ["injunctive", "descriptive",
                                        "descriptive"]


def test_identified_and_synthesized_norms_take_their_wording_s_type():
  model = cs.cafe_model(**{
      cs.IDENTIFY: {"rule": "Readers must whisper in the reading room.",
                    "is_rule": True, "type": "descriptive", "utility": 70},
      cs.SYNTHESIZE: {"content": "Most readers keep their voices low.",
                      "type": "injunctive", "weights": [3, 1]}})
  found = identify_norm(model, name="Ana Ruiz", source_kind="conversation",
                        source_text="Ben: please whisper in here.",
                        on_failure=None)
  assert found["type"] == "injunctive"
  db = NormDatabase("Ana Ruiz")
  held = [db.add(c, "injunctive", 50, origin="conversation", source_text="x")
          for c in ("Whisper in the reading room.", "Speak softly here.")]
  abstract = synthesize_norm(model, theme="voices", norms=held,
                             on_failure=None)
  assert abstract.type == "descriptive"


def test_evaluation_corrects_a_type_its_wording_contradicts():
  model = cs.cafe_model(**{cs.EVALUATE: {
      "supported": True, "type": "descriptive", "utility": 60}})
  db = NormDatabase("Ana Ruiz")
  candidate = db.add("Visitors must return books to the desk.", "descriptive",
                     50, origin="conversation",
                     source_text="Ben: books go back to the desk, always.")
  verdict = immediate_evaluation(
      model, shared_embedder(), name="Ana Ruiz", persona="A librarian.",
      candidate=candidate, held=[], known_names=["Ana Ruiz"], on_failure=None)
  assert verdict.accepted and verdict.type == "injunctive"
  assert verdict.detail == "type corrected"

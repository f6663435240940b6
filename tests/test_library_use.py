"""The README's ten-line composition works with a user's model and embedder.

A Concordia `LanguageModel` that only samples text and a plain embedding
function (tests/library_case.py) build a normative agent from its prefab;
shown a smoker, it records the conflict with its norm, asks to talk, and
acts. Its components use the embedder given to the memory bank, never the
default MiniLM.
"""

from __future__ import annotations

from crsec_concordia import embedding
from crsec_concordia.components import CONFLICT_DETECTOR_KEY
from examples import compose_normative_agent as example
from tests import library_case


def test_a_composed_agent_records_a_conflict(monkeypatch):
  def no_default():
    raise AssertionError("the default embedder was loaded")

  monkeypatch.setattr(embedding.vectors, "shared_embedder", no_default)
  model = library_case.UsersModel()
  carlos = example.compose(model, library_case.plain_embedder)
  [conflict] = example.conflicts(carlos)
  assert conflict["actor"] == "Tom Gomez"
  assert conflict["norm"] == "No smoking indoors."
  assert conflict["evidence"] == "Tom lights a cigarette at the next table."
  [request] = carlos.get_component(
      CONFLICT_DETECTOR_KEY).pop_conversation_requests()
  assert request["partner"] == "Tom Gomez"
  # The schema was stated in the prompt for the text-only model.
  assert any("valid for this JSON schema" in p for p in model.prompts)


def test_the_components_use_the_memory_banks_embedder():
  carlos = example.compose(library_case.UsersModel(),
                           library_case.plain_embedder)
  detector = carlos.get_component(CONFLICT_DETECTOR_KEY)
  used = detector._embedding()  # pylint: disable=protected-access
  assert isinstance(used, embedding.CachedEmbedder)
  assert used.wrapped is library_case.plain_embedder

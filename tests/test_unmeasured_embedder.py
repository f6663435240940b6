"""An embedder nobody measured drops nothing, and the run says so once.

Every gate that would skip a judgement reads the embedder's record of
thresholds (embedding/thresholds.py); with no record for the embedder in
use, the record opens every gate: a deed with no word in common with a
norm is still put to DetectConflict, and run.log, Concordia's log and
run.json each say once that the thresholds were not measured.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import zlib

import numpy as np
from concordia.associative_memory import basic_associative_memory

from crsec_concordia import runner
from crsec_concordia import embedding
from crsec_concordia.embedding import identity as embedder_identity
from crsec_concordia.components import CONFLICT_DETECTOR_KEY
from crsec_concordia.prefabs import PREFABS
from crsec_concordia.testing import SchemaModel, bag_of_words
from crsec_concordia.testing import plainest as filled
from crsec_concordia.metrics.classifiers import measured
from tests import crsec_script as cs


def _plain_words(text: str) -> np.ndarray:
  """Hashed words only: texts with no word in common have cosine 0."""
  vector = np.zeros(64, dtype=np.float32)
  for word in re.findall(r"[a-z]+", text.lower()):
    vector[zlib.crc32(word.encode()) % 64] += 1.0
  return vector


def test_an_unmeasured_embedders_record_opens_every_gate():
  record = embedding.thresholds_of(bag_of_words)
  assert not record.measured
  assert record.relevance < -1 and record.tag < -1 and record.look < -1
  assert record.duplicate > 1 and record.near_tie > 2
  assert embedding.thresholds_of(None).measured


def test_the_readme_composition_with_no_calibration_judges_the_deed(caplog):
  """"Tom lights a cigarette" shares no word with "No smoking indoors.":
  a cosine of 0, below MiniLM's relevance floor, and judged all the same."""
  embed = embedder_identity.named(_plain_words, "plain-words-readme")
  assert embedding_cosine(embed, "Tom lights a cigarette at the next table.",
                          "No smoking indoors.") == 0
  prefab = copy.deepcopy(PREFABS["normative__Entity"])
  prefab.params = {"name": "Carlos Gomez", "persona": "A poet.",
                   "role": "entrepreneur", "setting": "Hobbs Cafe",
                   "initial_norms": [{"content": "No smoking indoors.",
                                      "type": "injunctive", "utility": 90}]}
  bank = basic_associative_memory.AssociativeMemoryBank(
      sentence_embedder=embed)
  with caplog.at_level(logging.WARNING):
    carlos = prefab.build(SchemaModel(), bank)
    carlos.observe("[Day 1 09:10 | step 1] Tom Gomez (indoors): Tom lights "
                   "a cigarette at the next table.")
    carlos.act()
  channel = carlos.measurements.get_channel(CONFLICT_DETECTOR_KEY)
  conflicts = [d["Value"] for d in channel if d.get("Key") == "conflict"]
  assert [c["norm"] for c in conflicts] == ["No smoking indoors."]
  told = [d["Value"] for d in channel
          if d.get("Key") == "similarity_thresholds"]
  assert told == [{"embedder": "plain-words-readme", "measured": False}]
  warnings = [r for r in caplog.records
              if "no similarity thresholds measured" in r.getMessage()]
  assert len(warnings) == 1


def embedding_cosine(embed, a: str, b: str) -> float:
  x, y = embed(a), embed(b)
  return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def test_an_unmeasured_embedders_run_says_so_once(tmp_path):
  embed = embedder_identity.named(bag_of_words, "bag-of-words-run-check")
  model = cs.cafe_model()
  model.add_rule(r"You are the referee", lambda prompt, schema: filled(schema))
  run_dir = runner.run_episode(
      "hobbs_cafe_mini", arm="normative", seed=1, out_dir=tmp_path / "run",
      model=model, embedder=embed, steps=1, progress=False)
  info = json.loads((run_dir / "run.json").read_text())
  assert info["similarity_thresholds"] == {
      "embedder": "bag-of-words-run-check", "measured": False}
  # No pair (model, embedder) was measured to gain from a structure.
  assert "no thresholds measured" in info["referee_policy"]["source"]
  assert info["referee_policy"]["structures"] == []
  log = (run_dir / "run.log").read_text()
  assert log.count("no similarity thresholds measured") == 1
  entries = [p for p in run_dir.rglob("*") if p.is_file()
             and p.name not in ("run.json", "run.log")
             and '"similarity_thresholds"' in p.read_text(errors="ignore")]
  assert entries, "Concordia's log has no entry of the unmeasured embedder"


def test_minilms_runs_record_no_thresholds():
  assert embedding.of(bag_of_words).thresholds_recorded() == {
      "similarity_thresholds": {"embedder": "crsec_concordia.testing:bag_of_words",
                                "measured": False}}


def test_the_report_says_how_an_unmeasured_embedder_s_matcher_decided():
  """The page names what stood in for the thresholds nobody measured: the
  judge asked of every pair, or MiniLM's cuts when no judge was given."""
  block = {"name": "mine:embed", "fingerprint": "abc", "calibrated": False,
           "thresholds_measured": False}
  judged = measured.embedder_note({"embedder": block, "judge": True})
  assert "every pair to its judge" in judged
  unjudged = measured.embedder_note({"embedder": block, "judge": False})
  assert "no judge was given" in unjudged and "--llm-judge" in unjudged
  measured_block = {**block, "thresholds_measured": True}
  assert "judge" not in measured.embedder_note({"embedder": measured_block})

"""`crsec calibrate --thresholds`: an embedder's record derived and stored.

Derived from the labelled cases alone (no model is asked), stored under
the embedder's name with its fingerprint, and read back as measured; the
shipped MiniLM record holds every field a consumer reads.
"""

from __future__ import annotations

import json

from crsec_concordia import embedding
from crsec_concordia.embedding import identity as embedder_identity
from crsec_concordia.embedding import records as thresholds
from crsec_concordia.cli import main
from crsec_concordia.embedding.thresholds import MINILM_THRESHOLDS
from crsec_concordia.metrics.classifiers import similarity_calibration as sc
from crsec_concordia.testing import bag_of_words


def test_the_widest_cut_lies_midway_in_the_widest_clean_gap():
  assert sc.widest_cut([0.5, 0.6, 0.9], [0.1, 0.2]) == 0.35
  assert sc.widest_cut([0.3], [0.1, 0.4]) == 0.2  # Fewest errors first.
  assert sc.widest_cut([], [0.1, 0.4]) == 0.4001  # Past every case.


def test_minilms_record_ships_with_every_field():
  data = json.loads(thresholds.path_for(
      embedder_identity.MINILM_NAME, thresholds.SHIPPED_THRESHOLDS)
      .read_text())
  assert set(thresholds.JUDGEMENT_FIELDS) <= set(data)
  assert MINILM_THRESHOLDS.fingerprint == embedder_identity.MINILM_FINGERPRINT
  assert (MINILM_THRESHOLDS.relevance, MINILM_THRESHOLDS.tag,
          MINILM_THRESHOLDS.duplicate) == (0.15, 0.16, 0.85)


def test_calibrate_derives_and_stores_an_embedders_thresholds(tmp_path,
                                                               capsys):
  assert main(["calibrate", "--thresholds", "--embedder",
               "crsec_concordia.testing:bag_of_words",
               "--out", str(tmp_path)]) == 0
  identity = embedding.identity_for(bag_of_words)
  found = thresholds.load_similarity(identity.name, identity.fingerprint,
                                     dirs=[tmp_path])
  assert found is not None and found.measured
  assert thresholds.load_similarity(identity.name, "another-model",
                                    dirs=[tmp_path]) is None
  assert f"thresholds: {tmp_path}" in capsys.readouterr().out
  # Every labelled breach of the deed/norm pairs is judged.
  cosines = sc.deed_norm_cosines(bag_of_words)
  assert min(cosines["breach"]) >= found.relevance

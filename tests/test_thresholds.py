"""An embedder's thresholds are calibration data, loaded by its name."""

from __future__ import annotations

import dataclasses

import pytest

from crsec_concordia.embedding import records as thresholds
from crsec_concordia.embedding.identity import MINILM_NAME
from crsec_concordia.errors import UserError
from crsec_concordia.metrics.classifiers import matching


def test_the_matcher_reads_the_default_embedders_thresholds():
  shipped = thresholds.load_similarity(
      MINILM_NAME, dirs=[thresholds.SHIPPED_THRESHOLDS]).matcher
  assert shipped.embedder == MINILM_NAME
  assert (matching.MATCH_THRESHOLD, matching.RELATED_THRESHOLD,
          matching.JUDGE_FLOOR, matching.CHOSEN_RULE.threshold) == (
              shipped.match, shipped.related, shipped.judge_floor,
              shipped.rule)


def test_thresholds_are_saved_and_loaded_by_the_embedders_name(tmp_path):
  shipped = thresholds.load_similarity(
      MINILM_NAME, dirs=[thresholds.SHIPPED_THRESHOLDS])
  mine = dataclasses.replace(
      shipped, embedder="other-embedder", fingerprint="f00",
      matcher=thresholds.Thresholds("other-embedder", 0.6, 0.61, 0.3, 0.35))
  path = thresholds.save_similarity(mine, tmp_path)
  assert path.name == "other-embedder.json"
  assert thresholds.load_similarity("other-embedder", dirs=[tmp_path]) == mine
  assert thresholds.load_similarity("other-embedder", "another",
                                    dirs=[tmp_path]) is None
  assert thresholds.load_similarity("unmeasured", dirs=[tmp_path]) is None
  path.write_text("{}", encoding="utf-8")
  with pytest.raises(UserError, match="not an embedder's thresholds"):
    thresholds.load_similarity("other-embedder", dirs=[tmp_path])

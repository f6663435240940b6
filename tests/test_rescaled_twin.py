"""The same embedder on another scale is calibrated to the same decisions.

MiniLM's vectors with a constant component appended (renormalised) give
cosines (c + k) / (1 + k): every cosine rises monotonically into about
0.6-1.0, as some hosted embeddings behave. Its thresholds derived from the
labelled cases (similarity_calibration.derive, what `crsec calibrate
--thresholds --embedder` runs) must give the decisions MiniLM's derived
thresholds give: which deeds reach DetectConflict (the relevance floor),
which tags the referee's gate keeps and which actions it spares, and which
norms the matcher finds mean a target, on every venue's probes and on the
golden run's records; at most one case in a hundred may differ (the
derived thresholds are rounded).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from crsec_concordia import embedding
from crsec_concordia.embedding import identity as embedder_identity
from crsec_concordia.calibration import probes as probes_lib
from crsec_concordia.game_masters.referee import similarity_of, tag_gate
from crsec_concordia.metrics.classifiers import similarity_calibration as sc
from crsec_concordia.metrics.classifiers.labels import (VENUES, load_items,
                                                        venue_behaviours,
                                                        venue_targets)
from crsec_concordia.metrics.classifiers.matching import (CHOSEN_RULE,
                                                          NormMatcher)
from crsec_concordia.operations import detect_conflict_relevance as relevance
from crsec_concordia.scenarios import load_scenario

pytest.importorskip("sentence_transformers")
GOLDEN = (Path(__file__).resolve().parent / "golden" / "mini_cafe"
          / "expected" / "events.jsonl")
SQUEEZE = 1.5  # (c + 1.5) / 2.5: cosine 0 becomes 0.6, 1 stays 1.


class Twin:
  """MiniLM's unit vector and a constant, renormalised."""

  def __init__(self, minilm):
    self.minilm = minilm

  def __call__(self, text: str) -> np.ndarray:
    v = np.asarray(self.minilm(text), dtype=np.float64)
    v = np.append(v / np.linalg.norm(v), np.sqrt(SQUEEZE))
    return v / np.linalg.norm(v)


@pytest.fixture(scope="module")
def pair():
  minilm = embedding.cached(embedding.shared_embedder())
  twin = embedding.cached(embedder_identity.named(Twin(minilm),
                                                  "minilm-rescaled-twin"))
  return ((minilm, sc.derive(minilm)), (twin, sc.derive(twin)))


def _golden_actions() -> list[str]:
  return [json.loads(line)["action"]
          for line in GOLDEN.read_text("utf-8").splitlines()
          if json.loads(line)["kind"] == "action"]


def _venues():
  for venue in probes_lib.probed_venues():
    scenario = load_scenario(venue)
    yield scenario, probes_lib.load_probes(probes_lib.probes_path(scenario),
                                           scenario)


def _decisions(embedder, record) -> list:
  """Every decision a cosine threshold makes, case by case."""
  out = []
  similarity = similarity_of(embedder)
  norms = [t.text for v in VENUES for t in venue_targets(v)]
  for scenario, cases in _venues():
    described = {b.id: b.description for b in scenario.behaviours}
    words = tag_gate.place_words(scenario.setting)
    actions = [c.action for c in cases.referee]
    if scenario.name == "hobbs_cafe_mini":
      actions += _golden_actions()
    for action in actions:
      near = tag_gate.near_scores(action, described, similarity, words)
      out.append(("spared", max(near.values()) < record.spare_far))
      out.append(("tags", tuple(sorted(i for i, s in near.items()
                                       if s >= record.tag))))
    for case in cases.conflicts:
      found, = relevance.nearest_rules(embedder, [case.action], [case.norm])
      out.append(("judged", found.similarity >= record.relevance))
    for action in actions:
      found = relevance.nearest_rules(embedder, [action], norms)[0]
      out.append(("judged", found.similarity >= record.relevance))
  items = load_items()
  rule = dataclasses.replace(CHOSEN_RULE, threshold=record.matcher.rule,
                             polarity=record.polarity)
  for venue in VENUES:
    matcher = NormMatcher(venue_targets(venue), rule=rule, embedder=embedder,
                          behaviours=venue_behaviours(venue))
    texts = [i.text for i in items if i.venue == venue]
    out += [("means", tuple(sorted(m))) for m in matcher.means_many(texts)]
  return out


def test_the_twins_cosines_are_on_another_scale(pair):
  (minilm, _), (twin, _) = pair
  a, b = "No smoking indoors.", "Maria orders a slice of lemon cake."
  low = embedding.pair_similarity(minilm, a, b)
  high = embedding.pair_similarity(twin, a, b)
  assert high > 0.55 and high == pytest.approx((low + SQUEEZE) / (1 + SQUEEZE),
                                               abs=1e-4)


def test_the_rescaled_twin_decides_as_minilm(pair):
  (minilm, mine), (twin, theirs) = pair
  assert theirs.relevance > 0.55 and theirs.tag > 0.55
  assert theirs.near_tie == pytest.approx(mine.near_tie / (1 + SQUEEZE),
                                          abs=2e-3)
  ours, twins = _decisions(minilm, mine), _decisions(twin, theirs)
  assert len(ours) == len(twins) and len(ours) > 1000
  differ = [(o, t) for o, t in zip(ours, twins) if o != t]
  assert len(differ) <= len(ours) / 100, differ[:10]

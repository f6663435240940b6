"""The matcher's recorded error, per target, where it holds.

`data/matcher_quality.json` holds the chosen rule's counts on both halves
of the labelled norms (labels.py), written by matcher_quality.py. The
figures hold for a target only under the rule they were measured with and
for the target's exact wording (text and aliases): figures for other words
would say nothing, so elsewhere the report says "not measured" and belief
is not corrected. They hold, too, only for the embedder they were measured
with (all-MiniLM-L6-v2, `MEASURED_WITH`): `figures_for` gives none for
another, and the report says it is not calibrated for that embedder.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crsec_concordia import embedding
from crsec_concordia.embedding import SentenceEmbedder
from crsec_concordia.embedding import identity as embedder_identity
from crsec_concordia.metrics.classifiers import DATA
from crsec_concordia.metrics.classifiers.correction import Rates
from crsec_concordia.metrics.classifiers.labels import venue_norms
from crsec_concordia.scenarios import TargetNorm

QUALITY_PATH = DATA / "matcher_quality.json"
# The embedder data/matcher_quality.json was measured with (a file that
# names none was measured with it).
MEASURED_WITH = embedder_identity.MINILM


def load_measured(path: Path = QUALITY_PATH) -> dict[str, Any] | None:
  try:
    return json.loads(Path(path).read_text(encoding="utf-8"))
  except (OSError, ValueError):
    return None


def measured_with(figures: dict[str, Any] | None
                  ) -> embedder_identity.EmbedderIdentity:
  """The embedder whose scale `figures` hold on."""
  named = embedder_identity.EmbedderIdentity.from_dict(
      (figures or {}).get("embedder"))
  return named or MEASURED_WITH


def figures_for(embedder: SentenceEmbedder | None,
                path: Path = QUALITY_PATH) -> dict[str, Any]:
  """The recorded figures if they were measured with `embedder` (None: the
  default), else {} (nothing measured for it: nothing corrected)."""
  figures = load_measured(path)
  if not figures:
    return {}
  mine = embedding.identity_for(embedder)
  return figures if (mine.fingerprint
                     == measured_with(figures).fingerprint) else {}


def not_calibrated_note(name: str) -> str:
  """The line shown where the matcher's error holds for another embedder."""
  return (f"not calibrated for {name}: run crsec calibrate --embedder "
          f"{name if ':' in name else 'MODULE:FUNCTION'} (the matcher's "
          "recorded error holds for all-MiniLM-L6-v2 only; belief not "
          "corrected)")


def embedder_note(matcher: dict[str, Any]) -> str:
  """The line naming the embedder a summary's matcher read belief with
  (NormMatcher.describe: no `embedder` block is the default)."""
  block = matcher.get("embedder")
  if not block:
    return (f"Sentence embedder: {MEASURED_WITH}, the one the matcher's "
            "recorded error was measured with.")
  name = f"{block.get('name')} (fingerprint {block.get('fingerprint')})"
  how = _matching_note(matcher, block)
  if block.get("calibrated"):
    return f"Sentence embedder: {name}, calibrated.{how}"
  note = not_calibrated_note(str(block.get("name")))
  return f"Sentence embedder: {name}. {note[0].upper()}{note[1:]}.{how}"


def _matching_note(matcher: dict[str, Any], block: dict[str, Any]) -> str:
  """How the matcher decided, when no similarity threshold was measured for
  its embedder: by its judge (the model), or by an unmeasured cosine."""
  if block.get("thresholds_measured", True):
    return ""
  if matcher.get("judge"):
    return (" No similarity threshold was measured for it: the matcher put "
            "every pair to its judge (the model), not to a cosine cut.")
  return (" No similarity threshold was measured for it and no judge was "
          "given: the matcher's cosine cuts are not its own (run crsec "
          "report --llm-judge, or crsec calibrate --thresholds --embedder).")


def measured_error(target: TargetNorm, rule_name: str,
                   measured: dict[str, Any] | None = None
                   ) -> dict[str, Any] | None:
  """The test-half figures that hold for `target` under the rule named, or
  None when the target's wording (text, aliases) or the rule differ from
  what was measured."""
  measured = load_measured() if measured is None else measured
  if not measured or measured["rule"]["name"] != rule_name:
    return None
  wording = measured["targets"].get(target.id)
  if not wording or wording["text"] != target.text or tuple(
      wording["aliases"]) != tuple(target.aliases):
    return None
  return measured["test"].get(target.id)


def rates(target: TargetNorm, rule_name: str, split: str = "calibration",
          measured: dict[str, Any] | None = None) -> Rates | None:
  """The matcher's confusion counts for `target` on a labelled half, with
  its true negatives (the venue's norms of that half that are not the
  target's, minus false positives), for misclassification-corrected belief;
  None where the rule or the target's wording were not measured.

  The calibration half is the default: the test half is kept to check, by
  simulation (tests/test_correction.py), that intervals built from the
  calibration figures cover the truth on norms they were not fitted on."""
  measured = load_measured() if measured is None else measured
  if measured_error(target, rule_name, measured) is None:
    return None
  entry = measured.get(split, {}).get(target.id)
  venue = measured["targets"][target.id]["venue"]
  if not entry:
    return None
  total = venue_norms(split)[venue]
  tn = total - entry["tp"] - entry["fp"] - entry["fn"]
  return Rates(tp=entry["tp"], fp=entry["fp"], fn=entry["fn"], tn=tn,
               source=f"norm matcher, {split} half of "
               f"data/norm_labels.jsonl ({total} {venue} norms)")


def error_note(entry: dict[str, Any] | None) -> str:
  """One line on the matcher's measured error for a target, for the report."""
  if not entry:
    return "matcher error not measured for this target's wording"
  return (f"matcher on labelled test norms: precision {entry['precision']:.2f} "
          f"({entry['tp']}/{entry['tp'] + entry['fp']}), recall "
          f"{entry['recall']:.2f} ({entry['tp']}/{entry['tp'] + entry['fn']})")


def report_notes(matcher: dict[str, Any], targets: Sequence[Any]
                 ) -> dict[str, str]:
  """Per target id, the line the report shows beside its belief curve,
  from a summary's `matcher` block (NormMatcher.describe)."""
  measured = matcher.get("measured_error") or {}
  judged = " (measured without the LLM judge)" if matcher.get("judge") else ""
  embedder = matcher.get("embedder") or {}
  if embedder.get("calibrated") is False:  # embedder_note says the rest.
    note = f"not calibrated for {embedder.get('name')}: belief not corrected"
    return {t.id: note for t in targets}
  return {t.id: error_note(measured.get(t.id)) + judged for t in targets}

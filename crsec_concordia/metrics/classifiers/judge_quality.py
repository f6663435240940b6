"""The matcher's error with an LLM judge, from the judge model's calibration.

With `crsec report --llm-judge`, a model's yes/no decides every (norm,
target) pair at or above the judge floor, so the matcher's error is then
that model's: `crsec calibrate` measures it on the test half of the
labelled norms (judgement_error.py, the calibration's `matcher`).
Those counts correct belief only for the same model, rule, judge floor and
target wording; elsewhere belief is not corrected and the note says why
and what to run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crsec_concordia.calibration import store
from crsec_concordia.calibration.identity import ModelIdentity
from crsec_concordia.metrics.classifiers.correction import Rates
from crsec_concordia.scenarios import TargetNorm


def rates(target: TargetNorm, rule: str, floor: float,
          identity: ModelIdentity | None,
          calibrations: Sequence[Path] | None = None
          ) -> tuple[Rates | None, str]:
  """The judged matcher's counts for `target`, or None and why."""
  if identity is None:
    return None, ("matcher error with the LLM judge not measured (the "
                  "judge's model is unknown): belief not corrected")
  found: list[tuple[dict[str, Any], dict[str, Any]]] = []
  for entry in store.matchers(calibrations):
    if not identity.same_model(ModelIdentity.from_dict(entry["model"])):
      continue
    counts = (entry.get("targets") or {}).get(target.id)
    if (counts and entry.get("rule") == rule
        and entry.get("judge_floor") == floor
        and counts["text"] == target.text
        and tuple(counts["aliases"]) == tuple(target.aliases)):
      found.append((entry, counts))
  if not found:
    return None, (f"matcher with the LLM judge not calibrated for "
                  f"{identity.name}: run crsec calibrate (with the judge's "
                  "--base-url and --model); belief not corrected")
  entry, c = min(found, key=lambda f: f[0]["model"].get("prompts")
                 != identity.prompts)
  source = (f"norm matcher with {identity.name} as judge, "
            f"{entry.get('split')} half of data/norm_labels.jsonl, "
            f"calibration {Path(entry['path']).name}")
  if entry["model"].get("prompts") != identity.prompts:
    source += ("; NOTE: calibrated with other judgement prompts: run crsec "
               "calibrate again")
  return Rates(tp=c["tp"], fp=c["fp"], fn=c["fn"], tn=c["tn"],
               source=source), source

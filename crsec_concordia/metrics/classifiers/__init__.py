"""The classifiers the metrics rest on, and their measured error.

Belief is decided by the norm matcher (does a held norm MEAN a target?),
behaviour by the game master's referee (did an action comply?). Both err,
so each one's error is measured on labelled cases and every share is also
given corrected for it (docs/metrics.md, "Corrected estimates").

  norm_clauses     a norm's wording taken apart before it is embedded
  matching         MEANS and ABOUT (`NormMatcher`)
  judge            the optional LLM judge of MEANS
  labels           the matcher's labelled norms (data/norm_labels.jsonl)
  measured         the matcher's recorded error (data/matcher_quality.json)
  matcher_quality  measuring the matcher: the rules tried, calibrated, chosen
  threshold_search the single cosine's threshold searched on labelled pairs
  probe_run        a venue's labelled cases through the calls a run makes
  judgement_error  a model's calibration measured (`crsec calibrate`)
  referee_quality  the referee's error, from the calibration of the run's model
                   (crsec_concordia/calibration/store.py)
  correction       Rogan-Gladen, with an interval that carries the error
  corrected        a run's belief and behaviour shares, corrected
"""

from pathlib import Path

# The labelled sets and recorded figures (installed with the package).
DATA = Path(__file__).resolve().parents[1] / "data"

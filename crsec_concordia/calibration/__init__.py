"""What a model gets right and wrong on each venue's labelled judgements.

  probes     a venue's labelled cases (<name>.probes.yaml), checked
  policy     which referee structures apply (RefereePolicy), scored offline
  identity   which model a calibration is of: name, endpoint, prompts' hash
  store      calibrations on disk, one file per model identity
  thresholds an embedder's measured thresholds, one file per embedder
  scores     precision, recall and F1 from a classifier's counts
  sheet      a labelling sheet of a run, for a venue with no labelled cases
  advice     the exact `crsec calibrate` command a report tells to run

It sits below the classifiers and metrics that read it and imports none of
them (tests/test_layers.py): measuring a model (`crsec calibrate`) runs the
matcher and the referee, so metrics/classifiers/judgement_error.py and
probe_run.py do it, and judgement_prompts.py hashes the prompts.
"""

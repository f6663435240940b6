"""What a model gets right and wrong on each venue's labelled judgements.

  probes     a venue's labelled cases (<name>.probes.yaml), checked
  probe_run  the cases through the calls a run makes, everything recorded
  policy     which referee structures apply (RefereePolicy), scored offline
  identity   which model a calibration is of: name, endpoint, prompts' hash
  store      calibrations on disk, one file per model identity
  calibrate  `crsec calibrate`'s measurement: venues and labelled norms
  sheet      a labelling sheet of a run, for a venue with no labelled cases
  advice     the exact `crsec calibrate` command a report tells to run
"""

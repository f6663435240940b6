"""What a model gets right and wrong on each venue's labelled judgements.

  probes     a venue's labelled cases (<name>.probes.yaml), checked
  policy     which referee structures apply (RefereePolicy), scored offline
  identity   which model a calibration is of: name, endpoint, prompts' hash
  store      calibrations on disk, one file per model identity
  sheet      a labelling sheet of a run, for a venue with no labelled cases
  advice     the exact `crsec calibrate` command a report tells to run
"""

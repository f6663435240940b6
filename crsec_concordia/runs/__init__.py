"""Playing episodes: the Concordia config, the slot engine, the run directory.

One concern per module:
  config.py       the Concordia `Config` of a scenario (agents, game master)
  slot_engine.py  Concordia's simultaneous engine, a slot at a time
  simulation.py   Concordia's Simulation with a one-pass checkpoint
  rundir.py       the run directory's files, written atomically as it goes
  session.py      plays slots and keeps the run directory current
  run_log.py      run.log's lines, collected and written a slot at a time
  concordia_log.py  log.html and log.json, Concordia's log of the run
  episode.py      `run_episode` and `summarize`
  model_roles.py  models by role: the game master's, groups', agents'
  resume.py       `resume_episode` from the last completed slot
  stated_run.py   the stated-belief question at a run's start and end, and
                  usage counted apart from the simulation's
`crsec_concordia.runner` re-exports the public API.
"""

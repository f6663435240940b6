"""The run directory: its format, written and read in one place.

  format.py   file names, record kinds, snapshot and checkpoint names
  writing.py  the writer's side: whole JSON files, appended records,
              checkpoints, provenance (crsec_concordia/runs/ uses it)
  reading.py  the reader's side: a run, compare or sweep directory loaded,
              with one `UserError` line when it is none (the metrics use it)
  presence.py who takes part in each slot (arrive and leave), for the
              metrics' shares and the viewer
  recovery.py every appended file cut back to the last committed slot,
              or one line naming the file that cannot be (resume uses it)
  lock.py     one writer per run: the lock `run` and `resume` hold

docs/design.md, "Run directory", describes every file and record. This
package sits below both the runs and the metrics, so neither copies the
other's names; it imports nothing here, so that importing `format` alone
stays cheap for the components and the game master that write records.
"""

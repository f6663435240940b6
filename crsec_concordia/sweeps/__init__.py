"""Sweeps: grids of scenarios, conditions, endpoints, arms and seeds.

  spec.py         the sweep file's models, and a condition's scenario
  validate.py     reading a sweep file, every problem one line
  explain.py      a pydantic error on it as a problem with a fix
  checks.py       the checks across its keys (conditions on every scenario)
  grid.py         the grid expanded to runs with stable ids; sweep.json
  runjob.py       one run as a worker plays it: skip, resume or start
  execute.py      the scheduler and the thread backend (`crsec compare`)
  ray_backend.py  Ray tasks, and one embedded-model host per node
  driver.py       jobs from the grid, sweep.json kept current
  progress.py     the live progress line
  aggregate.py    metrics per condition with CIs, ablation effects, tables
  report.py       figures and the HTML page of a sweep

`crsec sweep SWEEP.yaml` (crsec_concordia/commands/sweep.py) puts them
together; docs/design.md, "Sweeps", has the file format and directory.
"""

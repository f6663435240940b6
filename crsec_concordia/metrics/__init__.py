"""The paper's measurements from run directories (docs/metrics.md).

  rundir        load a run or compare directory (UserError when it is not one)
  matching      MEANS / ABOUT relations to the target norms; the LLM judge
  calibration   the matcher's labelled set, precision and recall
  timeline      steps on the simulated clock, time to adoption
  activity      conflicts, norm-related conversations and thoughts per step
  adoption      belief, behaviour and plan compliance per step
  emergent      norms held by several agents that no target covers
  diffusion     who passed which norm to whom
  usage         LLM calls and tokens per CRSEC module
  run_metrics   all of a run: per-step and per-hour tables, summary, export
  aggregate     over seeds: mean, 95% t-interval, normative - baseline
  figures, report, questionnaire   the report and the human-evaluation kit

Figures and the report import matplotlib; import them where needed.
"""

from crsec_concordia.metrics.rundir import RunData, load_compare, load_run
from crsec_concordia.metrics.run_metrics import RunMetrics, compute, write

__all__ = ["RunData", "RunMetrics", "compute", "load_compare", "load_run",
           "write"]

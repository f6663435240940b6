"""What happened in a run, and over seeds.

  timeline     steps on the simulated clock, hour bins, time to adoption
  activity     conflicts, norm-related conversations and thoughts per step
  adoption     belief, behaviour and plan compliance per step
  emergent     norms held by several agents that no target covers
  diffusion    who passed which norm to whom, and each norm's diffusion tree
  ties         adoption by network distance from the nearest entrepreneur
  usage        LLM calls and tokens per CRSEC module
  run_metrics  all of a run: per-step and per-hour tables, the summary
  aggregate    over seeds: mean, 95% t-interval, normative - baseline
"""

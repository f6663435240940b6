"""bench/kill_resume.py, short: open-day runs killed (SIGKILL) and resumed.

The runner's own tests kill a run at one chosen point; the bench kills at
random ones (a model call in flight, a write in a slot's flush, an append
cut part way), so this keeps the bench itself working.
"""

from __future__ import annotations

import re

import pytest

from bench import kill_resume


def test_three_killed_runs_resume_identical(capsys, embedder):
  del embedder  # Loaded once for the session; the bench uses the same.
  assert kill_resume.main(["--runs", "3", "--steps", "2"]) == 0
  out = capsys.readouterr().out
  assert "3/3 identical" in out
  kills = re.findall(r"killed at (call|write) \d+", out)
  assert sorted(set(kills)) == ["call", "write"] and len(kills) == 3


def test_a_run_killed_between_usage_and_run_json_resumes_identical(
    capsys, embedder):
  del embedder
  # With 2 slots, write 16 is slot 2's usage.json, 17 its gates.json and
  # 18 its run.json (4 before the first slot, then 7 a slot: log.jsonl,
  # the checkpoint, events.jsonl, the norm snapshot, usage.json, gates.json,
  # run.json; run.log has no line in this run).
  assert kill_resume.main(["--steps", "2", "--moments", "write:18"]) == 0
  assert "1/1 identical" in capsys.readouterr().out

"""The vocabulary of how a run ends (crsec_concordia/endings.py)."""

from __future__ import annotations

from crsec_concordia import endings


def test_every_ending_has_its_own_status_and_exit_code():
  statuses = [e.status for e in endings.ENDINGS]
  codes = [e.exit_code for e in endings.ENDINGS]
  assert len(set(statuses)) == len(statuses)
  assert len(set(codes)) == len(codes) and 2 not in codes  # 2: bad input.
  assert [e.status for e in endings.ENDINGS if not e.resumes] == [
      "completed"]
  for e in endings.ENDINGS:
    line = e.how_to_go_on("runs/x")
    assert "\n" not in line and ("runs/x" in line)
    assert e.status == "completed" or "crsec resume runs/x" in line


def test_failures_map_onto_the_vocabulary():
  assert endings.ending_of(KeyboardInterrupt()) is endings.KILLED
  assert endings.ending_of(ValueError("a bug")) is endings.ERROR
  assert endings.ending_of(endings.LostDependency("the embedder failed a "
                                                  "batch")) is (
      endings.LOST_DEPENDENCY)
  assert endings.ending_of(endings.BudgetReached("x")).status == (
      "stopped: budget")
  assert endings.ending_of(endings.EndpointUnreachable("x")).exit_code == 4


def test_run_json_statuses_old_and_new_are_read():
  assert endings.of_status("running") is None
  assert endings.of_status("interrupted") is endings.KILLED  # Older runs.
  assert endings.of_status("stopped: budget") is endings.BUDGET
  assert endings.of_status("completed") is endings.DONE

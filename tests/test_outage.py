"""An endpoint outage is waited out, never recorded as the agents' failures.

The scripted café plays against a real HTTP endpoint (tests/scripted_
endpoint.py) that answers 503 from its Nth chat request on: for longer
than the first probe's backoff (the run waits and goes on), or for longer
than --outage-wait (the run stops `interrupted: endpoint unreachable`, and
resume completes it). Either way its records are those of an uninterrupted
run on the scripted model, counters aside (the failed calls and those of
the thrown-away slot were made), and nothing prints a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsec_concordia import cli, embedding, endings, runner
from crsec_concordia.rundir.writing import USAGE_FIELDS
from crsec_concordia.runs import episode
from crsec_concordia.runs.outage import OutagePolicy
from tests import scripted_endpoint as se
from tests import test_runner as tr


def without_counters(run_dir: Path) -> list[dict]:
  """The run's records, the usage totals of its step records left out."""
  return [{k: v for k, v in r.items() if not (r["kind"] == "step"
                                              and k in USAGE_FIELDS)}
          for r in tr.records(run_dir)]


def same_records(a: Path, b: Path) -> None:
  assert without_counters(a) == without_counters(b)
  for step in range(1, tr.tiny().total_steps + 1):
    assert tr.norms(a, step) == tr.norms(b, step), step


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, embedder) -> Path:
  return tr.run(tmp_path_factory.mktemp("plain"), embedder)


# The tiny café asks its 3 agents' stated rules first, then makes 13
# calls in slot 1, 4 in slot 2, 15 in slot 3: the 23rd falls in slot 3.
AFTER = 23


def test_an_outage_shorter_than_the_wait_is_waited_out(
    tmp_path, embedder, uninterrupted, capfd, caplog):
  outage = se.Outage(after=AFTER, seconds=1.0)
  fake = se.serve(tr.cafe(), outage)
  try:
    d = tr.run(tmp_path, embedder, model=se.client(fake),
               outage_wait=OutagePolicy(wait=30, first_backoff=0.2))
  finally:
    fake.stop()
  assert outage.refused > 0  # It went down, for longer than a backoff.
  meta = tr.info(d)
  assert meta["status"] == "completed" and meta["completed_steps"] == 5
  same_records(d, uninterrupted)
  assert not [r for r in tr.records(d) if r["kind"] == "failure"]
  assert "Traceback" not in capfd.readouterr().err
  said = [r.getMessage() for r in caplog.records
          if r.name == "crsec_concordia.runs.outage"]
  assert len(said) == 2 and all("\n" not in line for line in said)
  assert said[0].startswith("slot 3 paused: ") and "HTTP 503" in said[0]
  assert "slot 3 is played again from its checkpoint" in said[1]


def test_an_outage_longer_than_the_wait_stops_the_run_and_resume_ends_it(
    tmp_path, embedder, uninterrupted, capfd):
  outage = se.Outage(after=AFTER, seconds=None)
  fake = se.serve(tr.cafe(), outage)
  try:
    with pytest.raises(endings.EndpointUnreachable, match="--outage-wait"):
      tr.run(tmp_path, embedder, model=se.client(fake),
             outage_wait=OutagePolicy(wait=0.5, first_backoff=0.2))
  finally:
    fake.stop()
  d = tmp_path / "run"
  meta = tr.info(d)
  assert meta["status"] == "interrupted: endpoint unreachable"
  done = meta["completed_steps"]
  assert done < 5
  assert [r["step"] for r in tr.records(d) if r["kind"] == "step"] == list(
      range(1, done + 1))
  assert not [r for r in tr.records(d) if r["kind"] == "failure"]
  fake = se.serve(tr.cafe())
  try:
    runner.resume_episode(d, model=se.client(fake), embedder=embedder,
                          progress=False)
  finally:
    fake.stop()
  assert tr.info(d)["status"] == "completed"
  same_records(d, uninterrupted)
  assert "Traceback" not in capfd.readouterr().err


def test_the_commands_say_how_the_run_ended_and_resume_it(
    tmp_path, embedder, uninterrupted, monkeypatch, capfd):
  """`crsec run` with the endpoint down past --outage-wait: one line with
  the status, why and how to go on, exit 4; `crsec resume` ends it."""
  fake = se.serve(tr.cafe(), se.Outage(after=AFTER, seconds=None))
  monkeypatch.setattr(episode, "make_model",
                      lambda *a, **k: se.client(fake))
  monkeypatch.setattr(episode, "embedder_for",
                      lambda e: embedding.of(embedder))
  scenario_file = tmp_path / "tiny.yaml"
  scenario_file.write_text(tr.TINY)
  out = tmp_path / "out"
  try:
    # The policy the uninterrupted run's handed-over model gets.
    assert cli.main(["run", str(scenario_file), "--seed", "1", "--out",
                     str(out), "--no-progress", "--outage-wait", "0.5",
                     "--referee-policy", "all-on"]) == 4
  finally:
    fake.stop()
  err = capfd.readouterr().err
  assert "Traceback" not in err
  last = err.strip().splitlines()[-1]
  assert last.startswith("crsec: interrupted: endpoint unreachable: the "
                         "endpoint did not come back within --outage-wait")
  assert last.endswith(f"`crsec resume {out}` plays the unfinished slot "
                       "again")
  fake = se.serve(tr.cafe())
  monkeypatch.setattr(episode, "make_model",
                      lambda *a, **k: se.client(fake))
  try:
    assert cli.main(["resume", str(out), "--no-progress"]) == 0
  finally:
    fake.stop()
  assert tr.info(out)["status"] == "completed"
  same_records(out, uninterrupted)
  assert "Traceback" not in capfd.readouterr().err

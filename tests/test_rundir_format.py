"""The run directory's format is defined once (crsec_concordia/rundir/
format.py), and the writer and the readers use it."""

from __future__ import annotations

import ast
from pathlib import Path

from crsec_concordia.rundir import format as run_format
from crsec_concordia.rundir import reading, writing
from crsec_concordia.runs import session

ROOT = Path(__file__).resolve().parents[1]
# Where the package's code is (components, game masters and scenarios are
# installed as its sub-packages).
CODE = [ROOT / "crsec_concordia", ROOT / "components", ROOT / "game_masters",
        ROOT / "scenarios"]
FILE_NAMES = {run_format.RUN_JSON, run_format.SCENARIO_JSON,
              run_format.CONFIG_JSON, run_format.EVENTS,
              run_format.USAGE_JSON, run_format.LOG_HTML,
              run_format.LOG_JSON, run_format.RUN_LOG,
              run_format.COMPARE_JSON, run_format.SWEEP_JSON}


def test_no_file_name_of_the_format_is_written_out_elsewhere():
  found = []
  for folder in CODE:
    for path in folder.rglob("*.py"):
      if path == Path(run_format.__file__):
        continue
      for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and node.value in FILE_NAMES:
          found.append(f"{path.relative_to(ROOT)}:{node.lineno} "
                       f"{node.value!r}")
  assert not found, "use crsec_concordia.rundir.format's names: " + "; ".join(
      found)


def test_the_writer_orders_an_agents_records_by_the_formats_kinds():
  assert list(session.KIND_ORDER) == list(run_format.AGENT_KINDS)
  assert set(run_format.AGENT_KINDS) < set(run_format.KINDS)
  assert run_format.STEP in run_format.KINDS


def test_snapshot_and_checkpoint_names_read_back_as_their_step(tmp_path):
  assert run_format.snapshot_step(run_format.norm_snapshot(7)) == 7
  assert run_format.checkpoint_step(run_format.checkpoint(12)) == 12
  for other in ("step_x.json", "notes.json", "step_3_checkpoint.json.tmp",
                run_format.temporary(run_format.norm_snapshot(2))):
    assert run_format.snapshot_step(other) is None
    assert run_format.checkpoint_step(other) is None
  # The writer keeps the latest two checkpoints, read by those names.
  (tmp_path / run_format.CHECKPOINTS).mkdir()
  for step in (1, 2, 3):
    writing.save_checkpoint(tmp_path, step, {"step": step})
  assert sorted(p.name for p in (tmp_path / run_format.CHECKPOINTS).iterdir()
                ) == [run_format.checkpoint(2), run_format.checkpoint(3)]


def test_a_written_snapshot_is_read_as_its_step(tmp_path):
  """What the writer names a norm snapshot is what the reader finds."""
  writing.write_json(tmp_path / run_format.RUN_JSON, {"arm": "normative"})
  writing.write_json(tmp_path / run_format.SCENARIO_JSON, {
      "name": "x", "target_norms": [{"id": "t", "text": "Tip."}]})
  (tmp_path / run_format.EVENTS).write_text("", encoding="utf-8")
  (tmp_path / run_format.NORMS).mkdir()
  writing.write_json(tmp_path / run_format.NORMS
                     / run_format.norm_snapshot(4), {"A": {"norms": []}})
  run = reading.read_run(tmp_path)
  assert run.snapshots == {4: {"A": {"norms": []}}}
  assert [t.id for t in run.targets] == ["t"]
  assert run.targets[0].type == "injunctive"  # the reader's default

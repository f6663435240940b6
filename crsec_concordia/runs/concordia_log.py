"""log.html and log.json: Concordia's log of a run, written as it ends.

Made from the run's files and its state, not from what the last `play`
returned: the raw log of every slot is in checkpoints/log.jsonl (an older
run's checkpoint holds its start), and the memories are attached as
Concordia's `Simulation.play` attaches them. A run that is played in one
go, resumed after a kill, or whose ending alone was lost writes the same
two files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from concordia.utils import structured_logging

from crsec_concordia.rundir import log_page
from crsec_concordia.rundir import writing as rundir


def write(run_dir: Path, simulation: Any, name: str,
          info: dict[str, Any]) -> None:
  """Writes RUN_DIR/log.html and log.json of slots 1 to `completed_steps`."""
  whole = structured_logging.SimulationLog.from_raw_log(
      list(simulation.get_raw_log()) + rundir.read_log(
          run_dir, int(info["completed_steps"])))
  memories = {}
  for entity in simulation.get_entities():
    memory = entity.get_all_context_components().get("__memory__")
    texts = memory.get_all_memories_as_text() if memory is not None else []
    if texts:
      memories[entity.name] = texts
  whole.attach_memories(
      entity_memories=memories,
      game_master_memories=(simulation.game_master_memory_bank
                            .get_all_memories_as_text()))
  log_page.write(run_dir, whole, name, info)
  rundir.write_log_json(run_dir, whole)

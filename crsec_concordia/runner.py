"""Run and resume CRSEC episodes (the public API of crsec_concordia.runs).

`run_episode` builds a Concordia `Config` from a scenario (the agents'
prefabs and the game master) and plays it slot by slot with the slot engine
(every agent acts in every slot, concurrently), writing the run directory
as it goes; `resume_episode` continues an interrupted run from its last
completed slot. See crsec_concordia/runs/ for the parts and docs/design.md
for the run directory.
"""

from crsec_concordia.runs.config import (ARMS, DEFAULT_SCENARIO, GM_NAME,
                                         GM_PREFAB, agent_prefabs,
                                         build_config, config_to_json,
                                         entity_params, load)
from crsec_concordia.runs.episode import run_episode, summarize
from crsec_concordia.runs.resume import resume_episode
from crsec_concordia.rundir.format import (CHECKPOINTS, CONFIG_JSON, EVENTS,
                                           LOG_HTML, NORMS, RUN_JSON, RUN_LOG,
                                           SCENARIO_JSON, USAGE_JSON)
from crsec_concordia.rundir.writing import checkpoint_path, versions
from crsec_concordia.components.norm_memory import NORM_MEMORY_KEY

__all__ = [
    "ARMS", "CHECKPOINTS", "CONFIG_JSON", "DEFAULT_SCENARIO", "EVENTS",
    "GM_NAME", "GM_PREFAB", "LOG_HTML", "NORMS", "NORM_MEMORY_KEY",
    "RUN_JSON", "RUN_LOG", "SCENARIO_JSON", "USAGE_JSON", "agent_prefabs",
    "build_config", "checkpoint_path", "config_to_json", "entity_params",
    "load", "resume_episode", "run_episode", "summarize", "versions",
]

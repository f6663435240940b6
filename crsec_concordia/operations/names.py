"""Every LLM operation by name: the paper's eight, the others beside them.

One declaration, read by everything that names an operation: a failure
record's `op`, the tag a model's calls are counted under
(`model.tagged(...)`, usage.json's `by_tag`) and the CRSEC module the
usage summary adds them to (metrics/measure/usage.py). The paper's
operations keep the paper's names, one module each in this package. The
operations the paper does not name are named for what they do: the day
plan without norms, its decomposition into tasks, the act and the talk
(Concordia's act component asks them), reading a game master's free text,
the game master's calls, the report's judge and an interview's question
put to an agent after its run, and the rules an agent states at a run's
start and end (APART_TAGS: no part of the simulation's cost). A tag no
operation declares is counted under "other"; so are tags of tests and
third-party components. Runs recorded before the operations had these names counted
their calls under their components' names (FORMER_TAGS), which still map
to the module they did.
"""

from __future__ import annotations

import dataclasses
import enum


class Module(enum.StrEnum):
  """Where an operation's calls are counted: one of CRSEC's four modules,
  the game master, the metrics, or none of them."""
  CREATION = "creation"
  SPREADING = "spreading"
  EVALUATION = "evaluation"
  COMPLIANCE = "compliance"
  GAME_MASTER = "game_master"
  METRICS = "metrics"
  OTHER = "other"


# The paper's four modules, in its order.
CRSEC_MODULES = (Module.CREATION, Module.SPREADING, Module.EVALUATION,
                 Module.COMPLIANCE)
# Every tag starting so is a game master's ("GM.adjudicate", "GM.look").
GAME_MASTER_PREFIX = "GM."


@dataclasses.dataclass(frozen=True)
class Operation:
  """An LLM operation: its name (a failure record's `op`), the module it
  belongs to, where it is written, and the usage tag its calls are counted
  under (its name unless said)."""
  name: str
  module: Module
  home: str
  usage_tag: str = ""

  @property
  def tag(self) -> str:
    return self.usage_tag or self.name


_OPS = "crsec_concordia.operations."

CREATE_NORM = "CreateNorm"
DETECT_CONFLICT = "DetectConflict"
DECIDE_TO_TALK = "DecideToTalk"
IDENTIFY_NORM = "IdentifyNorm"
REFLECT = "Reflect"
IMMEDIATE_EVALUATION = "ImmediateEvaluation"
LONG_TERM_SYNTHESIS = "LongTermSynthesis"
NORMATIVE_PLAN = "NormativePlan"

# The paper's eight, one module each (ClassifySpecificNorms and
# SynthesizeNorm are LongTermSynthesis's steps; the paper's Act is done by
# DecomposePlan and the act below).
PAPER: tuple[Operation, ...] = (
    Operation(CREATE_NORM, Module.CREATION, _OPS + "create_norm"),
    Operation(DETECT_CONFLICT, Module.SPREADING, _OPS + "detect_conflict"),
    Operation(DECIDE_TO_TALK, Module.SPREADING, _OPS + "decide_to_talk"),
    Operation(IDENTIFY_NORM, Module.SPREADING, _OPS + "identify_norm"),
    Operation(REFLECT, Module.SPREADING, _OPS + "reflect"),
    Operation(IMMEDIATE_EVALUATION, Module.EVALUATION,
              _OPS + "immediate_evaluation"),
    Operation(LONG_TERM_SYNTHESIS, Module.EVALUATION,
              _OPS + "long_term_synthesis"),
    Operation(NORMATIVE_PLAN, Module.COMPLIANCE, _OPS + "normative_plan"),
)

DAY_PLAN = "DayPlan"
DECOMPOSE_PLAN = "DecomposePlan"
ACT = "Act"
TALK = "Talk"
READ_EVENTS = "ReadEvents"
GM_ADJUDICATE = "GM.adjudicate"
GM_DOER = "GM.doer"
GM_LOOK = "GM.look"
GM_OTHER = "GM.other"
METRICS_JUDGE = "MetricsJudge"
INTERVIEW = "Interview"
STATED_BELIEF = "StatedBelief"

OTHERS: tuple[Operation, ...] = (
    # NormativePlan's prompt with no norms: a baseline agent's day, or a
    # normative one's with its compliance module off.
    Operation(DAY_PLAN, Module.COMPLIANCE, _OPS + "normative_plan"),
    # A plan block's tasks, which the act carries out.
    Operation(DECOMPOSE_PLAN, Module.COMPLIANCE, _OPS + "decompose_plan"),
    # The act's reason for its task; counted as "act" since runs began.
    Operation(ACT, Module.COMPLIANCE,
              "crsec_concordia.components.structured_act", usage_tag="act"),
    # A line of a conversation: how norms spread by talk.
    Operation(TALK, Module.SPREADING,
              "crsec_concordia.components.structured_act"),
    # The deeds in a game master's free text: no CRSEC module's.
    Operation(READ_EVENTS, Module.OTHER, _OPS + "read_events"),
    Operation(GM_ADJUDICATE, Module.GAME_MASTER,
              "crsec_concordia.game_masters.referee.general_call"),
    Operation(GM_DOER, Module.GAME_MASTER,
              "crsec_concordia.game_masters.referee.doer_check"),
    Operation(GM_LOOK, Module.GAME_MASTER,
              "crsec_concordia.game_masters.referee.second_look"),
    # What Concordia's own game-master components ask (SwitchAct).
    Operation(GM_OTHER, Module.GAME_MASTER,
              "crsec_concordia.game_masters.prefab"),
    Operation(METRICS_JUDGE, Module.METRICS,
              "crsec_concordia.metrics.classifiers.judge"),
    # A question put to a restored agent after its run (`crsec interview`).
    Operation(INTERVIEW, Module.OTHER, "crsec_concordia.interviews.ask"),
    # The rules an agent states before the first slot and after the last,
    # asked by the run itself (`crsec run --stated-belief`).
    Operation(STATED_BELIEF, Module.OTHER,
              "crsec_concordia.interviews.stated"),
)

# Tags of calls a run makes outside its simulation (questions put to its
# agents): counted in usage.json's `by_tag`, but no part of what the
# simulation costs, so every total and per-agent-hour figure leaves them
# out and shows them apart.
APART_TAGS = frozenset({INTERVIEW, STATED_BELIEF})

def split_usage(by_tag: dict[str, dict[str, int]]
                ) -> tuple[dict[str, dict[str, int]],
                           dict[str, dict[str, int]]]:
  """(the simulation's part, the part asked apart from it) of a usage
  table by tag."""
  inside = {t: c for t, c in by_tag.items() if t not in APART_TAGS}
  return inside, {t: c for t, c in by_tag.items() if t in APART_TAGS}


ALL_OPERATIONS: tuple[Operation, ...] = PAPER + OTHERS
BY_NAME: dict[str, Operation] = {op.name: op for op in ALL_OPERATIONS}
BY_TAG: dict[str, Operation] = {op.tag: op for op in ALL_OPERATIONS}

# Tags of runs recorded when calls were counted by component.
FORMER_TAGS: dict[str, Module] = {
    "NormMemory": Module.CREATION,
    "ConflictDetector": Module.SPREADING,
    "NormIdentifier": Module.SPREADING,
    "NormEvaluator": Module.EVALUATION,
    "NormativePlanner": Module.COMPLIANCE,
    "Planner": Module.COMPLIANCE,
    "StructuredAct": Module.COMPLIANCE,
    "venue__GameMaster": Module.GAME_MASTER,
    "cafe__GameMaster": Module.GAME_MASTER,
    "CafeGameMaster": Module.GAME_MASTER,
}


def module_of_tag(tag: str) -> str:
  """The module whose calls a usage tag counts ("other" if none)."""
  op = BY_TAG.get(tag)
  if op is not None:
    return op.module.value
  if tag.startswith(GAME_MASTER_PREFIX):
    return Module.GAME_MASTER.value
  return FORMER_TAGS.get(tag, Module.OTHER).value

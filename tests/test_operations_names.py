"""Each operation under one name: its module, its tag, its usage and failures.

The paper's eight operations and the game master's are declared once
(crsec_concordia/operations/names.py). Here the declaration is held
against the paper's list, the source's `tagged(...)` calls (read with
ast), the usage summary's modules, the operation modules' `OP`, and the
failure records an operation writes when its model answers nothing valid.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
from pathlib import Path

import pytest

import crsec_concordia.operations as operations_pkg
from crsec_concordia.components import structured_act
from crsec_concordia.components.norm_memory import NORM_MEMORY_KEY
from crsec_concordia.components.port import port_of
from crsec_concordia.game_masters import adjudication
from crsec_concordia.game_masters import prefab as gm_prefab
from crsec_concordia.game_masters.referee import (doer_check, general_call,
                                                  occasion_check, second_look)
from crsec_concordia.metrics.classifiers import judge
from crsec_concordia.metrics.measure import usage
from crsec_concordia.models import ScriptedModel
from crsec_concordia.norms import NormDatabase, Origin, PersonalNorm
from crsec_concordia.operations import names
from crsec_concordia.operations.create_norm import create_norm
from crsec_concordia.operations.decide_to_talk import decide_to_talk
from crsec_concordia.operations.decompose_plan import decompose_plan
from crsec_concordia.operations.detect_conflict import (Observed,
                                                        detect_conflicts)
from crsec_concordia.operations.identify_norm import identify_norm
from crsec_concordia.operations.immediate_evaluation import immediate_evaluation
from crsec_concordia.operations.long_term_synthesis import (
    CLASSIFY_STEP, SYNTHESIZE_STEP, long_term_synthesis)
from crsec_concordia.operations.normative_plan import (DAY_PLAN_OP,
                                                       normative_plan)
from crsec_concordia.operations.read_events import read_events
from crsec_concordia.operations.reflect import reflect
from tests import crsec_script as cs

ROOT = Path(__file__).resolve().parents[1]
# Where the source that tags models lives, and the package each folder is.
SOURCES = {"crsec_concordia": ROOT / "crsec_concordia",
           "crsec_concordia.components": ROOT / "components",
           "crsec_concordia.game_masters": ROOT / "game_masters"}

# The paper's operations (Ren et al., IJCAI 2024), in its order, with the
# module of CRSEC each belongs to.
PAPER = {"CreateNorm": "creation", "DetectConflict": "spreading",
         "DecideToTalk": "spreading", "IdentifyNorm": "spreading",
         "Reflect": "spreading", "ImmediateEvaluation": "evaluation",
         "LongTermSynthesis": "evaluation", "NormativePlan": "compliance"}
GAME_MASTER = {"GM.adjudicate", "GM.doer", "GM.look", "GM.other"}


def _module_name(path: Path) -> str:
  for package, folder in sorted(SOURCES.items(), key=lambda kv: -len(kv[0])):
    if path.is_relative_to(folder):
      parts = list(path.relative_to(folder).with_suffix("").parts)
      if parts[-1] == "__init__":
        parts = parts[:-1]
      return ".".join([package, *parts])
  raise AssertionError(path)


def _values(node: ast.expr, namespace: dict) -> list[str]:
  """The tag strings an argument can be (both sides of an `a if c else b`)."""
  if isinstance(node, ast.IfExp):
    return _values(node.body, namespace) + _values(node.orelse, namespace)
  if isinstance(node, ast.Constant):
    return [node.value]
  return [eval(ast.unparse(node), namespace)]  # pylint: disable=eval-used


def _tagging_calls() -> dict[str, set[str]]:
  """Every tag given to `tagged(...)` (or game_masters/prefab.py's
  `_tagged(model, tag)`) in the source: tag -> the modules giving it."""
  found: dict[str, set[str]] = {}
  for folder in SOURCES.values():
    for path in sorted(folder.rglob("*.py")):
      tree = ast.parse(path.read_text(encoding="utf-8"))
      calls = []
      for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
          continue
        func = node.func
        called = (func.attr if isinstance(func, ast.Attribute)
                  else func.id if isinstance(func, ast.Name) else "")
        if called == "tagged" and len(node.args) == 1:
          calls.append(node.args[0])
        elif called == "_tagged" and len(node.args) == 2:
          calls.append(node.args[1])
      if not calls:
        continue
      module = _module_name(path)
      namespace = vars(importlib.import_module(module))
      for arg in calls:
        if isinstance(arg, ast.Name) and arg.id == "tag":
          continue  # A helper passing its own parameter on.
        for tag in _values(arg, namespace):
          found.setdefault(tag, set()).add(module)
  return found


TAGGED = _tagging_calls()


def test_the_paper_s_eight_operations_are_declared_by_its_names():
  assert {op.name: op.module for op in names.PAPER} == PAPER
  assert [op.name for op in names.PAPER] == list(PAPER)
  assert set(names.CRSEC_MODULES) == set(PAPER.values())


def test_names_tags_and_modules_are_each_declared_once():
  ops = names.ALL_OPERATIONS
  assert len({op.name for op in ops}) == len(ops)
  assert len({op.tag for op in ops}) == len(ops)
  for op in names.PAPER:
    assert op.tag == op.name  # The paper's name is its usage name.
  assert {op.name for op in ops if op.module == names.Module.GAME_MASTER} == (
      GAME_MASTER)
  assert all(op.tag.startswith(names.GAME_MASTER_PREFIX) for op in ops
             if op.module == names.Module.GAME_MASTER)


def _op_modules() -> dict[str, list[str]]:
  """`OP` -> the modules of crsec_concordia/operations that assign it (not
  those importing another's)."""
  found: dict[str, list[str]] = {}
  for info in pkgutil.iter_modules(operations_pkg.__path__):
    module = importlib.import_module(f"crsec_concordia.operations.{info.name}")
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    if any(isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "OP" for t in node.targets)
           for node in tree.body):
      found.setdefault(module.OP, []).append(module.__name__)
  return found


def test_each_paper_operation_has_one_module_in_operations():
  by_op = _op_modules()
  for op in names.PAPER:
    assert by_op.get(op.name) == [op.home], op.name
    assert Path(importlib.import_module(op.home).__file__).parent == Path(
        operations_pkg.__file__).parent
  # No module of the package names an operation the declaration lacks.
  assert set(by_op) <= set(names.BY_NAME)


def test_every_home_is_a_module():
  for op in names.ALL_OPERATIONS:
    importlib.import_module(op.home)


def test_every_tag_in_the_source_is_declared_and_every_tag_is_used():
  assert set(TAGGED) <= set(names.BY_TAG), (
      f"tags no operation declares: {sorted(set(TAGGED) - set(names.BY_TAG))}")
  unused = {op.tag for op in names.ALL_OPERATIONS} - set(TAGGED) - {
      names.METRICS_JUDGE}  # The judge's tag is its parameter's default.
  assert not unused, f"declared tags no model is given: {sorted(unused)}"
  assert judge.JUDGE_TAG == names.METRICS_JUDGE


def test_the_prefabs_and_the_game_master_tag_as_declared():
  prefabs = "crsec_concordia.prefabs."
  for name in PAPER:
    assert any(m.startswith((prefabs, "crsec_concordia.components."))
               for m in TAGGED[name]), name
  # The game master's calls, and the probe runner that measures them as
  # the game master asks them (metrics/classifiers/probe_run.py).
  for tag in GAME_MASTER:
    assert all(m.startswith(("crsec_concordia.game_masters",
                             "crsec_concordia.metrics.classifiers.probe_run"))
               for m in TAGGED[tag]), tag
  assert general_call.TAG == names.GM_ADJUDICATE
  assert doer_check.TAG == names.GM_DOER
  assert second_look.TAG == names.GM_LOOK
  assert gm_prefab.OTHER_TAG == names.GM_OTHER
  assert occasion_check.OP.startswith(names.GM_ADJUDICATE)
  assert structured_act.TALK_TAG == names.TALK
  assert adjudication.ACT_OP == names.ACT


def test_usage_counts_each_operation_in_its_declared_module():
  for op in names.ALL_OPERATIONS:
    assert usage.module_of(op.tag) == op.module, op.name
  for name, module in PAPER.items():
    assert usage.module_of(name) == module
  assert usage.module_of("GM.anything_new") == "game_master"
  assert usage.module_of("NotAnOperation") == "other"


# The substring rules usage.py matched tags by before the declaration (the
# first match won), to show that every tag a run has recorded counts for
# the module it counted for then.
FORMER_RULES = (
    ("metricsjudge", "metrics"), ("gm.", "game_master"),
    ("create", "creation"), ("normmemory", "creation"),
    ("conflict", "spreading"), ("talk", "spreading"),
    ("identif", "spreading"), ("reflect", "spreading"),
    ("synthes", "evaluation"), ("evaluat", "evaluation"),
    ("plan", "compliance"), ("act", "compliance"), ("game", "game_master"))


def _former_module(tag: str) -> str:
  return next((module for needle, module in FORMER_RULES
               if needle in tag.lower()), "other")


def test_recorded_tags_count_for_the_modules_they_counted_for():
  golden = ROOT / "tests" / "golden" / "mini_cafe" / "expected" / "usage.json"
  recorded = set(json.loads(golden.read_text(encoding="utf-8"))["by_tag"])
  tags = (recorded | {op.tag for op in names.ALL_OPERATIONS}
          | set(names.FORMER_TAGS) | {"other", "mystery"})
  assert {t: usage.module_of(t) for t in sorted(tags)} == {
      t: _former_module(t) for t in sorted(tags)}


# -- failure records ----------------------------------------------------------

def _junk() -> ScriptedModel:
  """A model whose every answer is no JSON at all."""
  return ScriptedModel(fallback=lambda prompt, schema: "I would rather not.")


def _norm(i: int, content: str) -> PersonalNorm:
  return PersonalNorm(id=f"n{i}", content=content, utility=80,
                      type="injunctive", activated=True, valid=True)


HELD = [_norm(1, "People should not smoke indoors."),
        _norm(2, "People should keep their voices down.")]
PLAN = [{"start": "09:00", "end": "11:00", "activity": "writes a poem"}]


def _run(name: str, model, on_failure) -> None:
  """Calls operation `name` once with `model`."""
  who = {"name": "Carlos Gomez", "persona": "A poet."}
  day = dict(who, goal="write", setting="Hobbs Cafe", day=1, start="09:00",
             end="11:00", on_failure=on_failure)
  if name == "CreateNorm":
    create_norm(model, **who, setting="Hobbs Cafe", count=3,
                on_failure=on_failure)
  elif name == "DetectConflict":
    detect_conflicts(model, observer="Abigail Chen", items=[Observed(
        "Carlos Gomez", "lights a cigarette", "indoors", HELD[0])],
        on_failure=on_failure)
  elif name == "DecideToTalk":
    decide_to_talk(model, **who, actor="Sam Moore", behaviour="smokes",
                   norm=HELD[0].content, on_failure=on_failure)
  elif name == "IdentifyNorm":
    identify_norm(model, name="Carlos Gomez", source_kind="conversation",
                  source_text="Please do not smoke in here.",
                  on_failure=on_failure)
  elif name == "Reflect":
    reflect(model, **who, observations=["Sam Moore smokes indoors."],
            on_failure=on_failure)
  elif name == "ImmediateEvaluation":
    candidate = PersonalNorm(id="c1", content="Do not litter.", utility=50,
                             type="injunctive", source_text="No litter.")
    immediate_evaluation(model, cs.constant_embedder, **who,
                         candidate=candidate, held=[], known_names=[],
                         on_failure=on_failure)
  elif name == "LongTermSynthesis":
    db = NormDatabase("Carlos Gomez")
    for n in HELD:
      db.add(n.content, n.type, n.utility, origin=Origin.CREATED,
             qualified=True)
    long_term_synthesis(model, db, name="Carlos Gomez", step=1, time=None,
                        judge=lambda *a: None, on_synthesized=print,
                        on_failure=on_failure)
  elif name == "NormativePlan":
    normative_plan(model, **day, norms=HELD)
  elif name == "DayPlan":
    normative_plan(model, **day, norms=None, op=DAY_PLAN_OP)
  elif name == "DecomposePlan":
    decompose_plan(model, **who, goal="write", setting="Hobbs Cafe",
                   norms=None, plan=PLAN, block=PLAN[0],
                   on_failure=on_failure)
  elif name == "ReadEvents":
    read_events(model, "Somebody did a thing nobody could name, slowly.",
                names=["Sam Moore"], on_failure=on_failure)
  else:
    raise AssertionError(f"no call for {name}")


@pytest.mark.parametrize("name", [*PAPER, "DayPlan", "DecomposePlan",
                                  "ReadEvents"])
def test_an_operation_s_failures_carry_its_declared_name(name):
  failures: list[dict] = []
  model = _junk()
  _run(name, model.tagged(names.BY_NAME[name].tag), failures.append)
  assert failures, f"{name} recorded no failure"
  assert {f["op"] for f in failures} == {name}
  assert set(model.calls_by_tag()) == {names.BY_NAME[name].tag}


def _synthesis_failures(step_pattern: str) -> list[dict]:
  """An agent's failure records when its model answers one step of
  LongTermSynthesis with something its schema refuses."""
  model = cs.cafe_model()
  model.add_rule(step_pattern, {"nothing": "valid"}, first=True)
  agent = cs.build_agent("normative", model, role="ordinary",
                         synthesis_threshold=10)
  db = agent.get_component(NORM_MEMORY_KEY).database
  db.add("Do not smoke cigarettes in the dining room.", "injunctive", 50,
         origin="conversation", source_text="x")
  db.add("Cigar smoke must stay outside the building.", "injunctive", 50,
         origin="conversation", source_text="y")
  agent.observe("nothing in particular")
  assert model.calls_by_tag().get("LongTermSynthesis")
  return [r for r in port_of(agent).drain_records()
          if r["kind"] == "failure"]


@pytest.mark.parametrize("pattern,step", [(cs.CLASSIFY, CLASSIFY_STEP),
                                          (cs.SYNTHESIZE, SYNTHESIZE_STEP)])
def test_an_agent_s_synthesis_failures_are_long_term_synthesis_s(pattern,
                                                                 step):
  failures = _synthesis_failures(pattern)
  assert failures
  assert {(f["op"], f["stage"]) for f in failures} == {
      ("LongTermSynthesis", step)}

"""The stated-belief question a run asks itself, at its start and end.

Scripted runs of the mini café (crsec_concordia.testing: SchemaModel and
bag_of_words, no model and no torch): the question leaves the
simulation as it was, its answers are the table stated_table.py reads, a
failure is kept as one, a resume asks each phase once, and its calls are
counted apart from the simulation's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from crsec_concordia import cli, runner
from crsec_concordia.endings import BudgetReached
from crsec_concordia.interviews.stated import SCHEMA, ask_stated, prompt
from crsec_concordia.interviews.agent_view import Interviewee
from crsec_concordia.interviews.stated_table import (END, NO_RULE,
                                                     STATED_BELIEF_KEY,
                                                     STATED_COLUMNS, START,
                                                     read_stated,
                                                     stated_rules)
from crsec_concordia.metrics.measure.usage import usage_summary
from crsec_concordia.models.scripted import UNSCRIPTED
from crsec_concordia.operations.names import BY_TAG, STATED_BELIEF
from crsec_concordia.rundir import writing as rundir
from crsec_concordia.runs.budget import Budget, Caps
from crsec_concordia.testing import (STATED_BELIEF_PROMPT, SchemaModel,
                                     bag_of_words, stating)
from tests import test_runner as tr

STEPS = 2
AGENTS = ["Abigail Chen", "Carlos Gomez", "Tamara Rodriguez", "Tom Gomez"]
NO_SMOKING = "No smoking indoors."


def play(out: Path, model: SchemaModel, steps: int = STEPS, **kwargs
         ) -> Path:
  return runner.run_episode("hobbs_cafe_mini", arm="normative", seed=3,
                            out_dir=out, steps=steps, model=model,
                            embedder=bag_of_words, progress=False,
                            cache=False, **kwargs)


def asked(model: SchemaModel) -> list[str]:
  return [p for p in model.prompts if re.search(STATED_BELIEF_PROMPT, p)]


def run_json(run_dir: Path) -> dict:
  return rundir.read_json(run_dir / rundir.RUN_JSON)


def kept(run_dir: Path) -> dict[str, str]:
  """What the simulation left: its records, norm snapshots and the
  checkpoints' states (every agent's memories among them)."""
  out = {"events": (run_dir / "events.jsonl").read_text(encoding="utf-8")}
  for path in sorted((run_dir / "norms").glob("*.json")):
    out[f"norms/{path.name}"] = path.read_text(encoding="utf-8")
  for path in sorted((run_dir / "checkpoints").glob("step_*.json")):
    data = json.loads(path.read_text(encoding="utf-8"))
    out[path.name] = json.dumps(
        {k: data[k] for k in ("entities", "game_masters")}, sort_keys=True)
  return out


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path, SchemaModel, SchemaModel]:
  root = tmp_path_factory.mktemp("stated")
  on_model = SchemaModel([stating({"Abigail Chen": [NO_SMOKING],
                                   "Tom Gomez": ["Be kind.", "Pay first."]})])
  off_model = SchemaModel()
  return (play(root / "on", on_model), play(root / "off", off_model,
                                             stated_belief=False),
          on_model, off_model)


def test_asking_leaves_every_record_snapshot_and_memory_as_without(pair):
  on, off, _, _ = pair
  with_it, without = kept(on), kept(off)
  assert set(with_it) == set(without) and len(with_it) > 3
  for name in with_it:
    assert with_it[name] == without[name], name
  assert "StatedBelief" not in with_it["events"]


def test_the_table_has_the_shape_stated_table_reads(pair):
  on, _, _, _ = pair
  frame = read_stated(on)
  assert list(frame.columns) == STATED_COLUMNS
  raw = (on / "stated_belief.csv").read_text(encoding="utf-8")
  assert raw.splitlines()[0] == ",".join(STATED_COLUMNS)
  assert set(frame["phase"]) == {START, END}
  assert set(frame[frame["phase"] == START]["slot"]) == {0}
  assert set(frame[frame["phase"] == END]["slot"]) == {STEPS}
  for phase in (START, END):
    rules = stated_rules(frame, phase)
    assert rules == {"Abigail Chen": (NO_SMOKING,), "Carlos Gomez": (),
                     "Tamara Rodriguez": (),
                     "Tom Gomez": ("Be kind.", "Pay first.")}
  roles = dict(zip(frame["agent"], frame["role"]))
  assert roles["Abigail Chen"] == "entrepreneur"
  assert roles["Tom Gomez"] == "ordinary"
  assert set(frame["model"]) == {"main"}
  quiet = frame[frame["agent"] == "Carlos Gomez"]
  assert list(quiet["rule_index"]) == [NO_RULE, NO_RULE]
  assert (frame["error"] == "").all()
  assert run_json(on)[STATED_BELIEF_KEY] == {"asked": True,
                                             "done": [START, END]}


def test_the_prompt_holds_no_held_norm_and_names_no_topic(pair):
  _, _, on_model, _ = pair
  prompts = asked(on_model)
  assert len(prompts) == 2 * len(AGENTS)
  # The start's prompt: persona and setting, no event yet.
  assert sum("- nothing yet" in p for p in prompts) == len(AGENTS)
  assert not any("norms" in p.lower() for p in prompts)
  agent = Interviewee("Ann", "ordinary", "Be Ann.", "A baker.",
                      ("saw a dog",), ("Never hold this.",))
  text = prompt(agent)
  assert "Never hold this." not in text and "saw a dog" in text


def test_the_switch_off_asks_nothing_and_run_json_says_so(pair):
  _, off, _, off_model = pair
  assert asked(off_model) == []
  assert not (off / "stated_belief.csv").exists()
  assert run_json(off)[STATED_BELIEF_KEY] == {"asked": False, "done": []}
  assert read_stated(off).empty


def test_its_calls_have_their_own_tag_and_no_per_agent_hour(pair):
  on, off, _, _ = pair
  assert BY_TAG[STATED_BELIEF].module.value == "other"
  assert set(UNSCRIPTED) == {frozenset(SCHEMA["properties"])}
  usage = rundir.read_json(on / rundir.USAGE_JSON)
  assert usage["by_tag"][STATED_BELIEF]["calls"] == 2 * len(AGENTS)
  assert usage["apart"]["calls"] == 2 * len(AGENTS)
  plain = rundir.read_json(off / rundir.USAGE_JSON)
  assert usage["totals"] == plain["totals"]
  assert run_json(on)["usage_by_tag"][STATED_BELIEF]["calls"] == 8
  summary, plain_summary = runner.summarize(on), runner.summarize(off)
  assert STATED_BELIEF not in summary["per_agent_hour"]
  assert summary["per_agent_hour"] == plain_summary["per_agent_hour"]
  assert summary["apart"]["calls"] == 2 * len(AGENTS)
  assert plain_summary["apart"]["calls"] == 0
  read = usage_summary(usage)
  assert STATED_BELIEF not in read["by_tag"]
  assert read["by_module"] == usage_summary(plain)["by_module"]
  assert read["apart"]["calls"] == 2 * len(AGENTS)
  assert "apart" not in usage_summary(plain)


def test_a_failing_answer_is_kept_with_its_error_and_no_rule(tmp_path):
  model = SchemaModel([(STATED_BELIEF_PROMPT, {"rules": "not a list"})])
  run_dir = play(tmp_path / "run", model, steps=1)
  frame = read_stated(run_dir)
  assert len(frame) == 2 * len(AGENTS)
  assert (frame["error"] != "").all()
  assert (frame["rule_index"] == NO_RULE).all() and (frame["rule"] == "").all()
  assert stated_rules(frame, START) == {a: None for a in AGENTS}
  events = (run_dir / "events.jsonl").read_text(encoding="utf-8")
  assert STATED_BELIEF not in events
  log = (run_dir / "run.log").read_text(encoding="utf-8")
  assert log.count("stated belief (start)") == len(AGENTS)
  assert log.count("stated belief (end)") == len(AGENTS)


def test_a_resume_after_the_start_does_not_ask_it_again(tmp_path):
  first = SchemaModel()
  with pytest.raises(BudgetReached):
    play(tmp_path / "run", first, budget=Budget(run=Caps(max_calls=1)))
  run_dir = tmp_path / "run"
  assert len(asked(first)) == len(AGENTS)
  assert run_json(run_dir)[STATED_BELIEF_KEY]["done"] == [START]
  again = SchemaModel()
  runner.resume_episode(run_dir, model=again, embedder=bag_of_words,
                        progress=False, budget=Budget(run=Caps(10**6)))
  assert len(asked(again)) == len(AGENTS)  # The end's, only.
  frame = read_stated(run_dir)
  assert sorted(frame["phase"]) == sorted([START] * 4 + [END] * 4)
  info = run_json(run_dir)
  assert info["status"] == "completed"
  assert info[STATED_BELIEF_KEY]["done"] == [START, END]
  assert info["usage_by_tag"][STATED_BELIEF]["calls"] == 2 * len(AGENTS)


def test_a_run_stopped_during_the_end_asks_it_when_resumed(tmp_path):
  seen = []

  def once_then_fail(prompt_text: str, schema) -> dict:
    del prompt_text, schema
    seen.append(1)
    if len(seen) > len(AGENTS):  # The end phase.
      raise RuntimeError("the endpoint went away")
    return {"rules": []}

  with pytest.raises(RuntimeError):
    play(tmp_path / "run", SchemaModel([(STATED_BELIEF_PROMPT,
                                         once_then_fail)]))
  run_dir = tmp_path / "run"
  info = run_json(run_dir)
  assert info["completed_steps"] == STEPS and info["status"] != "completed"
  assert info[STATED_BELIEF_KEY]["done"] == [START]
  again = SchemaModel([stating([NO_SMOKING])])
  runner.resume_episode(run_dir, model=again, embedder=bag_of_words,
                        progress=False)
  assert len(asked(again)) == len(AGENTS)
  frame = read_stated(run_dir)
  assert stated_rules(frame, START) == {a: () for a in AGENTS}
  assert stated_rules(frame, END) == {a: (NO_SMOKING,) for a in AGENTS}
  info = run_json(run_dir)
  assert info["status"] == "completed"
  assert info[STATED_BELIEF_KEY]["done"] == [START, END]


def test_the_schema_takes_an_empty_list_and_bounds_the_rules():
  rules = SCHEMA["properties"]["rules"]
  assert rules["minItems"] == 0 and rules["maxItems"] >= 3
  assert rules["items"]["maxLength"] >= 100


def test_each_agent_is_asked_with_its_own_model(tmp_path, embedder):
  models = {"main": tr.cafe(), "referee": tr.cafe(), "second": tr.cafe()}
  models["second"].add_rule(*stating([NO_SMOKING]), first=True)
  spec = {"endpoints": {"referee": {}, "second": {}},
          "game_master": "referee", "agents": {"Carlos Gomez": "second"}}
  run_dir = runner.run_episode(
      tr.tiny(), arm="normative", seed=1, out_dir=tmp_path / "mixed",
      model=models["main"], embedder=embedder, progress=False, models=spec,
      given_models={"referee": models["referee"],
                    "second": models["second"]})
  frame = read_stated(run_dir)
  model_of = dict(zip(frame["agent"], frame["model"]))
  assert model_of.pop("Carlos Gomez") == "second"
  assert model_of and set(model_of.values()) == {"main"}
  assert stated_rules(frame, END)["Carlos Gomez"] == (NO_SMOKING,)
  asked_by = {i: [c.prompt for c in m.calls if c.tag == STATED_BELIEF]
              for i, m in models.items()}
  assert not asked_by["referee"]
  assert len(asked_by["second"]) == 2
  assert all("Carlos Gomez is asked:" in p for p in asked_by["second"])
  usage = rundir.read_json(run_dir / rundir.USAGE_JSON)
  for i, m in models.items():
    simulated = [c for c in m.calls if c.tag != STATED_BELIEF]
    assert usage["by_model"][i]["totals"]["calls"] == len(simulated), i


def test_the_command_line_switch_on_run_compare_and_sweep(tmp_path, capsys):
  out = tmp_path / "quiet"
  assert cli.main(["run", "hobbs_cafe_mini", "--steps", "1", "--out",
                   str(out), "--no-progress", "--no-cache",
                   "--model-factory",
                   "crsec_concordia.testing:scripted_model_factory",
                   "--embedder", "crsec_concordia.testing:bag_of_words",
                   "--no-stated-belief"]) == 0
  capsys.readouterr()
  assert run_json(out)[STATED_BELIEF_KEY] == {"asked": False, "done": []}
  assert not (out / "stated_belief.csv").exists()
  parser = cli.build_parser()
  for command in (["run"], ["compare", "x"], ["sweep", "x.yaml"]):
    assert parser.parse_args(command).stated_belief is True
    assert parser.parse_args([*command, "--no-stated-belief"]
                             ).stated_belief is False


def test_a_rule_said_twice_in_one_answer_is_one_rule_stated():
  class Looping:
    """A model whose answer repeats itself, as a small model's can."""

    def sample_json(self, prompt, schema, **kwargs):
      del prompt, schema, kwargs
      return {"rules": ["Keep it down.", " Keep  it down. ", "Tip the staff.",
                        "Keep it down."]}

  agent = Interviewee("Ann", "ordinary", "Be Ann.", "Ann reads.", (), ())
  stated = ask_stated(Looping(), agent)
  assert stated.rules == ("Keep it down.", "Tip the staff.")
  assert stated.error == ""

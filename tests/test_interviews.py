"""Interviews: a run's agents asked questions, the run left as it was.

The run is the scripted ring of tests/test_ties.py (Abigail holds "No
smoking indoors." and talks with her neighbours, who take a norm).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from crsec_concordia.analysis import load_run
from crsec_concordia.errors import UserError
from crsec_concordia.interviews import load_questions
from crsec_concordia.interviews import interview as interview_lib
from crsec_concordia.interviews.interview import interview
from crsec_concordia.interviews.restore import checkpoints
from crsec_concordia.models import ScriptedModel
from crsec_concordia.scenarios import ScenarioError, parse_scenario
from tests import test_ties
from tests.fake_openai import Reply
from tests.test_cli_basics import assert_one_line_error, crsec

ANSWER = "People here do not smoke indoors, because the smoke bothers others."


def digest(root: Path) -> dict[str, str]:
  """Every file under `root` by its hash."""
  return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
          for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, embedder) -> Path:
  return test_ties.run(tmp_path_factory.mktemp("interviewed"), embedder,
                       test_ties.ROOM + test_ties.RING, "ring")


@pytest.fixture
def copy(run_dir, tmp_path) -> Path:
  return Path(shutil.copytree(run_dir, tmp_path / "run"))


def answering(answer: str = ANSWER) -> ScriptedModel:
  return ScriptedModel([(r"Someone asks", {"answer": answer})])


def test_an_interview_leaves_every_memory_and_the_run_as_they_were(
    copy, tmp_path, embedder, monkeypatch):
  before = digest(copy)
  states = {}
  real = interview_lib.agents_of

  def state(simulation) -> str:
    data = simulation.make_checkpoint_data()  # Counts itself: left out.
    return json.dumps({k: data[k] for k in ("entities", "game_masters")},
                      sort_keys=True)

  def keep(simulation, scenario):
    states["simulation"] = simulation
    states["before"] = state(simulation)
    return real(simulation, scenario)

  monkeypatch.setattr(interview_lib, "agents_of", keep)
  model = answering()
  result = interview(copy, "rules", out=tmp_path / "out" / "rules.csv",
                     model=model, embedder=embedder)
  assert digest(copy) == before
  assert state(states["simulation"]) == states["before"], (
      "an agent's memory or state changed")
  questions = load_questions("rules").questions
  agents = [test_ties.ABIGAIL, *test_ties.SMOKERS]
  assert len(result.answers) == len(agents) * len(questions)
  assert model.usage.totals()["calls"] == len(agents) * len(questions)
  assert set(result.answers["answer"]) == {ANSWER}
  assert (result.answers["error"] == "").all()
  assert result.path.is_file()


def test_the_answers_sit_beside_the_norms_each_agent_held(copy, embedder):
  result = interview(copy, "rules", at=4, model=answering(),
                     embedder=embedder)
  assert result.path == copy / "interviews" / "rules.csv"
  snapshot = json.loads((copy / "norms" / "step_0004.json").read_text())
  for _, row in result.answers.iterrows():
    held = [n["content"] for n in snapshot[row["agent"]]["norms"]
            if n["activated"] and n["valid"]]
    assert row["held_norms"] == "\n".join(held)
    assert row["slot"] == 4
  abigail = result.answers[result.answers["agent"] == test_ties.ABIGAIL]
  assert "No smoking indoors." in abigail["held_norms"].iloc[0]
  assert set(abigail["role"]) == {"entrepreneur"}
  # Only the CSV was added to the run directory; load_run reads it back.
  frame = load_run(copy, metrics=False).interviews
  assert len(frame) == len(result.answers)
  assert set(frame["questionnaire"]) == {"rules"}
  assert list(frame["answer"]) == list(result.answers["answer"])


def test_a_question_never_answered_is_a_failure_not_a_default(
    copy, tmp_path, embedder):
  model = ScriptedModel([(r"Someone asks", {"answer": "   "})])
  result = interview(copy, "rules", out=tmp_path / "blank.csv", model=model,
                     embedder=embedder)
  assert (result.answers["answer"] == "").all()
  assert result.answers["error"].str.contains("blank").all()


def test_the_prompt_holds_what_the_questions_file_names(copy, tmp_path,
                                                        embedder):
  questions = tmp_path / "q.yaml"
  questions.write_text("name: held\ncontext: [norms]\nquestions:\n"
                       "  - {id: q, text: 'What do you hold to here?'}\n")
  seen = []

  def answer(prompt, schema):
    del schema
    seen.append(prompt)
    return {"answer": ANSWER}

  interview(copy, questions, out=tmp_path / "held.csv",
            model=ScriptedModel([(r"Someone asks", answer)]),
            embedder=embedder)
  abigail = next(p for p in seen if "Abigail Chen holds" in p)
  assert "- No smoking indoors." in abigail
  assert "remembers" not in abigail and "A volunteer" not in abigail


@pytest.mark.parametrize("text,expected", [
    ("questions: []\n", "questions: is missing or empty"),
    ("questions:\n  - {id: q, text: ''}\n", "questions[0].text: is empty"),
    ("context: [everything]\nquestions:\n  - {id: q, text: Why}\n",
     "context: is not a list of persona, memories, norms"),
    ("questions: [\n", "is not valid YAML"),
])
def test_a_malformed_questions_file_is_a_line_naming_the_fix(
    tmp_path, text, expected):
  path = tmp_path / "bad.yaml"
  path.write_text(text)
  with pytest.raises(UserError, match=expected.replace("[", r"\[")):
    load_questions(path)


def test_the_command_asks_an_endpoint_and_writes_the_csv(copy, tmp_path,
                                                         server):
  server.responder = lambda request: Reply(json.dumps({"answer": ANSWER}))
  before = digest(copy)
  out = tmp_path / "answers.csv"
  result = crsec("interview", str(copy), "--questions", "rules", "--out",
                 str(out), "--base-url", server.base_url, "--model", "m",
                 timeout=300)
  assert result.returncode == 0, result.stderr
  assert str(out) in result.stdout
  assert digest(copy) == before
  assert ANSWER in out.read_text(encoding="utf-8")


def test_bad_input_is_one_line_and_exit_2(copy, tmp_path):
  line = assert_one_line_error(crsec("interview", str(copy), "--questions",
                                     "rules", "--at", "1"))
  assert "no checkpoint at slot 1; use --at with one of 3, 4" in line
  bad = tmp_path / "bad.yaml"
  bad.write_text("questions:\n  - {id: Q, text: Why}\n")
  line = assert_one_line_error(crsec("interview", str(copy), "--questions",
                                     str(bad)))
  assert "questions[0].id: is not an id" in line
  line = assert_one_line_error(crsec("interview", str(tmp_path),
                                     "--questions", "rules"))
  assert "is not a run directory" in line
  line = assert_one_line_error(crsec("interview", str(copy), "--questions",
                                     "nonesuch"))
  assert "no such questions file" in line and "rules" in line


def test_a_scenario_schedules_interviews_and_its_run_keeps_their_slots(
    tmp_path, embedder):
  text = (test_ties.ROOM.replace("max_steps: 4", "max_steps: 5")
          + "interviews:\n  - {at: [1, 3], questions: rules}\n")
  run_dir = test_ties.run(tmp_path, embedder, text, "scheduled")
  # Slots 1 and 3 are kept beside the latest two.
  assert checkpoints(run_dir) == [1, 3, 4, 5]
  before = digest(run_dir)
  results = interview_lib.interview_scheduled(run_dir, model=answering(),
                                              embedder=embedder)
  result, = results
  assert result.path == run_dir / "interviews" / "rules.csv"
  assert sorted(set(result.answers["slot"])) == [1, 3]
  agents = 1 + len(test_ties.SMOKERS)
  assert len(result.answers) == 2 * agents * 3
  after = digest(run_dir)
  assert {k: v for k, v in after.items()
          if not k.startswith("interviews/")} == before
  assert set(after) - set(before) == {"interviews/rules.csv"}


def test_without_questions_a_run_with_no_schedule_is_one_line(copy):
  line = assert_one_line_error(crsec("interview", str(copy)))
  assert "schedules no interviews; give --questions FILE" in line


def test_a_scheduled_slot_after_the_run_is_a_line_naming_the_fix():
  with pytest.raises(ScenarioError) as caught:
    parse_scenario(test_ties.ROOM + "interviews:\n  - {at: [2, 9], "
                   "questions: rules}\n", "x.yaml")
  assert caught.value.problems == [
      "x.yaml:29: interviews[0].at[1]: slot 9 is after the run's last (4); "
      "use a slot from 1 to 4"]

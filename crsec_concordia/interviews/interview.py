"""`interview`: every agent of a run, restored after a slot, asked a
questions file; the answers as a table beside the norms each holds. An
agent not there after that slot (not arrived yet, or gone) is not asked.

The agents are restored into a fresh simulation (restore.py) and asked
with the model (ask.py), one agent per thread, its questions in order;
in a run with several models, each agent with the one it played with
(run.json's `models`; runs/model_roles.py builds them again), and each
row names it;
nothing is written to the run directory but the answers' CSV
(RUN_DIR/interviews/<name>.csv unless `out` says elsewhere). Each row
sets an answer beside the norms the agent held at that slot, read from
the run's norms/ snapshot (the belief measure reads the same databases,
through the norm matcher; the answers do not go through it).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

import pandas as pd

from crsec_concordia import threads
from crsec_concordia.embedding import user as user_embedder
from crsec_concordia.interviews.ask import OP, Answer, ask_question
from crsec_concordia.interviews.questions import Questionnaire, load_questions
from crsec_concordia.interviews.table import (INTERVIEW_COLUMNS,
                                              NORM_SEPARATOR, write_csv)
from crsec_concordia.interviews.restore import (Interviewee, absent_after,
                                                agents_of, checkpoint_for,
                                                restore)
from crsec_concordia.models import EndpointConfig
from crsec_concordia.models.concordia_adapter import as_structured
from crsec_concordia.rundir import writing as rundir
from crsec_concordia.rundir.format import INTERVIEW_ANSWERS, NORMS
from crsec_concordia.runs import episode, model_roles
from crsec_concordia.runs.model_roles import MAIN_MODEL



@dataclasses.dataclass(frozen=True)
class Interviews:
  """Where the answers were written, and the answers."""
  path: Path
  answers: pd.DataFrame


def held_norms(run_dir: Path, step: int,
               agents: list[Interviewee]) -> dict[str, tuple[str, ...]]:
  """Each agent's held norms (activated and valid) from the norms/
  snapshot of `step`; the restored NormMemory's when the run kept none
  (a baseline run)."""
  snapshot = run_dir / NORMS / f"step_{step:04d}.json"
  if not snapshot.is_file():
    return {a.name: a.norms for a in agents}
  data = rundir.read_json(snapshot)
  return {name: tuple(n["content"] for n in db.get("norms", [])
                      if n.get("activated") and n.get("valid"))
          for name, db in data.items()}


def default_out(run_dir: Path, questionnaire: Questionnaire) -> Path:
  return run_dir / INTERVIEW_ANSWERS / f"{questionnaire.name}.csv"


def rows(step: int, answers: list[Answer], agents: list[Interviewee],
         held: dict[str, tuple[str, ...]],
         model_of: dict[str, str] | None = None) -> pd.DataFrame:
  """One row per answer; a `model` column after `role` when the run had
  several models (`model_of`: each agent's model id)."""
  role = {a.name: a.role for a in agents}
  columns = list(INTERVIEW_COLUMNS)
  if model_of is not None:
    columns.insert(columns.index("role") + 1, "model")
  return pd.DataFrame([{
      "slot": step, "agent": a.agent, "role": role.get(a.agent, ""),
      "model": (model_of or {}).get(a.agent, MAIN_MODEL),
      "question_id": a.question.id, "question": a.question.text,
      "answer": a.answer, "error": a.error,
      "held_norms": NORM_SEPARATOR.join(held.get(a.agent, ()))}
      for a in answers], columns=columns)



@dataclasses.dataclass(frozen=True)
class _Models:
  """The models the agents are asked with, by id, and each agent's model
  id in a run of several (None: a one-model run)."""
  by_id: dict[str, Any]
  model_of: dict[str, str] | None


def _models(run_dir: Path, endpoint: EndpointConfig | None, model,
            progress: bool, given: dict[str, Any] | None) -> _Models:
  """The run's own model from the flags' `endpoint` (or `model`; neither:
  the model factory its run.json names, else the environment's), and in
  a run of several the agents' others from its run.json (`given`: ready
  ones by id, as the run was given them)."""
  info = rundir.read_json(run_dir / rundir.RUN_JSON)
  seed = int(info.get("seed", 0))
  endpoint = (endpoint or (None if model is not None else
                           EndpointConfig.of_run(info.get("model")))
              or EndpointConfig.resolve())
  def make(other: EndpointConfig, ready=None):
    return episode.model_for(other, seed, False, ready, progress)[0]
  if not info.get("models"):
    return _Models({MAIN_MODEL: make(endpoint, model)}, None)
  others = model_roles.agent_models(
      info, endpoint, make, given, again="interview it from Python with "
      "interview(..., given_models={id: the model})")
  return _Models({MAIN_MODEL: make(endpoint, model), **others},
                 dict(info["models"].get("agents") or {}))


def _embedder(run_dir: Path, given):
  """`given`, else the embedder the run used (run.json's, imported again;
  none named: the default MiniLM), loaded now."""
  info = rundir.read_json(run_dir / rundir.RUN_JSON)
  return episode.embedder_for(user_embedder.used_by_run(info, given))


def _ask_at(run_dir: Path, step: int, checkpoint: Path,
            questionnaire: Questionnaire, models: _Models,
            embedder) -> pd.DataFrame:
  """Every agent's answers after `step`, from a fresh restored copy."""
  scenario, simulation = restore(run_dir, checkpoint,
                                 models.by_id[MAIN_MODEL], embedder)
  absent = absent_after(run_dir, scenario, step)
  agents = [a for a in agents_of(simulation, scenario) if a.name not in absent]
  tagged = {i: as_structured(m).tagged(OP) for i, m in models.by_id.items()}
  def one(agent: Interviewee) -> list[Answer]:
    model = tagged[(models.model_of or {}).get(agent.name, MAIN_MODEL)]
    return [ask_question(model, agent, q, questionnaire)
            for q in questionnaire.questions]
  done = threads.run_tasks(
      {a.name: functools.partial(one, a) for a in agents},
      workers=sum(threads.workers_for(t) for t in tagged.values()))
  answers = [answer for a in agents for answer in done[a.name]]
  return rows(step, answers, agents, held_norms(run_dir, step, agents),
              models.model_of)


def interview(run_dir: Path | str, questions: Path | str, *,
              at: int | None = None, out: Path | None = None,
              endpoint: EndpointConfig | None = None, model=None,
              embedder=None, progress: bool = False,
              given_models: dict[str, Any] | None = None) -> Interviews:
  """Asks every agent of `run_dir`, as it was after slot `at` (default:
  the latest checkpointed), the questions of `questions` (a path, or a
  shipped name such as "rules"); writes and returns the answers.

  `endpoint` (or `model`) is the run's own model (neither: the model
  factory its run.json names, else the environment's endpoint); in a run
  with several, each agent is asked with its own: the endpoints of
  run.json's `model_spec`, or `given_models` by id (those a program
  handed the run). `embedder`: default the one the run used.

  Raises:
    UserError: no run directory, no checkpoint at `at`, a malformed
      questions file, or the run's factory or embedder not importable
      here (checked before the model starts).
  """
  run_dir = Path(run_dir)
  step, checkpoint = checkpoint_for(run_dir, at)
  questionnaire = load_questions(questions)
  out = Path(out) if out is not None else default_out(run_dir, questionnaire)
  embedder = _embedder(run_dir, embedder)
  models = _models(run_dir, endpoint, model, progress, given_models)
  frame = _ask_at(run_dir, step, checkpoint, questionnaire, models,
                  embedder)
  write_csv(frame, out)
  return Interviews(out, frame)


def scheduled(run_dir: Path | str) -> list[tuple[list[int], Questionnaire]]:
  """The interviews the run's scenario schedules: (slots, questions),
  each checked (a slot without a checkpoint, a malformed file: UserError)
  before any model starts."""
  run_dir = Path(run_dir)
  checkpoint_for(run_dir, None)
  block = (rundir.read_json(run_dir / rundir.SCENARIO_JSON)
           .get("interviews") or [])
  out = []
  for item in block:
    slots = sorted({int(s) for s in item["at"]})
    for slot in slots:
      checkpoint_for(run_dir, slot)
    out.append((slots, load_questions(item["questions"])))
  return out


def interview_scheduled(run_dir: Path | str, *,
                        endpoint: EndpointConfig | None = None, model=None,
                        embedder=None, progress: bool = False,
                        given_models: dict[str, Any] | None = None
                        ) -> list[Interviews]:
  """Holds the interviews the run's scenario schedules: one CSV per
  questions file (RUN_DIR/interviews/<name>.csv), a row per slot, agent
  and question."""
  run_dir = Path(run_dir)
  plan = scheduled(run_dir)
  if not plan:
    return []
  embedder = _embedder(run_dir, embedder)
  models = _models(run_dir, endpoint, model, progress, given_models)
  results = []
  for slots, questionnaire in plan:
    frame = pd.concat([
        _ask_at(run_dir, slot, checkpoint_for(run_dir, slot)[1],
                questionnaire, models, embedder) for slot in slots],
        ignore_index=True)
    out = default_out(run_dir, questionnaire)
    write_csv(frame, out)
    results.append(Interviews(out, frame))
  return results

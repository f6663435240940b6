"""A questions file of `crsec interview`: which questions, and what the
agent answers from.

  name: rules                      # names the CSV (interviews/rules.csv)
  context: [persona, memories]     # what the prompt holds (default: all three)
  memories: 20                     # how many recent memories (default 20)
  questions:
    - {id: rules, text: What rules do people here follow?}

`context` may name `persona` (its instructions and description),
`memories` (its most recent memories, oldest first) and `norms` (the
norms its memory holds, as it plans with them). The shipped questionnaire
(`rules`) leaves the norms out, so its answers can be set beside them.
Every problem is one line naming the fix.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import yaml

from crsec_concordia import scenarios
from crsec_concordia.errors import UserError

CONTEXTS = ("persona", "memories", "norms")
DEFAULT_MEMORIES = 20
MAX_MEMORIES = 500
MAX_QUESTIONS = 100
MAX_QUESTION_CHARS = 500
_ID = re.compile(r"[a-z][a-z0-9_]*")
_KEYS = ("name", "context", "memories", "questions")


@dataclasses.dataclass(frozen=True)
class Question:
  id: str
  text: str


@dataclasses.dataclass(frozen=True)
class Questionnaire:
  """A validated questions file."""
  name: str
  questions: tuple[Question, ...]
  context: tuple[str, ...] = CONTEXTS
  memories: int = DEFAULT_MEMORIES


def shipped_names() -> list[str]:
  """The questionnaires shipped with the package, by name."""
  here = _shipped_dir()
  return sorted(p.stem for p in here.glob("*.yaml")) if here.is_dir() else []


def _shipped_dir() -> Path:
  # Installed, the scenarios folder is the package crsec_concordia.scenarios.
  return Path(scenarios.__file__).resolve().parent / "interviews"


def questions_path(path_or_name: str | Path) -> Path:
  """A questions file: a path, or the name of a shipped one ("rules")."""
  path = Path(path_or_name).expanduser()
  if path.is_file():
    return path
  shipped = _shipped_dir() / f"{path_or_name}.yaml"
  if re.fullmatch(r"[a-z0-9_]+", str(path_or_name)) and shipped.is_file():
    return shipped
  raise UserError(f"{path_or_name}: no such questions file; give the path of "
                  "a .yaml file or a shipped one: "
                  f"{', '.join(shipped_names()) or '(none)'}")


def load_questions(path_or_name: str | Path) -> Questionnaire:
  """Reads and checks a questions file; UserError lists every problem."""
  path = questions_path(path_or_name)
  source = str(path_or_name)
  try:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
  except (OSError, UnicodeDecodeError) as e:
    raise UserError(f"{source}: cannot be read ({e}); give a UTF-8 .yaml "
                    "questions file") from None
  except yaml.YAMLError as e:
    mark = getattr(e, "problem_mark", None)
    line = f":{mark.line + 1}" if mark else ""
    raise UserError(f"{source}{line}: is not valid YAML; fix the syntax "
                    "(docs/design.md, 'Interviews')") from None
  problems = _problems(data, path)
  if problems:
    raise UserError("\n".join(f"{source}: {p}" for p in problems))
  context = data.get("context", list(CONTEXTS))
  return Questionnaire(
      name=str(data.get("name") or path.stem),
      questions=tuple(Question(q["id"], " ".join(q["text"].split()))
                      for q in data["questions"]),
      context=tuple(dict.fromkeys(context)),
      memories=int(data.get("memories", DEFAULT_MEMORIES)))


def _problems(data: Any, path: Path) -> list[str]:
  if not isinstance(data, dict):
    return ["(top level): is not a mapping; write `questions:` with a list "
            "of {id: ..., text: ...} (docs/design.md, 'Interviews')"]
  problems = [f"{key}: unknown key; use one of: {', '.join(_KEYS)}"
              for key in data if key not in _KEYS]
  name = data.get("name", path.stem)
  if not (isinstance(name, str) and _ID.fullmatch(name)):
    problems.append("name: is not an id; use lower-case letters, digits and "
                    "underscores, e.g. rules")
  context = data.get("context", list(CONTEXTS))
  if not (isinstance(context, list) and context
          and all(c in CONTEXTS for c in context)):
    problems.append(f"context: is not a list of {', '.join(CONTEXTS)}; "
                    "write e.g. [persona, memories]")
  memories = data.get("memories", DEFAULT_MEMORIES)
  if not (isinstance(memories, int) and not isinstance(memories, bool)
          and 0 <= memories <= MAX_MEMORIES):
    problems.append(f"memories: is not a whole number from 0 to "
                    f"{MAX_MEMORIES}; write e.g. 20")
  questions = data.get("questions")
  if not isinstance(questions, list) or not questions:
    return problems + ["questions: is missing or empty; add a list of "
                       "{id: ..., text: ...}"]
  if len(questions) > MAX_QUESTIONS:
    problems.append(f"questions: has {len(questions)} questions; ask at "
                    f"most {MAX_QUESTIONS}")
  seen: set[str] = set()
  for i, q in enumerate(questions):
    where = f"questions[{i}]"
    if not isinstance(q, dict) or set(q) - {"id", "text"}:
      problems.append(f"{where}: is not a mapping of id and text; write "
                      "{id: rules, text: What rules do people here follow?}")
      continue
    qid, text = q.get("id"), q.get("text")
    if not (isinstance(qid, str) and _ID.fullmatch(qid)):
      problems.append(f"{where}.id: is not an id; use lower-case letters, "
                      "digits and underscores, e.g. rules")
    elif qid in seen:
      problems.append(f"{where}.id: {qid!r} is used twice; give every "
                      "question its own id")
    else:
      seen.add(qid)
    if not (isinstance(text, str) and text.strip()):
      problems.append(f"{where}.text: is empty; write the question")
    elif len(text) > MAX_QUESTION_CHARS or "{" in text or "}" in text:
      problems.append(f"{where}.text: is longer than {MAX_QUESTION_CHARS} "
                      "characters or holds braces; write a short question "
                      "without braces")
  return problems

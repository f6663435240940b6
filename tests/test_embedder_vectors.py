"""An embedder's vectors are checked: the first ones, and every batch after.

An embedder that returns NaN, all-zero vectors, vectors of different
lengths or a string, or that raises, stops `crsec run`, `report` and
`interview` with one line naming it and exit code 2, before anything is
written. A batch that goes bad in the middle of a run stops the run at the
end of that slot, interrupted, and `crsec resume` plays the rest.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from crsec_concordia import cli, embedding, endings, runner
from crsec_concordia.embedding import BadVectors
from crsec_concordia.runs import session as session_lib
from crsec_concordia.testing import bag_of_words
from crsec_concordia.testing import plainest as filled
from tests import crsec_script as cs

BAD_MODULE = textwrap.dedent("""\
    import numpy as np

    def nan(text):
      vector = np.ones(8, dtype=np.float32)
      vector[len(text) % 8] = np.nan
      return vector

    def zeros(text):
      return np.zeros(8, dtype=np.float32)

    def ragged(text):
      return np.ones(8 + len(text) % 3, dtype=np.float32)

    def string(text):
      return text

    def raising(text):
      raise RuntimeError("the embedding service is down")
    """)
# Each bad embedder, and what its line says was wrong.
BAD = {"nan": "NaN", "zeros": "all-zero vector", "ragged": "of length",
       "string": "returned a str", "raising": "raised RuntimeError"}
MODULE_NAME = "bad_vectors_embedders"


def _bad(name: str):
  namespace: dict = {}
  exec(BAD_MODULE, namespace)  # pylint: disable=exec-used
  return embedding.named(namespace[name], f"{MODULE_NAME}:{name}")


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_first_vectors_are_one_line_naming_the_embedder(name):
  with pytest.raises(BadVectors) as raised:
    embedding.of(_bad(name))
  line = str(raised.value)
  assert "\n" not in line
  assert f"the embedder {MODULE_NAME}:{name}" in line and BAD[name] in line


def test_a_good_embedders_value_is_its_function_checked():
  value = embedding.of(bag_of_words)
  assert embedding.of(value) is value and embedding.of(bag_of_words) is value
  assert np.array_equal(value("No smoking indoors."),
                        bag_of_words("No smoking indoors."))
  assert value.encode(["a b", "c"]).shape == (2, 64)
  assert value.identity == embedding.identity_for(bag_of_words)
  assert value.measured is None and not value.thresholds.measured
  assert value.failure is None


def test_a_later_bad_batch_is_raised_and_kept():
  state = {"bad": False}

  def flaky(text: str) -> np.ndarray:
    return bag_of_words(text) * (np.nan if state["bad"] else 1.0)

  value = embedding.of(flaky)
  state["bad"] = True
  with pytest.raises(BadVectors, match="NaN"):
    value.encode(["a text never embedded"])
  assert "NaN" in str(value.failure)
  with pytest.raises(BadVectors, match="of length 3"):
    value.check.rows(["x"], [np.ones(3)])


@pytest.fixture(scope="module")
def played(tmp_path_factory) -> Path:
  """A run of one slot, with checkpoints (for `interview`)."""
  return runner.run_episode(
      "hobbs_cafe_mini", arm="normative", seed=1,
      out_dir=tmp_path_factory.mktemp("played") / "run", model=_model(),
      embedder=bag_of_words, steps=1, progress=False)


def _model():
  model = cs.cafe_model()
  model.add_rule(r"You are the referee", lambda prompt, schema: filled(schema))
  return model


def _commands(tmp_path: Path, played: Path) -> dict[str, tuple[list, Path]]:
  """Each command's arguments, and the folder it would write."""
  run_copy = Path(shutil.copytree(played, tmp_path / "copy"))
  closed = ["--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
  return {
      "run": (["run", "hobbs_cafe_mini", "--out", str(tmp_path / "out"),
               "--steps", "1", "--no-progress", *closed], tmp_path / "out"),
      "report": (["report", str(run_copy)], run_copy / "report"),
      "interview": (["interview", str(run_copy), "--questions", "rules",
                     "--no-progress", *closed], run_copy / "interviews"),
  }


@pytest.mark.parametrize("command", ["run", "report", "interview"])
@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_embedder_stops_each_command_before_it_writes(
    command, name, played, tmp_path, monkeypatch, capsys):
  (tmp_path / f"{MODULE_NAME}.py").write_text(BAD_MODULE)
  monkeypatch.chdir(tmp_path)
  for variable in ("CRSEC_BASE_URL", "OPENAI_BASE_URL", "CRSEC_MODEL",
                   "OPENAI_MODEL"):
    monkeypatch.delenv(variable, raising=False)
  argv, written = _commands(tmp_path, played)[command]
  capsys.readouterr()
  code = cli.main([*argv, "--embedder", f"{MODULE_NAME}:{name}"])
  err = capsys.readouterr().err
  assert code == 2, err
  lines = err.strip().splitlines()
  assert len(lines) == 1, err
  assert lines[0].startswith(f"crsec: the embedder {MODULE_NAME}:{name} ")
  assert BAD[name] in lines[0] and "Traceback" not in err
  assert not written.exists(), f"{command} wrote {written}"


def test_a_batch_gone_bad_mid_run_stops_it_resumable(tmp_path, monkeypatch):
  state = {"bad": False}

  def flaky(text: str) -> np.ndarray:
    return bag_of_words(text) * (np.nan if state["bad"] else 1.0)

  real_on_step = session_lib.Session._on_step  # pylint: disable=protected-access

  def on_step(self, step_data):
    real_on_step(self, step_data)
    state["bad"] = True  # Every text new after the first slot: NaN.

  monkeypatch.setattr(session_lib.Session, "_on_step", on_step)
  out = tmp_path / "run"
  with pytest.raises(endings.LostDependency, match=r"NaN.*stopped after slot 1"):
    runner.run_episode("hobbs_cafe_mini", arm="normative", seed=1,
                       out_dir=out, model=_model(), embedder=flaky, steps=3,
                       progress=False)
  info = json.loads((out / "run.json").read_text())
  assert info["status"] == "interrupted: lost dependency" and info[
      "completed_steps"] == 1
  steps = [json.loads(line)["kind"] for line in
           (out / "events.jsonl").read_text().splitlines()].count("step")
  assert steps == 1, "a slot with missing vectors was committed"

  monkeypatch.setattr(session_lib.Session, "_on_step", real_on_step)
  state["bad"] = False
  runner.resume_episode(out, model=_model(), embedder=flaky, progress=False)
  info = json.loads((out / "run.json").read_text())
  assert info["status"] == "completed" and info["completed_steps"] == 3

"""An embedder's identity (name, fingerprint) and `--embedder module:function`.

A report read with an embedder of the user's own names it and quotes no
error measured with MiniLM; a run given one records it in run.json; a bad
`--embedder` is one line and exit code 2.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from crsec_concordia import embedding
from crsec_concordia.embedding import identity as ei
from crsec_concordia import load_run, runner
from crsec_concordia.embedding import user as user_embedder
from crsec_concordia.errors import UserError
from crsec_concordia.metrics.classifiers.matching import NormMatcher
from crsec_concordia.metrics.measure import run_metrics
from crsec_concordia.rundir import reading
from crsec_concordia.runs import resume
from crsec_concordia.sweeps import runjob
from tests import crsec_script as cs
from crsec_concordia.testing import bag_of_words as plain_embedder
from crsec_concordia.testing import plainest as filled

GOLDEN_RUN = Path(__file__).with_name("golden") / "mini_cafe" / "expected"
ROOT = Path(__file__).resolve().parents[1]
MODULE = textwrap.dedent("""\
    import re, zlib
    import numpy as np

    def embed(text):
      vector = np.zeros(64, dtype=np.float32)
      vector[0] = 2.0
      for word in re.findall(r"[a-z]+", text.lower()):
        vector[1 + zlib.crc32(word.encode()) % 63] += 1.0
      return vector
    """)


def test_a_function_is_named_by_its_module_and_name():
  identity = embedding.identity_for(plain_embedder)
  assert identity.name == "crsec_concordia.testing:bag_of_words"
  assert len(identity.fingerprint) == 12
  assert embedding.identity_for(ei.named(plain_embedder, "bow")).name == "bow"
  assert not ei.is_measured_default(identity)
  assert embedding.of(plain_embedder).recorded() == {"embedder": identity.describe()}


def test_float_noise_keeps_the_fingerprint_and_another_model_changes_it():
  rng = np.random.default_rng(0)

  def noisy(text: str) -> np.ndarray:
    return plain_embedder(text) + rng.normal(0, 1e-6, 64).astype(np.float32)

  def other(text: str) -> np.ndarray:
    return plain_embedder(text.upper().lower() + " extra words here")

  base = ei.fingerprint(plain_embedder)
  assert ei.fingerprint(noisy) == base
  assert ei.fingerprint(other) != base


def test_minilm_is_the_measured_default(embedder):
  identity = embedding.identity_for(embedder)
  assert identity == ei.MINILM, (
      f"all-MiniLM-L6-v2 now gives fingerprint {identity.fingerprint}: the "
      "model changed, and every shipped threshold was set on the old one")
  assert embedding.of(embedder).recorded() == {}


def test_a_spec_loads_from_the_current_directory(tmp_path, monkeypatch):
  (tmp_path / "my_embedding_module.py").write_text(MODULE)
  monkeypatch.chdir(tmp_path)
  loaded = user_embedder.load_embedder("my_embedding_module:embed")
  assert ei.name_of(loaded) == "my_embedding_module:embed"
  assert loaded("No smoking indoors.").shape == (64,)
  for bad, says in (("nocolon", "write it as module:function"),
                    ("no_such_module_here:embed", "no module"),
                    ("my_embedding_module:nope", "has no 'nope'"),
                    ("my_embedding_module:re", "is not callable")):
    with pytest.raises(UserError, match=says):
      user_embedder.load_embedder(bad)


@pytest.mark.parametrize("command", ["report", "run", "compare", "sweep",
                                     "calibrate"])
def test_a_bad_embedder_is_one_line_and_exit_2(command, tmp_path):
  args = {"report": [str(tmp_path)], "compare": ["hobbs_cafe_mini"],
          "sweep": [str(tmp_path / "s.yaml")]}.get(command, [])
  done = subprocess.run(
      [sys.executable, "-m", "crsec_concordia.cli", command, *args,
       "--embedder", "no_such_module_x:embed"], capture_output=True,
      text=True, cwd=tmp_path, check=False)
  assert done.returncode == 2, done.stderr
  lines = done.stderr.strip().splitlines()
  assert len(lines) == 1 and "--embedder" in lines[0], done.stderr
  assert "Traceback" not in done.stderr


def test_report_with_an_embedder_names_it_and_quotes_no_minilm_error(tmp_path):
  shutil.copytree(GOLDEN_RUN, tmp_path / "run")
  (tmp_path / "bow_embedder.py").write_text(MODULE)
  # Never the default embedder: the core install has no torch.
  script = textwrap.dedent(f"""\
      import sys
      sys.path.insert(0, {str(ROOT)!r})
      from crsec_concordia.cli import main
      code = main(["report", "run", "--embedder", "bow_embedder:embed"])
      assert "sentence_transformers" not in sys.modules
      assert "torch" not in sys.modules
      sys.exit(code)
      """)
  done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path,
                        capture_output=True, text=True, check=False)
  assert done.returncode == 0, done.stderr[-2000:]
  page = (tmp_path / "run" / "report" / "index.html").read_text()
  fingerprint = ei.fingerprint(_bow())
  assert "Sentence embedder: bow_embedder:embed" in page
  assert fingerprint in page
  assert "not calibrated for bow_embedder:embed" in page
  assert "crsec calibrate --embedder bow_embedder:embed" in page
  assert "matcher on labelled test norms" not in page
  summary = json.loads((tmp_path / "run" / "metrics" / "summary.json")
                       .read_text())
  assert summary["matcher"]["embedder"]["calibrated"] is False
  assert not any(summary["matcher"]["measured_error"].values())
  for target in summary["correction"]["targets"].values():
    assert "not calibrated for bow_embedder:embed" in (
        target["belief"]["note"])


def _bow():
  namespace: dict = {}
  exec(MODULE, namespace)  # pylint: disable=exec-used
  return namespace["embed"]


def test_load_run_with_an_embedder_gives_metrics(tmp_path):
  shutil.copytree(GOLDEN_RUN, tmp_path / "run")
  data = load_run(tmp_path / "run", embedder=plain_embedder)
  assert not data.metrics.empty


def test_a_run_given_an_embedder_records_it(tmp_path):
  model = cs.cafe_model()
  model.add_rule(r"You are the referee", lambda prompt, schema: filled(schema))
  run_dir = runner.run_episode(
      "hobbs_cafe_mini", arm="normative", seed=1, out_dir=tmp_path / "run",
      model=model, embedder=plain_embedder, steps=1,
      progress=False)
  info = json.loads((run_dir / "run.json").read_text())
  assert info["embedder"] == embedding.identity_for(plain_embedder).describe()
  assert ei.identity_of_run(info).name == "crsec_concordia.testing:bag_of_words"
  assert ei.identity_of_run({}) == ei.MINILM


def test_a_run_on_another_embedder_is_not_corrected_by_minilms_errors(
    tmp_path):
  shutil.copytree(GOLDEN_RUN, tmp_path / "run")
  info_path = tmp_path / "run" / "run.json"
  info = json.loads(info_path.read_text())
  info.update(embedding.of(plain_embedder).recorded())
  info_path.write_text(json.dumps(info))
  run = reading.read_run(tmp_path / "run")
  summary = run_metrics.compute(run, NormMatcher(
      run.targets, behaviours=run.behaviours,
      embedder=plain_embedder)).summary
  for target in summary["correction"]["targets"].values():
    assert "behaviour not corrected" in target["behaviour"]["note"]
    assert "bag_of_words" in target["behaviour"]["note"]


def test_a_run_resumes_only_with_the_embedder_it_began_with(tmp_path):
  info = embedding.of(plain_embedder).recorded()
  resume._same_embedder(info, plain_embedder)  # pylint: disable=protected-access
  with pytest.raises(UserError, match="began with the sentence embedder"):
    resume._same_embedder(info, None)  # pylint: disable=protected-access


def test_a_sweep_job_loads_its_embedder_in_the_worker(tmp_path, monkeypatch):
  (tmp_path / "worker_embedder.py").write_text(MODULE)
  elsewhere = tmp_path / "worker_cwd"
  elsewhere.mkdir()
  monkeypatch.chdir(elsewhere)  # A worker started elsewhere.
  seen = {}

  def run_episode(scenario, **kwargs):
    seen.update(kwargs)

  monkeypatch.setattr(runjob.runner, "run_episode", run_episode)
  job = runjob.RunJob(id="a", run_dir=tmp_path / "runs" / "a", scenario="s",
                      arm="normative", seed=1, steps=1, endpoint=None,
                      embedder="worker_embedder:embed",
                      embedder_dir=str(tmp_path))
  runjob._run_fresh(job)  # pylint: disable=protected-access
  assert ei.name_of(seen["embedder"]) == "worker_embedder:embed"

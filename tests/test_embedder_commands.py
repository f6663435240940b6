"""`--embedder` reaches every run of `crsec compare` and their metrics.

The runner is faked (tests/test_compare.py's known runs): what is checked
is that each run is played with the function named, loaded in the worker
from its `module:function` text, and that the comparison's metrics read
with it, not with the default (whose loading would need torch).
"""

from __future__ import annotations

import json
import threading
import types
from pathlib import Path

from crsec_concordia import cli, embedding, runner
from crsec_concordia.embedding import identity as ei
from crsec_concordia.commands import compare
from tests.test_compare import write_known_run

MODULE = ("from crsec_concordia.testing import bag_of_words\n"
          "def embed(text):\n"
          "  return bag_of_words(text)\n")


def test_compare_plays_and_reads_with_the_embedder_named(
    tmp_path, monkeypatch, capsys):
  (tmp_path / "cmp_embedder.py").write_text(MODULE)
  monkeypatch.chdir(tmp_path)
  for name in ("CRSEC_BASE_URL", "OPENAI_BASE_URL", "CRSEC_MODEL",
               "OPENAI_MODEL"):
    monkeypatch.delenv(name, raising=False)
  seen: list[str] = []
  lock = threading.Lock()

  def run_episode(scenario, *, arm, seed, out_dir, steps, embedder,
                  **kwargs):
    del scenario, kwargs
    with lock:
      seen.append(ei.name_of(embedder))
    run_dir = write_known_run(Path(out_dir), arm, seed, steps or 3)
    info_path = run_dir / "run.json"
    info = json.loads(info_path.read_text())
    info.update(embedding.of(embedder).recorded())
    info_path.write_text(json.dumps(info))
    return run_dir

  def no_default():
    raise AssertionError("the default embedder was loaded")

  monkeypatch.setattr(runner, "run_episode", run_episode)
  monkeypatch.setattr(embedding.vectors, "shared_embedder", no_default)
  monkeypatch.setattr(compare, "load_scenario",
                      lambda name: types.SimpleNamespace(
                          name="hobbs_cafe_test", source=name, models=None))
  out = tmp_path / "cmp"
  code = cli.main(["compare", "hobbs_cafe_test", "--seeds", "1", "--steps",
                   "3", "--out", str(out), "--jobs", "1", "--embedder",
                   "cmp_embedder:embed"])
  assert code == 0, capsys.readouterr().err
  assert seen == ["cmp_embedder:embed"] * 2
  assert (out / "compare_summary.json").is_file()

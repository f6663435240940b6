"""The README's composition snippet runs as written, on the test doubles.

The snippet's text is taken from README.md (the Python block of "CRSEC in
your own Concordia agents") and executed: it defines its own model and
embedder (crsec_concordia.testing), so a reader can paste it as it stands.
"""

from __future__ import annotations

import re
from pathlib import Path

from crsec_concordia import embedding
from crsec_concordia.components import CONFLICT_DETECTOR_KEY

README = Path(__file__).resolve().parents[1] / "README.md"


def snippet() -> str:
  text = README.read_text(encoding="utf-8")
  section = text.split("## CRSEC in your own Concordia agents", 1)[1]
  return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_snippet_runs_as_written_and_records_a_conflict(
    monkeypatch, capsys):
  def no_default():
    raise AssertionError("the default embedder was loaded")

  monkeypatch.setattr(embedding.vectors, "shared_embedder", no_default)
  namespace: dict = {}
  exec(compile(snippet(), str(README), "exec"), namespace)  # pylint: disable=exec-used
  carlos = namespace["carlos"]
  conflicts = [d["Value"] for d in
               carlos.measurements.get_channel(CONFLICT_DETECTOR_KEY)
               if d.get("Key") == "conflict"]
  assert [c["actor"] for c in conflicts] == ["Tom Gomez"]
  assert conflicts[0]["norm"] == "No smoking indoors."
  assert capsys.readouterr().out.strip()  # It printed Carlos's action.

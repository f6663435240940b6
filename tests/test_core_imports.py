"""The core surface imports none of the extras' heavy dependencies.

torch (via sentence-transformers), llama.cpp, Ray and pyarrow are extras
(pyproject.toml), imported late through `errors.require` where a feature
needs them. Importing the library, its components, prefabs, game masters,
scenarios, metrics and CLI must not bring any of them in: in a subprocess,
so that nothing this test session has imported counts.
"""

from __future__ import annotations

import json
import subprocess
import sys

SURFACE = ("crsec_concordia", "crsec_concordia.components",
           "crsec_concordia.prefabs", "crsec_concordia.game_masters",
           "crsec_concordia.scenarios", "crsec_concordia.metrics",
           "crsec_concordia.cli")
HEAVY = ("torch", "sentence_transformers", "transformers", "ray",
         "xllamacpp", "pyarrow")


def _imported_after(prelude: str) -> dict:
  code = (f"import json, sys\n{prelude}\n"
          "import pandas\n"
          "by_pandas = 'pyarrow' in sys.modules\n"
          f"for name in {SURFACE!r}:\n"
          "  __import__(name)\n"
          f"print(json.dumps({{'heavy': [m for m in {HEAVY!r} "
          "if sys.modules.get(m) is not None], 'by_pandas': by_pandas}))")
  done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                        text=True, check=True, timeout=300)
  return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_core_surface_imports_no_extra():
  found = _imported_after("")
  # pandas imports pyarrow itself when it is installed: not the library's.
  allowed = {"pyarrow"} if found["by_pandas"] else set()
  assert set(found["heavy"]) <= allowed, found


def test_the_core_surface_imports_without_the_extras_installed():
  # Each heavy module made unimportable, as in a core-only install: a
  # finder that says it is not there (a None in sys.modules instead would
  # break scipy, which looks torch up there to recognise its arrays).
  blocked = (
      "import importlib.abc\n"
      "class _NotInstalled(importlib.abc.MetaPathFinder):\n"
      "  def find_spec(self, name, path=None, target=None):\n"
      f"    if name.split('.')[0] in {HEAVY!r}:\n"
      "      raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
      "sys.meta_path.insert(0, _NotInstalled())")
  assert _imported_after(blocked)["heavy"] == []

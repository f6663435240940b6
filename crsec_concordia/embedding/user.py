"""A user's sentence embedder named on the command line: `module:function`.

`--embedder mymodule:embed` imports `embed` from the user's own module,
with the current directory on `sys.path` (where a user keeps a small
module beside their runs), and names it "mymodule:embed" in run.json and
the report. A sweep's workers load it again from the same text, so the
text is what travels, not the function. Loading it never imports
sentence_transformers: the default embedder is not touched.
"""

from __future__ import annotations

import importlib
import os
import sys

from crsec_concordia.embedding import identity as embedder_identity
from crsec_concordia.embedding.vectors import SentenceEmbedder
from crsec_concordia.errors import UserError

FLAG = "--embedder"
FORM = "module:function (a function from text to vector in your module)"


def load_embedder(spec: str, flag: str = FLAG, where: str | None = None
                  ) -> SentenceEmbedder:
  """The function `spec` names, known by that name; `UserError` (one line
  naming the fix) when it cannot be found or is not callable. `where`: the
  directory searched first (default the current one; a sweep's worker is
  given the driver's, as its own may be elsewhere)."""
  module_name, sep, attribute = spec.partition(":")
  if not sep or not module_name or not attribute:
    raise UserError(f"{flag} {spec!r}: write it as {FORM}, e.g. "
                    f"{flag} mymodule:embed")
  cwd = where or os.getcwd()
  if cwd not in sys.path:
    sys.path.insert(0, cwd)
  try:
    module = importlib.import_module(module_name)
  except ModuleNotFoundError as e:
    if e.name and module_name.split(".")[0] != e.name.split(".")[0]:
      raise UserError(f"{flag} {spec}: importing {module_name} needs "
                      f"{e.name}, which is not installed: install it "
                      "first") from None
    raise UserError(f"{flag} {spec}: no module {module_name!r} here; run "
                    "from the directory that holds it or install it") from None
  except Exception as e:  # The user's module failed while importing.
    raise UserError(f"{flag} {spec}: importing {module_name} failed "
                    f"({type(e).__name__}: {e}); fix the module") from None
  found = module
  for part in attribute.split("."):
    found = getattr(found, part, None)
    if found is None:
      raise UserError(f"{flag} {spec}: {module_name} has no {attribute!r}; "
                      f"name a function of it as {FORM}")
  if not callable(found):
    raise UserError(f"{flag} {spec}: {attribute} is not callable; name a "
                    f"function from text to vector as {FORM}")
  return embedder_identity.named(found, f"{module_name}:{attribute}")


def load_optional(spec: str | None, flag: str = FLAG
                  ) -> SentenceEmbedder | None:
  """`load_embedder(spec)`, or None (the default embedder) when no spec was given."""
  return None if spec is None else load_embedder(spec, flag)

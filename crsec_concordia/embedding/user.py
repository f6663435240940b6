"""A user's sentence embedder named on the command line: `module:function`.

`--embedder mymodule:embed` imports `embed` from the user's own module,
with the current directory on `sys.path` (where a user keeps a small
module beside their runs), and names it "mymodule:embed" in run.json and
the report. A sweep's workers load it again from the same text, so the
text is what travels, not the function, and every command that reads or
extends a run imports the run's again from its run.json (`used_by_run`).
Loading it never imports sentence_transformers: the default embedder is
not touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crsec_concordia import user_code
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
  found = user_code.import_named(spec, flag, FORM, where)
  return embedder_identity.named(found, spec)


def load_optional(spec: str | None, flag: str = FLAG
                  ) -> SentenceEmbedder | None:
  """`load_embedder(spec)`, or None (the default embedder) when no spec was given."""
  return None if spec is None else load_embedder(spec, flag)


def used_by_run(info: Mapping[str, Any], given: SentenceEmbedder | None = None,
           *, fix: str = f"pass {FLAG}") -> SentenceEmbedder | None:
  """The embedder to read or extend a run with: `given` (a flag's), else
  the one its run.json names (`embedder`), imported again by its
  module:function name; None when the run used the default (MiniLM).

  Raises:
    UserError: one line naming the run's embedder, when it cannot be
      imported here or no longer gives the vectors the run had (its
      fingerprint changed); `fix` says how to pass another instead.
  """
  if given is not None:
    return given
  identity = embedder_identity.EmbedderIdentity.from_dict(info.get("embedder"))
  if identity is None:
    return None
  spec = user_code.importable_spec(identity.name)
  if spec is None:
    raise UserError(f"this run used the embedder {identity.name}, named in "
                    f"Python, which nothing can import: {fix}")
  found = embedder_identity.named(
      user_code.import_again(spec, FLAG, FORM, fix), spec)
  now = embedder_identity.EmbedderIdentity(
      embedder_identity.name_of(found), embedder_identity.fingerprint(found))
  if now.fingerprint != identity.fingerprint:
    raise UserError(f"this run used {identity}, but {spec} now gives "
                    f"fingerprint {now.fingerprint}: restore the function "
                    f"the run used, or {fix} to read with this one")
  return found

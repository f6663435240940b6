"""The README's composition with a model and an embedder of the user's own.

The public test doubles (crsec_concordia.testing): a Concordia
`LanguageModel` that only samples text, as a user's model does (not the
project's ScriptedModel: the adapter states the schemas), and a plain
embedding function, hashed words plus a shared direction, so that a
behaviour is near enough to every rule for the model to judge it. Used by tests/test_library_use.py and, in a venv with
the core alone, by scripts/check_core_install.sh (so nothing here needs pytest).
"""

from __future__ import annotations

from typing import Any

from crsec_concordia.testing import SchemaModel, bag_of_words, plainest
from examples import compose_normative_agent as example


class UsersModel(SchemaModel):
  """Text in, text out: judges every behaviour it is shown a breach
  (crsec_concordia.testing's SchemaModel, Carlos's reply his own)."""

  def __init__(self):
    super().__init__([(r"Reply as Carlos Gomez", lambda prompt, schema: {
        k: "Carlos Gomez asks Tom to smoke outside."
        for k in schema["properties"]})])


plain_embedder = bag_of_words
_filled = plainest


def run() -> list[dict[str, Any]]:
  """The README's composition; the conflicts Carlos recorded."""
  return example.conflicts(example.compose(UsersModel(), plain_embedder))


if __name__ == "__main__":
  found = run()
  assert found and found[0]["actor"] == "Tom Gomez", found
  print(f"library use: a conflict recorded: {found[0]['actor']} against "
        f"{found[0]['norm']!r}")

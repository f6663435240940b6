"""A function of the user's own named on the command line: `module:function`.

`--embedder mymodule:embed` and `--model-factory mymodule:make` both name
a function in the user's module, imported with a directory (the current
one, or the driver's for a sweep's worker) first on `sys.path`, where a
user keeps a small module beside their runs. The text is what travels and
what a run records, not the function, so a worker, a resume or a report
imports it again from the same text. Every way it can fail is one line
naming the flag and the fix.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from crsec_concordia.errors import UserError


def import_named(spec: str, flag: str, form: str, where: str | None = None
                 ) -> Any:
  """The callable `spec` ("module:attribute") names.

  Args:
    spec: the text given, e.g. "mymodule:embed".
    flag: the flag it was given with, named in every error.
    form: what the flag takes, said in errors ("module:function (...)").
    where: the directory searched first (default the current one).

  Raises:
    UserError: the text is malformed, the module cannot be imported or
      fails while importing, or it has no such callable.
  """
  module_name, sep, attribute = spec.partition(":")
  if not sep or not module_name or not attribute:
    raise UserError(f"{flag} {spec!r}: write it as {form}, e.g. "
                    f"{flag} mymodule:{attribute or 'function'}")
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
                      f"name a function of it as {form}")
  if not callable(found):
    raise UserError(f"{flag} {spec}: {attribute} is not callable; name a "
                    f"function as {form}")
  return found


def importable_spec(name: Any) -> str | None:
  """`name` if it has the form module:attribute (what a flag takes), else
  None (a name given in Python, which nothing can import)."""
  if not isinstance(name, str):
    return None
  module_name, sep, attribute = name.partition(":")
  return name if sep and module_name and attribute and " " not in name else None


def import_again(spec: str, flag: str, form: str, fix: str) -> Any:
  """`import_named(spec)` for a function a run recorded (run.json), whose
  failure names the run's use of it: "this run used mymod:embed (no module
  'mymod' here); run from the folder that holds it or `fix`"."""
  try:
    return import_named(spec, flag, form)
  except UserError as e:
    why = str(e).partition(": ")[2].partition(";")[0] or str(e)
    raise UserError(f"this run used {spec} ({why}); run from the folder "
                    f"that holds it or {fix}") from None

"""CSV cells a spreadsheet shows as text, never runs as a formula.

A CSV of a run holds text the agents wrote (norms, utterances, names) and
names from the scenario file; a spreadsheet that opens it runs a cell
starting with `=`, `+`, `-` or `@` (and, in some, a tab or carriage
return) as a formula: `=HYPERLINK("http://...")` from a norm would be a
link on a rater's screen (CSV injection). Such a cell gets a leading
apostrophe, as OWASP advises; numbers stay numbers.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
  """`value`, with an apostrophe before a string starting like a formula."""
  if isinstance(value, str) and value.startswith(FORMULA_START):
    return "'" + value
  return value


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
  """A copy of `frame` whose text cells (and column names) are safe_cell'd;
  numeric columns untouched."""
  out = frame.copy()
  for column in out.columns:
    if out[column].dtype == object or pd.api.types.is_string_dtype(
        out[column].dtype):
      out[column] = out[column].map(safe_cell)
  out.columns = [safe_cell(c) for c in out.columns]
  return out

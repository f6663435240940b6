"""Table cells of the published page: a share, a mean with its interval,
and text a Markdown table can hold.

The page's sections (publish.py, publish_town.py, publish_conditions.py)
write the same kinds of cell; one definition keeps a share that was not
measured looking the same ("–") in every table of the page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd


def pct(value: Any) -> str:
  """A share as a whole percentage; "–" when it was not measured."""
  return "–" if value is None or pd.isna(value) else f"{100 * value:.0f}%"


def interval(row: Mapping[str, Any]) -> str:
  """A share's mean with its interval (`aggregate.mean_ci`'s keys), the
  interval left out where there is none (one seed)."""
  text = pct(row["mean"])
  if row["ci_low"] is not None and not pd.isna(row["ci_low"]):
    text += f" [{pct(row['ci_low'])}, {pct(row['ci_high'])}]"
  return text


def md_escape(text: Any) -> str:
  """Agent-written or scenario text in a Markdown table cell."""
  return (str(text).replace("\\", "\\\\").replace("|", "\\|")
          .replace("<", "&lt;").replace(">", "&gt;").replace("\n", " "))


def number(value: Any, digits: int = 0) -> str:
  """A count or figure with thousands separators; "–" when there is none."""
  if value is None:
    return "–"
  if isinstance(value, float):
    return f"{value:,.{digits}f}"
  if isinstance(value, int) and not isinstance(value, bool):
    return f"{value:,}"
  return str(value)

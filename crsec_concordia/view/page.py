"""One self-contained HTML page: the data as JSON, the page's script and
style inline (static/page.html, page.js, page.css; no library, no network).

The JSON sits in a `<script type="application/json">` element; every `<`,
`>` and `&` in it is written as a \\u escape, so no text of a run (an
utterance, a persona) can end the element or open another.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

from crsec_concordia.rundir.log_page import script_safe
from crsec_concordia.view import belief, extract, load

_STATIC = "static"


def _static(name: str) -> str:
  return (resources.files("crsec_concordia.view") / _STATIC / name).read_text(
      encoding="utf-8")


def as_json(data: Any) -> str:
  """`data` as JSON that no text in it can end a script element with."""
  return script_safe(json.dumps(data, ensure_ascii=False,
                                 separators=(",", ":"), allow_nan=False,
                                 default=str))


def _clean(value: Any) -> Any:
  """NaN and infinities (a metric with no value) as null: JSON has none."""
  if isinstance(value, float) and value != value or value in (
      float("inf"), float("-inf")):
    return None
  if isinstance(value, dict):
    return {k: _clean(v) for k, v in value.items()}
  if isinstance(value, list):
    return [_clean(v) for v in value]
  return value


def page_data(path: Path,
              beliefs: belief.Beliefs | None = None) -> dict[str, Any]:
  """What the page embeds for DIR: a run, or a compare or sweep's runs;
  who holds which target read by `beliefs` (default: each run's embedder,
  loaded now)."""
  kind, runs = load.read_dir(path)
  beliefs = belief.Beliefs() if beliefs is None else beliefs
  title = (f"{runs[0].run.scenario.get('name') or path.name}: "
           f"{runs[0].label}" if kind == "run"
           else f"{kind} {Path(path).name}: {len(runs)} runs")
  return {"kind": kind, "title": title,
          "runs": [_clean(extract.run_data(r, beliefs)) for r in runs]}


def page_html(data: dict[str, Any]) -> str:
  """The page for `page_data`'s dict."""
  page = _static("page.html")
  # The data last: nothing in it is read as one of the other markers.
  for marker, text in (("__TITLE__", html.escape(data["title"])),
                       ("__CSS__", _static("page.css")),
                       ("__JS__", _static("page.js")),
                       ("__DATA__", as_json(data))):
    page = page.replace(marker, text, 1)
  return page


def write(path: Path, out: Path,
          beliefs: belief.Beliefs | None = None) -> Path:
  """Writes DIR's page to `out`; returns it."""
  text = page_html(page_data(path, beliefs))
  out.parent.mkdir(parents=True, exist_ok=True)
  out.write_text(text, encoding="utf-8")
  return out

"""log.html: Concordia's page of a run's log, with logged text shown as text.

Concordia's `SimulationLog.to_html()` writes the log's JSON straight into a
`<script>` block, so an utterance, persona or model answer holding
`</script><script>...` ends the block and runs as markup; its tab buttons
put an agent's name into an `onclick` string, which an apostrophe breaks;
and its script turns any `![...](data:image/...)` in the text into an
`<img>` whose attributes come from that text. A run's text is written by
models and by whoever wrote the scenario, so the page is Concordia's
render with those three repaired here: every JSON value re-encoded with
`<`, `>`, `&`, U+2028 and U+2029 as \\u escapes (the same values, read by
the same script), each tab naming its section in a `data-tab` attribute,
and no markdown image rendered (a run logs no images). A render this
module cannot repair (another Concordia's page) is not written, with a
warning: log.json holds the same log.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crsec_concordia.rundir.format import LOG_HTML, temporary

_log = logging.getLogger(__name__)

# The constants Concordia's page declares, in their order, each a JSON value.
_DATA = ("CONTENT_STORE", "ENTRIES", "ENTITY_MEMORIES", "GM_MEMORIES")
_TAB = re.compile(r"""onclick="openTab\(event, '([^'"<>]*)'\)\"""")
_SAFE_TAB = r'data-tab="\1" onclick="openTab(event, this.dataset.tab)"'
_IMAGES = "function renderImageMarkdown(text) {\n"
_NO_IMAGES = _IMAGES + "  return text;  // Text stays text.\n"


def script_json(value: Any) -> str:
  """`value` as JSON that no text inside can end a `<script>` block with
  (nor be read as markup or a line break by an older parser)."""
  return script_safe(json.dumps(value, ensure_ascii=False))


def script_safe(text: str) -> str:
  """JSON text with `<`, `>`, `&` and the two JavaScript line separators
  written as \\u escapes: the same value, and nothing a page can read as
  markup or as the end of its `<script>` block."""
  return (text.replace("<", "\\u003c").replace(">", "\\u003e")
          .replace("&", "\\u0026").replace("\u2028", "\\u2028")
          .replace("\u2029", "\\u2029"))


def repaired(page: str) -> str:
  """Concordia's rendered log page with its data, tabs and images made safe
  (see the module's docstring); ValueError if it is not the page known."""
  start = page.find("<script>")
  if start < 0 or page.count(_IMAGES) != 1:
    raise ValueError("not Concordia 2.4's log page")
  decoder = json.JSONDecoder()
  parts, pos = [_TAB.sub(_SAFE_TAB, page[:start])], start
  for name in _DATA:
    marker = f"const {name} = "
    at = page.find(marker, pos)
    if at < 0:
      raise ValueError(f"Concordia's log page declares no {name}")
    at += len(marker)
    value, end = decoder.raw_decode(page, at)
    parts += [page[pos:at], script_json(value)]
    pos = end
  parts.append(page[pos:].replace(_IMAGES, _NO_IMAGES, 1))
  return "".join(parts)


def log_html(log: Any, title: str = "Simulation Log") -> str:
  """The page of a Concordia `SimulationLog` (what `log.to_html(title)`
  renders), safe to open whatever text the run logged."""
  return repaired(log.to_html(title=title))


def write(run_dir: Path, log: Any, scenario: str,
          info: Mapping[str, Any]) -> None:
  """Writes RUN_DIR/log.html, titled with the scenario, arm and seed (run.json's
  `info`), whole through a temporary file like the run's JSON files."""
  try:
    text = log_html(log, title=f"{scenario} ({info.get('arm')}, seed "
                    f"{info.get('seed')})")
  except ValueError as e:
    # Another Concordia's page: better none than an unsafe one (log.json
    # holds the same log).
    _log.warning("log.html not written: %s; log.json holds the log", e)
    return
  path = Path(run_dir) / LOG_HTML
  tmp = path.with_name(temporary(path.name))
  tmp.write_text(text, encoding="utf-8")
  os.replace(tmp, path)

"""The Jinja2 templates the HTML pages are rendered from.

Every page (the run, compare and sweep reports, the questionnaire) is a
template under metrics/templates/, filled with plain data by the Python
that computed it. Why templates and not f-strings: the pages show text the
agents wrote (names, norms, utterances) and the scenario's author chose, and
with autoescaping every value is escaped unless a template says otherwise,
so one forgotten `html.escape` cannot turn an agent's words into markup.
StrictUndefined makes a misspelt or missing variable an error when the page
is written, never an empty cell nobody notices.

Cells of the shared table macro (_macros.html.j2) are plain text or one of
the small dataclasses below, which say what the cell is (a link, a mean
with its n, lines), never how it is drawn.
"""

from __future__ import annotations

import base64
import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2
from matplotlib.figure import Figure as Drawing

from crsec_concordia.metrics.present import figures

ENVIRONMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("crsec_concordia.metrics", "templates"),
    # Every template is HTML; a string template would be too.
    autoescape=jinja2.select_autoescape(("html", "j2"), default=True,
                                        default_for_string=True),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True, lstrip_blocks=True)


@dataclasses.dataclass(frozen=True)
class Link:
  """A file beside the page; `href` is None when it was not written."""
  text: str
  href: str | None = None


@dataclasses.dataclass(frozen=True)
class Stats:
  """A mean (with its interval) in text, and how many runs it is over."""
  text: str
  n: Any = None


@dataclasses.dataclass(frozen=True)
class Strong:
  """A cell that stands out, such as a total."""
  text: str


@dataclasses.dataclass(frozen=True)
class Lines:
  """A cell of several lines, one per item."""
  items: Sequence[str]


@dataclasses.dataclass(frozen=True)
class Figure:
  """A PNG embedded in the page, so the page stands alone."""
  caption: str
  png_base64: str


# A table cell: text, or one of the above that says what it is.
Cell = str | Link | Stats | Strong | Lines

ENVIRONMENT.tests.update(
    link=lambda v: isinstance(v, Link), stats=lambda v: isinstance(v, Stats),
    strong=lambda v: isinstance(v, Strong),
    lines=lambda v: isinstance(v, Lines))


def render(template: str, **context: Any) -> str:
  """The named template (under metrics/templates/) filled with `context`."""
  return ENVIRONMENT.get_template(template).render(**context)


class Page:
  """One report page in `out`: its figures are saved under out/figures/ as
  well as embedded (as PNG), its links are relative to `out`. `formats`:
  the files each figure is also saved as ("svg", "pdf"), for print."""

  def __init__(self, out: Path, formats: Sequence[str] = ()):
    unknown = set(formats) - set(figures.FORMATS)
    if unknown:
      raise ValueError(f"figure formats {sorted(unknown)}: not one of "
                       f"{', '.join(figures.FORMATS)}")
    self.out = out
    self.formats = [f for f in formats if f != "png"]
    self.figures: list[Path] = []
    (out / "figures").mkdir(parents=True, exist_ok=True)

  def figure(self, name: str, drawing: Drawing | bytes | None,
             caption: str) -> Figure | None:
    """Saves figures/NAME.png (and NAME.svg, NAME.pdf as asked); None (no
    figure) when there is no drawing. A drawing given as PNG bytes is
    saved as it is."""
    if drawing is None:
      return None
    stem = self.out / "figures" / name
    data = (drawing if isinstance(drawing, bytes)
            else figures.png(drawing))
    path = stem.with_name(f"{name}.png")
    path.write_bytes(data)
    self.figures.append(path)
    if not isinstance(drawing, bytes):
      self.figures.extend(figures.save(drawing, stem, self.formats))
    return Figure(caption, base64.b64encode(data).decode("ascii"))

  def link(self, target: Path, text: str) -> Link:
    if not target.exists():
      return Link(text)
    return Link(text, os.path.relpath(target, self.out))

  def write(self, template: str, **context: Any) -> Path:
    """Renders the template into out/index.html."""
    index = self.out / "index.html"
    index.write_text(render(template, **context), encoding="utf-8")
    return index

"""Debian's Chromium driven by Playwright, for the page's tests, its bench
and its screenshots.

Playwright cannot download its own browser here: it launches the system
Chromium (`CHROMIUM`, else /usr/bin/chromium; scripts/setup.sh installs it
with apt) headless, with a fresh profile and nothing that reaches the
network. Missing, it is an error that names the fix, never a skip: the
machines that run the suite must have it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
FIX = ("install it with `apt-get install -y chromium` (scripts/setup.sh does "
       "when it is missing) or set CHROMIUM to a Chromium binary")


def chromium_path() -> str:
  found = shutil.which(CHROMIUM) or (CHROMIUM if Path(CHROMIUM).is_file()
                                     else None)
  if not found:
    raise RuntimeError(f"Chromium is missing ({CHROMIUM}): {FIX}")
  return found


@contextlib.contextmanager
def browser(extra_args: list[str] | None = None) -> Iterator:
  """A headless Chromium (a Playwright BrowserContext) with a fresh
  profile; `extra_args` are added to its command line."""
  try:
    from playwright.sync_api import sync_playwright  # pylint: disable=import-outside-toplevel
  except ModuleNotFoundError as e:
    raise RuntimeError("playwright is missing: pip install -e '.[test]' "
                       "(make setup)") from e
  path = chromium_path()
  with tempfile.TemporaryDirectory(prefix="crsec-chromium-") as profile:
    with sync_playwright() as p:
      context = p.chromium.launch_persistent_context(
          profile, executable_path=path, args=ARGS + list(extra_args or ()),
          headless=True,
          viewport={"width": 1400, "height": 1000})
      try:
        yield context
      finally:
        context.close()


def open_page(context, page_file: Path, errors: list[str] | None = None):
  """`page_file` opened in a new tab; console errors and page errors are
  appended to `errors`."""
  tab = context.new_page()
  if errors is not None:
    tab.on("console", lambda m: errors.append(m.text)
           if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
  tab.goto(Path(page_file).resolve().as_uri())
  tab.wait_for_selector("#places .place")
  return tab

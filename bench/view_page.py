"""How big and how fast the page of `crsec view` is, for towns of 41 and
1,000 agents, in headless Chromium.

The towns are bench/town_society.py's (places of ten, held norms broken
in every place), played on the fake endpoint by `society_scaling.py
--town --sizes 41 1000 --keep DIR` (three slots; minutes) unless run
directories are given. For each run it writes the page (`crsec view`) and
prints: the time to write it, its size, and in Chromium (Playwright, the
system browser: tests/view_browser.py) the median over `--repeat` loads of
the time from navigation to the first drawing of the places, the time to
scrub to the last slot and to open an agent's panel (both measured in the
page, around the synchronous redraw), the page's DOM element count and its
JavaScript heap. Not a timed test: figures for docs/trials/viewer.md.

  .venv/bin/python bench/view_page.py                      # plays both towns
  .venv/bin/python bench/view_page.py --keep /tmp/towns    # and keeps them
  .venv/bin/python bench/view_page.py RUN_DIR [RUN_DIR...] # pages of these
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crsec_concordia.view import page  # pylint: disable=wrong-import-position
from tests.view_browser import browser  # pylint: disable=wrong-import-position

SIZES = (41, 1000)
_SCRUB = """() => {
  const el = document.getElementById("scrub");
  const t = performance.now();
  el.value = el.max; el.dispatchEvent(new Event("input"));
  return performance.now() - t;
}"""
_AGENT = """() => {
  let t = performance.now();
  let mark = document.querySelector("#places .mark");
  if (!mark) {  // A big town: a place's agents are shown on demand.
    document.querySelector("#places .place .more").click();
    mark = document.querySelector("#places .mark");
  }
  if (!mark) return null;
  t = performance.now();
  mark.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  return performance.now() - t;
}"""
_STATE = """() => ({nodes: document.getElementsByTagName("*").length,
  heap: performance.memory ? performance.memory.usedJSHeapSize : null})"""


def play_towns(out: Path) -> list[Path]:
  """The two towns, played by the scaling bench into `out`."""
  subprocess.run([sys.executable, str(Path(__file__).with_name(
      "society_scaling.py")), "--town", "--sizes", *map(str, SIZES),
                  "--keep", str(out)], check=True)
  return [out / f"town_{n}" for n in SIZES]


def measure(context, page_file: Path, repeat: int) -> dict[str, float]:
  loads, scrubs, clicks = [], [], []
  state = {}
  for _ in range(repeat):
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    start = time.monotonic()
    tab.goto(page_file.resolve().as_uri())
    tab.wait_for_selector("#places .place")
    loads.append(time.monotonic() - start)
    scrubs.append(tab.evaluate(_SCRUB))
    clicks.append(tab.evaluate(_AGENT) or float("nan"))
    state = tab.evaluate(_STATE)
    if errors:
      raise RuntimeError(f"{page_file}: {errors[0]}")
    tab.close()
  return {"load_s": statistics.median(loads),
          "scrub_ms": statistics.median(scrubs),
          "agent_ms": statistics.median(clicks), **state}


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("runs", nargs="*", type=Path, metavar="RUN_DIR")
  parser.add_argument("--keep", type=Path, metavar="DIR",
                      help="play the towns into DIR and keep them")
  parser.add_argument("--repeat", type=int, default=3)
  args = parser.parse_args()
  with contextlib.ExitStack() as stack:
    runs = list(args.runs)
    if not runs:
      out = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory()))
      runs = play_towns(out)
    pages = stack.enter_context(tempfile.TemporaryDirectory())
    context = stack.enter_context(browser(["--enable-precise-memory-info"]))
    print(f"{'run':<28} {'agents':>6} {'slots':>5} {'write s':>8} "
          f"{'page MB':>8} {'load s':>7} {'scrub ms':>9} {'agent ms':>9} "
          f"{'DOM':>6} {'heap MB':>8}")
    for run_dir in runs:
      began = time.monotonic()
      data = page.page_data(run_dir)
      out = Path(pages) / f"{run_dir.name}.html"
      out.write_text(page.page_html(data), encoding="utf-8")
      written = time.monotonic() - began
      [run] = data["runs"]
      m = measure(context, out, args.repeat)
      heap = m["heap"] / 2**20 if m.get("heap") else float("nan")
      print(f"{run_dir.name:<28} {len(run['agents']):>6} "
            f"{len(run['steps']):>5} {written:>8.2f} "
            f"{out.stat().st_size / 2**20:>8.2f} {m['load_s']:>7.2f} "
            f"{m['scrub_ms']:>9.1f} {m['agent_ms']:>9.1f} {m['nodes']:>6} "
            f"{heap:>8.1f}", flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())

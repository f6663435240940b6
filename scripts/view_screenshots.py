"""The screenshots of `crsec view` in docs/view/, made again.

  .venv/bin/python scripts/view_screenshots.py --demo RUN_DIR
  .venv/bin/python scripts/view_screenshots.py          # plays the demo too

The demo's run (`crsec run` with its defaults: the mini café on the
embedded model, 4-7 minutes; given with --demo, or played into a
temporary directory) is reported (`crsec report`) and shown at its first,
middle and last slot. Two scripted runs show places: the two-room club of
tests/view_runs.py (a norm passed by talk from one room to the other; the
scripted model and the real embedder) and a 41-agent town in five halls
(bench/town_society.py on the fake endpoint). Chromium is the system's,
driven by Playwright (tests/view_browser.py).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crsec_concordia.embedding import shared_embedder  # pylint: disable=wrong-import-position
from crsec_concordia.view import page  # pylint: disable=wrong-import-position
from tests import view_runs  # pylint: disable=wrong-import-position
from tests.view_browser import browser, open_page  # pylint: disable=wrong-import-position

OUT = ROOT / "docs" / "view"
CRSEC = [sys.executable, "-m", "crsec_concordia.cli"]


def crsec(*args: str) -> None:
  subprocess.run([*CRSEC, *map(str, args)], check=True)


def slot_to(tab, index: int) -> None:
  tab.eval_on_selector("#scrub", "(el, v) => { el.value = v; "
                       "el.dispatchEvent(new Event('input')); }", index)


def shoot(tab, name: str) -> None:
  tab.wait_for_timeout(200)
  tab.screenshot(path=str(OUT / name), full_page=True)
  print(f"view_screenshots: {OUT / name}")


def demo(context, run_dir: Path, work: Path) -> None:
  crsec("report", run_dir)
  html = page.write(run_dir, work / "demo.html")
  tab = open_page(context, html)
  last = int(tab.get_attribute("#scrub", "max"))
  for index in (0, last // 2, last):
    slot_to(tab, index)
    shoot(tab, f"demo_slot_{index + 1}.png")
  tab.close()


def two_rooms(context, work: Path) -> None:
  run_dir = view_runs.two_rooms(work / "two_rooms", shared_embedder())
  crsec("report", run_dir)
  tab = open_page(context, page.write(run_dir, work / "two_rooms.html"))
  slot_to(tab, 4)
  shoot(tab, "two_rooms.png")
  tab.click('#places .mark[data-agent="Carlos Gomez"]')
  shoot(tab, "two_rooms_agent.png")
  tab.close()


def town(context, work: Path) -> None:
  subprocess.run([sys.executable, str(ROOT / "bench" / "society_scaling.py"),
                  "--town", "--sizes", "41", "--keep", str(work)], check=True)
  tab = open_page(context, page.write(work / "town_41", work / "town.html"))
  slot_to(tab, 2)
  shoot(tab, "town_41.png")
  tab.close()


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--demo", type=Path, metavar="RUN_DIR",
                      help="the demo's run directory (default: play it)")
  parser.add_argument("--skip-demo", action="store_true",
                      help="only the scripted runs' screenshots")
  args = parser.parse_args()
  OUT.mkdir(parents=True, exist_ok=True)
  with tempfile.TemporaryDirectory() as tmp, browser() as context:
    work = Path(tmp)
    if not args.skip_demo:
      run_dir = args.demo
      if run_dir is None:
        run_dir = work / "demo"
        crsec("run", "--out", run_dir)
      demo(context, run_dir, work)
    two_rooms(context, work)
    town(context, work)
  return 0


if __name__ == "__main__":
  sys.exit(main())

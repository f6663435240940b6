"""Every page a run and its report write shows logged text as text.

A scripted run of two rooms whose agents' names hold apostrophes and an
ampersand, whose persona and norms hold markup, and whose model answers
hold `</script><script>...`, `<img src=x onerror=...>` and a markdown
image whose attributes would run script: its log.html (Concordia's page,
repaired by crsec_concordia/rundir/log_page.py), the report, the
human-evaluation kit and the view page are opened in Chromium
(tests/view_browser.py), and none holds an element or a script the text
put there; Concordia's own render of the same log does (so the check
sees an injection when there is one). A name with a control character,
NUL or an angle bracket is refused by the loader with one line, exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsec_concordia import cli, runner
from crsec_concordia.metrics.present import report
from crsec_concordia.rundir import log_page
from crsec_concordia.scenarios import parse_scenario
from crsec_concordia.view import page
from tests import test_places_run as rooms
from tests.view_browser import browser

MEI, TOM = "Mei O'Lin", "Tom & 'Jo' Gomez"
# Each sets a mark the page is searched for when it runs.
SCRIPT = "</script><script>window.__pwned='script';</script>"
IMG = "<img src=x id=injected onerror=\"window.__pwned='img'\">"
MARKDOWN = ("![x](data:image/png;base64,AA\" id=\"injected\" "
            "onerror=\"window.__pwned='markdown')")
TARGETS = """target_norms:
  - {id: no_smoking_indoors, text: No smoking indoors., type: injunctive,
     violates: [smoking_indoors]}
"""
# What the page is searched for: an element or a mark the text put there.
INJECTED = ("() => ({pwned: window.__pwned || null, elements: "
            "document.querySelectorAll('#injected, img[onerror], "
            "[data-pwned]').length})")


def scenario_text() -> str:
  return (rooms.ROOMS.replace(rooms.MEI, MEI).replace(rooms.TOM, TOM)
          .replace("A student.", json.dumps(f"A student. {SCRIPT}"))
          .replace("content: No smoking indoors.",
                   f"content: {json.dumps('No smoking indoors. ' + IMG)}")
          + TARGETS)


def hostile_model():
  def deed(name: str, clock: str, _prompt: str) -> str:
    if name == MEI:
      return ("Mei lights a cigarette in her armchair." if clock == "09:00"
              else f"Mei pins up a drawing: {IMG} {MARKDOWN}")
    return {rooms.ABIGAIL: f"Abigail reads a note aloud: {SCRIPT}",
            rooms.CARLOS: "Carlos lights a cigarette at the card table.",
            TOM: f"Tom writes on the board: {SCRIPT}"}[name]
  return rooms.acting_model(deed)


@pytest.fixture(scope="module")
def pages(tmp_path_factory, embedder) -> tuple[Path, list[Path]]:
  """The hostile run, its report and its view page; every HTML file."""
  run_dir = runner.run_episode(
      parse_scenario(scenario_text(), "hostile.yaml"), arm="normative",
      seed=1, out_dir=tmp_path_factory.mktemp("hostile") / "run",
      model=hostile_model(), embedder=embedder, progress=False)
  report.run_report(run_dir)
  page.write(run_dir, run_dir / "view.html")
  return run_dir, sorted(run_dir.rglob("*.html"))


@pytest.fixture(scope="module")
def chromium():
  with browser() as context:
    yield context


def opened(context, path: Path, errors: list[str]):
  tab = context.new_page()
  tab.on("pageerror", lambda e: errors.append(str(e)))
  tab.goto(path.resolve().as_uri(), wait_until="load", timeout=30_000)
  tab.wait_for_timeout(200)  # An image's onerror fires after load.
  return tab


def test_the_run_logged_the_hostile_text(pages):
  run_dir, found = pages
  text = (run_dir / "events.jsonl").read_text(encoding="utf-8")
  assert SCRIPT in json.loads(json.dumps(text))
  names = {p.relative_to(run_dir).as_posix() for p in found}
  assert {"log.html", "view.html", "report/index.html",
          "report/questionnaire/index.html"} <= names
  assert len(names) >= 4 + 4  # A questionnaire page per agent too.


def test_no_page_holds_an_element_or_script_the_text_put_there(
    pages, chromium):
  run_dir, found = pages
  for path in found:
    errors: list[str] = []
    tab = opened(chromium, path, errors)
    if path.name == "log.html":
      # Every entry and memory tab drawn, every section open.
      for button in tab.query_selector_all(".tablinks"):
        button.click()
      tab.eval_on_selector_all("details", "ds => ds.forEach(d => d.open = true)")
      tab.wait_for_timeout(200)
    assert tab.evaluate(INJECTED) == {"pwned": None, "elements": 0}, path
    assert errors == [], (path, errors)
    tab.close()


def test_the_log_page_shows_the_text_and_its_tabs_work(pages, chromium):
  run_dir, _ = pages
  errors: list[str] = []
  tab = opened(chromium, run_dir / "log.html", errors)
  assert tab.eval_on_selector_all("#gm_log details", "ds => ds.length") > 10
  text = tab.evaluate("() => document.body.textContent")
  assert SCRIPT in text and IMG in text and MARKDOWN in text
  # A tab named with an apostrophe and an ampersand opens its section.
  for name in (MEI, TOM):
    tab.click(f".tablinks[data-tab=\"{name.replace(' ', '_')}\"]")
    shown = tab.evaluate("n => document.getElementById(n).classList"
                         ".contains('active')", name.replace(" ", "_"))
    assert shown, name
  assert errors == []
  tab.close()


def test_concordias_own_render_of_the_log_is_injected(pages, chromium,
                                                      tmp_path):
  """The check sees an injection where there is one: the same log through
  Concordia's `to_html` runs the text's script."""
  run_dir, _ = pages
  from concordia.utils import structured_logging  # pylint: disable=import-outside-toplevel
  log = structured_logging.SimulationLog.from_json(
      (run_dir / "log.json").read_text(encoding="utf-8"))
  raw = tmp_path / "raw.html"
  raw.write_text(log.to_html(), encoding="utf-8")
  tab = opened(chromium, raw, [])
  assert tab.evaluate(INJECTED)["pwned"] is not None
  tab.close()
  safe = tmp_path / "safe.html"
  safe.write_text(log_page.log_html(log), encoding="utf-8")
  tab = opened(chromium, safe, [])
  assert tab.evaluate(INJECTED) == {"pwned": None, "elements": 0}
  tab.close()


def test_repaired_json_holds_the_same_values():
  page_text = ("<h1>t</h1><script>\nconst CONTENT_STORE = "
               + json.dumps({"a": SCRIPT + "\u2028&"}) + ";\nconst ENTRIES = "
               + json.dumps([{"s": IMG}]) + ";\nconst ENTITY_MEMORIES = {};\n"
               "const GM_MEMORIES = [];\nfunction renderImageMarkdown(text) {\n"
               "  return x;\n}\n</script>")
  fixed = log_page.repaired(page_text)
  body = fixed[fixed.index("<script>") + 8:fixed.rindex("</script>")]
  assert "<" not in body and ">" not in body and "\u2028" not in body
  start = fixed.index("CONTENT_STORE = ") + len("CONTENT_STORE = ")
  value, _ = json.JSONDecoder().raw_decode(fixed, start)
  assert value == {"a": SCRIPT + "\u2028&"}
  with pytest.raises(ValueError):
    log_page.repaired("<html>another page</html>")


@pytest.mark.parametrize("name,found", [
    ("Ann\\0Lee", "U+0000"), ("Ann\\x1bLee", "U+001B"),
    ("Ann\\u202eLee", "U+202E"), ("Ann <b>Lee</b>", "angle bracket <"),
    ("Ann>Lee", "angle bracket >"), ("Ann\\u2028Lee", "U+2028")])
def test_a_name_with_a_control_character_or_markup_is_one_line_exit_2(
    tmp_path, capsys, name, found):
  text = rooms.ROOMS.replace(f"name: {rooms.ABIGAIL}", f'name: "{name}"')
  path = tmp_path / "bad.yaml"
  path.write_text(text, encoding="utf-8")
  out = tmp_path / "run"
  assert cli.main(["run", str(path), "--out", str(out), "--no-progress"]) == 2
  err = capsys.readouterr().err
  [line] = [l for l in err.splitlines() if l.strip()]
  assert "agents[0].name" in line and found in line and "Traceback" not in err
  assert "\0" not in err and "\x1b" not in err and "\u202e" not in err
  assert not out.exists()


def test_a_page_it_cannot_repair_is_not_written(tmp_path, caplog):
  class Log:
    def to_html(self, title):
      return f"<html><script>{title}</script></html>"
  log_page.write(tmp_path, Log(), "cafe", {"arm": "normative", "seed": 1})
  assert not (tmp_path / "log.html").exists()
  assert "log.html not written" in caplog.text

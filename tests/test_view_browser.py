"""The page of `crsec view` in a real browser (Debian's Chromium, driven by
Playwright: tests/view_browser.py).

On the golden run and on a scripted two-room run where "No smoking
indoors." passes by talk from Abigail to Mei and, after Mei walks to the
games room, from Mei to Carlos (tests/view_runs.py): the page loads with
no console error, the scrubber moves the agents, clicking an agent shows
its norms, and the diffusion graph has exactly the edges events.jsonl
says. On the golden replay while it plays, `crsec view --serve` follows
it: slots appear without a reload, and the entrepreneur holds its target
from the slot it created it in. Chromium missing is a failure naming the
fix, not a skip.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from crsec_concordia.view import page
from tests import golden_replay, view_runs
from tests.view_browser import browser, open_page

GOLDEN = Path(__file__).parent / "golden" / "mini_cafe" / "expected"
MEI, CARLOS = "Mei Lin", "Carlos Gomez"
ABIGAIL = "Abigail Chen"


@pytest.fixture(scope="module")
def chromium():
  with browser() as context:
    yield context


@pytest.fixture(scope="module")
def rooms(tmp_path_factory, embedder):
  run_dir = view_runs.two_rooms(tmp_path_factory.mktemp("view") / "rooms",
                                embedder)
  return run_dir, page.write(run_dir, run_dir / "view.html")


def slot_to(tab, step: int) -> None:
  """The scrubber moved to `step` (its value is the slot's index)."""
  tab.eval_on_selector("#scrub", "(el, v) => { el.value = v; "
                       "el.dispatchEvent(new Event('input')); }", step - 1)
  tab.wait_for_function("s => document.body.dataset.slot == s", arg=step)


def place_of(tab, agent: str) -> str:
  return tab.get_attribute(f'#places .mark[data-agent="{agent}"]',
                           "data-place")


@pytest.mark.parametrize("which", ["golden", "rooms"])
def test_the_page_loads_with_no_console_error(chromium, rooms, tmp_path,
                                              which):
  out = (page.write(GOLDEN, tmp_path / "golden.html") if which == "golden"
         else rooms[1])
  errors: list[str] = []
  tab = open_page(chromium, out, errors)
  for step in (2, 3, 1):
    slot_to(tab, step)
  tab.click("#play")
  tab.wait_for_timeout(300)
  tab.click("#pause")
  tab.click("#places .mark >> nth=0")
  tab.wait_for_selector("#agent:not([hidden])")
  assert errors == []
  tab.close()


def test_the_scrubber_moves_the_agents(chromium, rooms):
  tab = open_page(chromium, rooms[1])
  slot_to(tab, 1)
  assert place_of(tab, MEI) == "reading_room"
  assert place_of(tab, CARLOS) == "games_room"
  slot_to(tab, 3)  # Mei walked over in slot 3.
  assert place_of(tab, MEI) == "games_room"
  assert "moved" in tab.get_attribute(f'.mark[data-agent="{MEI}"]', "class")
  tab.click("#back")
  tab.wait_for_function("() => document.body.dataset.slot == 2")
  assert place_of(tab, MEI) == "reading_room"
  tab.close()


def test_clicking_an_agent_shows_its_norms(chromium, rooms):
  tab = open_page(chromium, rooms[1])
  slot_to(tab, 6)
  assert tab.get_attribute(f'.mark[data-agent="{CARLOS}"]', "data-hold") == "1"
  tab.click(f'#places .mark[data-agent="{CARLOS}"]')
  panel = tab.wait_for_selector(f'#agent[data-agent="{CARLOS}"]')
  text = panel.inner_text()
  assert "Smoking is not allowed inside the cafe." in text
  assert f"talk with {MEI}" in text and "qualified" in text
  # Before the talk with Mei, Carlos held nothing.
  slot_to(tab, 2)
  assert "not yet" in tab.inner_text("#agent .norms")
  tab.close()


def test_the_diffusion_graph_has_exactly_the_edges_of_the_records(
    chromium, rooms):
  run_dir, out = rooms
  expected = view_runs.passed_edges(run_dir)
  assert (MEI, CARLOS, "talk", 5) in expected  # Across places, by talk.
  tab = open_page(chromium, out)
  tab.select_option(".target .graph-filter", "all")
  shown = tab.eval_on_selector_all(
      ".target .graph path.edge",
      "els => els.map(e => [e.dataset.source, e.dataset.receiver, "
      "e.dataset.origin, +e.dataset.step])")
  assert sorted(map(tuple, shown)) == expected
  tab.close()


def test_interventions_and_failures_are_marked_under_the_scrubber(
    chromium, tmp_path):
  out = tmp_path / "run"
  out.mkdir()
  for f in ("run.json", "scenario.json", "usage.json"):
    (out / f).write_bytes((GOLDEN / f).read_bytes())
  lines = (GOLDEN / "events.jsonl").read_text(encoding="utf-8")
  # A tick per slot with a failure: the golden run's own, and one more in
  # a slot that had none.
  failed = {json.loads(line)["step"] for line in lines.splitlines()
            if json.loads(line)["kind"] == "failure"}
  more = min(set(range(1, 6)) - failed)
  (out / "events.jsonl").write_text(
      lines + '{"kind": "intervention", "step": 3, "what": "a sign goes up"}\n'
      + f'{{"kind": "failure", "step": {more}, "op": "Reflect", '
      '"error": "bad"}\n', encoding="utf-8")
  errors: list[str] = []
  tab = open_page(chromium, page.write(out, out / "view.html"), errors)
  assert tab.locator("#marks .tick-intervention").count() == 1
  assert tab.locator("#marks .tick-failure").count() == len(failed) + 1
  slot_to(tab, 3)
  assert "a sign goes up" in tab.inner_text("#slot")
  assert errors == []
  tab.close()


def test_agents_not_yet_arrived_or_gone_are_drawn_away(chromium, tmp_path):
  """The golden run, as if Tom Gomez arrived at slot 3 and Carlos Gomez
  left at slot 4: each is in the greyed away panel, not in the venue."""
  out = tmp_path / "run"
  out.mkdir()
  for f in ("run.json", "usage.json"):
    (out / f).write_bytes((GOLDEN / f).read_bytes())
  scenario = json.loads((GOLDEN / "scenario.json").read_text("utf-8"))
  scenario["interventions"] = [
      {"kind": "arrive", "at": 3, "agents": ["Tom Gomez"]},
      {"kind": "leave", "at": 4, "agents": [CARLOS]}]
  (out / "scenario.json").write_text(json.dumps(scenario), "utf-8")
  (out / "events.jsonl").write_text(
      (GOLDEN / "events.jsonl").read_text(encoding="utf-8")
      + "".join(json.dumps({"kind": "intervention", "step": step,
                            "intervention": kind, "agents": [who]}) + "\n"
                for step, kind, who in ((3, "arrive", "Tom Gomez"),
                                        (4, "leave", CARLOS))),
      encoding="utf-8")
  errors: list[str] = []
  tab = open_page(chromium, page.write(out, out / "view.html"), errors)

  def away(agent: str) -> str | None:
    found = tab.query_selector(f'#places .away .mark[data-agent="{agent}"]')
    return None if found is None else found.get_attribute("data-away")

  def placed(agent: str) -> bool:
    return tab.query_selector(
        f'#places .mark[data-agent="{agent}"][data-place]') is not None

  slot_to(tab, 2)
  assert away("Tom Gomez") == "not yet arrived" and not placed("Tom Gomez")
  assert placed(CARLOS) and away(CARLOS) is None
  slot_to(tab, 4)
  assert away(CARLOS) == "left" and not placed(CARLOS)
  assert placed("Tom Gomez") and away("Tom Gomez") is None
  tab.click(f'#places .away .mark[data-agent="{CARLOS}"]')
  assert "away (left)" in tab.inner_text("#agent")
  assert errors == []
  tab.close()



def _url_of(server: subprocess.Popen, timeout: float) -> str:
  """The URL `crsec view --serve` prints once it serves."""
  lines: queue.Queue = queue.Queue()
  threading.Thread(target=lambda: lines.put(server.stdout.readline()),
                   daemon=True).start()
  try:
    line = lines.get(timeout=timeout)
  except queue.Empty:
    raise AssertionError("crsec view --serve printed no URL") from None
  assert line.startswith("http://127.0.0.1:"), line
  return line.split()[0]


def test_the_served_page_follows_a_run_in_progress(chromium, tmp_path):
  """The golden replay held after slot 1: the page shows what landed, the
  entrepreneur holding "People should not smoke indoors." from slot 1
  (the matcher's reading: no report exists); let go, the other slots
  appear one by one in the same page (each let go once the page shows the
  one before), and at the end she holds it at every slot."""
  shutil.copyfile(golden_replay.GOLDEN / golden_replay.CACHE,
                  tmp_path / golden_replay.CACHE)
  cache = golden_replay.ResponseCache(tmp_path / golden_replay.CACHE)
  run_dir = tmp_path / "run"
  model = view_runs.Paced(cache, run_dir)
  played = threading.Thread(
      target=golden_replay.replay, args=(run_dir, model), daemon=True)
  played.start()
  deadline = time.monotonic() + 300
  while not (run_dir / "run.json").is_file():
    assert time.monotonic() < deadline and played.is_alive()
    time.sleep(0.1)
  with open(tmp_path / "view.err", "w", encoding="utf-8") as err:
    server = subprocess.Popen(
        [sys.executable, "-m", "crsec_concordia.cli", "view", str(run_dir),
         "--serve", "--port", "0"], stdout=subprocess.PIPE, stderr=err,
        text=True, cwd=Path(__file__).parent.parent)
  try:
    errors: list[str] = []
    tab = chromium.new_page()
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(_url_of(server, 300))
    tab.evaluate("() => { window.loadedOnce = true; }")
    abigail = f'#places .mark[data-agent="{ABIGAIL}"]'
    # Held after slot 1 (a call of slot 2 may be under way already): the
    # page shows what landed, and she holds the target once the view has
    # loaded the run's embedder.
    tab.wait_for_function(
        "sel => +document.body.dataset.slots >= 1 && "
        "+document.body.dataset.slots < 5 && document.querySelector(sel) && "
        "(+document.querySelector(sel).dataset.hold & 1)",
        arg=abigail, timeout=300_000)
    assert tab.get_attribute("#progress", "data-status") == "running"
    held = int(tab.evaluate("() => document.body.dataset.slots"))
    assert f"slot {held} of 5" in tab.inner_text("#progress")
    slot_to(tab, 1)
    assert int(tab.get_attribute(abigail, "data-hold")) & 1
    slot_to(tab, held)  # At the last slot again: the page moves on with it.
    # Let go one slot at a time, each once the page has shown the last
    # (a machine that plays the cached slots in a blink shows them all).
    seen = []
    while tab.get_attribute("#progress", "data-status") != "completed":
      assert time.monotonic() < deadline + 300, f"stuck at {seen}"
      count = int(tab.evaluate("() => document.body.dataset.slots"))
      if not seen or seen[-1] != count:
        seen.append(count)
      model.hold_after = max(model.hold_after, count + 1)
      time.sleep(0.2)
    played.join(60)
    assert seen[0] == held and len(seen) >= 3 and seen == sorted(seen), seen
    tab.wait_for_function("() => document.body.dataset.slots === '5'")
    assert tab.evaluate("() => window.loadedOnce") is True  # Never reloaded.
    for step in range(1, 6):
      slot_to(tab, step)
      assert int(tab.get_attribute(abigail, "data-hold")) & 1, step
    # Her duplicate at creation is marked rejected in slot 1's records.
    slot_to(tab, 1)
    assert "rejected at creation" in tab.inner_text("#slot")
    assert errors == []
    tab.close()
  finally:
    server.terminate()
    server.wait(30)
    model.go_on.set()
    played.join(120)
    cache.close()

"""The viewer's agent panel shows say, hold and do side by side (`crsec
view`, in Debian's Chromium driven by Playwright: tests/view_browser.py),
on the hand-built café of tests/test_say_hold_do.py, before and after
`crsec report`."""

from __future__ import annotations

import pytest

from crsec_concordia import cli
from crsec_concordia.metrics.measure import say_hold_do as shd
from crsec_concordia.view import page
from tests.metrics_fixtures import ABIGAIL, CARLOS, ISABELLA, SAM
from tests.test_say_hold_do import SMOKE, cafe
from tests.test_view import embedded
from tests.view_browser import browser, open_page


@pytest.fixture(scope="module")
def cafe_run(tmp_path_factory, embedder):
  del embedder  # Loaded once per session, read by the view's matcher.
  return cafe(tmp_path_factory.mktemp("shd") / "run")


def panel_row(tab, agent: str, target: str) -> list[str]:
  tab.click(f'#places .mark[data-agent="{agent}"]')
  tab.wait_for_selector(f'#agent[data-agent="{agent}"] .shd')
  return tab.eval_on_selector(
      f'#agent .shd tr[data-target="{target}"]',
      "tr => [...tr.querySelectorAll('td')].slice(1).map(td => td.textContent)")


@pytest.mark.parametrize("reported", [False, True])
def test_the_agent_panel_shows_say_hold_and_do(cafe_run, tmp_path, reported):
  if reported:
    assert cli.main(["report", str(cafe_run), "--out",
                     str(tmp_path / "r")]) == 0
    assert (cafe_run / "metrics" / "say_hold_do.csv").is_file()
  out = page.write(cafe_run, tmp_path / "view.html")
  [run] = embedded(out)["runs"]
  names = [a["n"] for a in run["agents"]]
  smoke = [t["id"] for t in run["targets"]].index(SMOKE)
  assert run["shd"][names.index(ABIGAIL)][smoke] == [
      shd.STATES, shd.HOLDS, shd.VIOLATES]
  errors: list[str] = []
  with browser() as context:
    tab = open_page(context, out, errors)
    assert panel_row(tab, ABIGAIL, SMOKE) == [shd.STATES, shd.HOLDS,
                                              shd.VIOLATES]
    assert panel_row(tab, CARLOS, SMOKE) == [shd.STATES, shd.NOT_HELD,
                                             shd.COMPLIES]
    assert panel_row(tab, ISABELLA, SMOKE) == [shd.UNKNOWN, shd.NOT_HELD,
                                               shd.NO_OCCASION]
    assert panel_row(tab, SAM, SMOKE) == [shd.NOT_ASKED, shd.NOT_HELD,
                                          shd.BOTH]
  assert errors == []

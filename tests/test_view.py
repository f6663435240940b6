"""`crsec view` writes its page for a run, a compare and a sweep directory;
bad input is one line and exit code 2. (The page in a browser:
tests/test_view_browser.py.)"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from crsec_concordia import cli
from crsec_concordia.view import live, page, serve
from tests.test_compare import fake  # noqa: F401  pylint: disable=unused-import
from tests.test_sweep_file import known_sweep  # noqa: F401  pylint: disable=unused-import

GOLDEN = Path(__file__).parent / "golden" / "mini_cafe" / "expected"
_DATA = re.compile(r'<script id="crsec-data" type="application/json">(.*?)'
                   r"</script>", re.S)


def embedded(html_file: Path) -> dict:
  return json.loads(_DATA.search(html_file.read_text(encoding="utf-8"))[1])


def matched(watch: live.Watch, timeout: float = 180) -> tuple[int, dict]:
  """The watch's data once every run's embedder is loaded (on its thread)."""
  deadline = time.monotonic() + timeout
  while True:
    version, data = watch.data()
    if all(r["meta"]["matcher"] for r in data["runs"]):
      return version, data
    assert time.monotonic() < deadline, "the run's embedder never loaded"
    time.sleep(0.2)


def view(capsys, *args: str) -> tuple[int, str]:
  code = cli.main(["view", *map(str, args)])
  return code, capsys.readouterr().err


def test_the_golden_run_page(tmp_path, capsys):
  out = tmp_path / "golden.html"
  code, err = view(capsys, GOLDEN, "--out", out)
  assert code == 0, err
  text = out.read_text(encoding="utf-8")
  assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
  assert "https://" not in text and "<link" not in text
  data = embedded(out)
  assert data["kind"] == "run"
  [run] = data["runs"]
  names = [a["n"] for a in run["agents"]]
  assert names == ["Abigail Chen", "Carlos Gomez", "Tom Gomez",
                   "Tamara Rodriguez"]
  assert [s["s"] for s in run["steps"]] == [1, 2, 3, 4, 5]
  assert len(run["places"]) == 1  # The café declares no places.
  # Abigail holds the three targets from slot 1 (created) to the end; in
  # this recording no one else takes one up (Tamara's norm of slot 4 is
  # about the café's hours), so belief stays at one agent in four.
  assert [slot[0] for slot in run["hold"]] == [0b111] * 5
  assert run["hold"][3][names.index("Tamara Rodriguez")] == 0
  assert run["curves"]["no_smoking_indoors"]["belief"][-1] == 0.25
  kinds = {e["k"] for slot in run["events"] for e in slot}
  # This recording's DetectConflict found no breach, so it holds no talk
  # or conflict (test_view_browser.py's runs show those).
  assert {"action", "created", "verdict", "plan"} <= kinds


def test_a_run_never_reported_says_so(tmp_path, capsys):
  run_dir = tmp_path / "run"
  run_dir.mkdir()
  for f in ("run.json", "scenario.json", "events.jsonl", "usage.json"):
    (run_dir / f).write_bytes((GOLDEN / f).read_bytes())
  code, err = view(capsys, run_dir)
  assert code == 0, err
  [run] = embedded(run_dir / "view.html")["runs"]
  assert not run["meta"]["reported"] and run["meta"]["matcher"]
  # No snapshots: no belief measured; behaviour from the referee's tags.
  curves = run["curves"]["tip_after_meals"]
  assert curves["belief"] == [None] * 5
  # Abigail and Carlos tip in slot 3 (Tamara refuses): two of four.
  assert curves["behaviour"] == [0.0, 0.0, 0.5, 0.5, 0.5]
  assert any("crsec report" in n for n in run["notes"])
  assert any("No norm snapshots" in n for n in run["notes"])


def test_a_compare_directory_page_has_every_run(fake, tmp_path, capsys):  # noqa: F811  pylint: disable=redefined-outer-name
  del fake
  out = tmp_path / "cmp"
  assert cli.main(["compare", "hobbs_cafe_test", "--seeds", "1-2",
                   "--steps", "3", "--out", str(out), "--jobs", "1"]) == 0
  capsys.readouterr()
  code, err = view(capsys, out)
  assert code == 0, err
  data = embedded(out / "view.html")
  assert data["kind"] == "compare"
  assert sorted(r["label"] for r in data["runs"]) == [
      "baseline: seed_1", "baseline: seed_2", "normative: seed_1",
      "normative: seed_2"]


def test_a_sweep_directory_page_has_its_runs(known_sweep, tmp_path, capsys):  # noqa: F811  pylint: disable=redefined-outer-name
  code, err = view(capsys, known_sweep, "--out", tmp_path / "s.html")
  assert code == 0, err
  data = embedded(tmp_path / "s.html")
  listed = json.loads((known_sweep / "sweep.json").read_text())["runs"]
  there = [r for r in listed if (known_sweep / r["run_dir"]
                                 / "run.json").is_file()]
  assert data["kind"] == "sweep" and len(data["runs"]) == len(there) > 1


@pytest.mark.parametrize("make, says", [
    (lambda p: p / "missing", "is not a directory"),
    (lambda p: p, "is not a run, compare or sweep directory"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, make, says):
  code, err = view(capsys, make(tmp_path))
  assert code == 2
  assert says in err and len(err.strip().splitlines()) == 1
  assert "Traceback" not in err


def test_a_run_without_its_scenario_is_one_line(tmp_path, capsys):
  (tmp_path / "run.json").write_text("{}")
  code, err = view(capsys, tmp_path)
  assert code == 2 and "scenario.json is missing" in err
  assert len(err.strip().splitlines()) == 1


def test_no_text_of_a_run_can_close_the_data_element(tmp_path):
  data = {"kind": "run", "title": "t", "runs": [
      {"x": "</script><script>alert(1)</script> & \u2028"}]}
  out = tmp_path / "p.html"
  out.write_text(page.page_html(data), encoding="utf-8")
  assert embedded(out) == data
  assert out.read_text().count("</script>") == 2


def test_serve_answers_on_localhost(tmp_path):
  run_dir = tmp_path / "run"
  shutil.copytree(GOLDEN, run_dir)
  urls: list[str] = []
  ready = threading.Event()

  def started(url: str) -> None:
    urls.append(url)
    ready.set()

  watch = live.Watch(run_dir)
  matched(watch)
  threading.Thread(target=serve.serve, args=(watch, "view.html", 0, started),
                   daemon=True).start()
  assert ready.wait(10)
  assert urls[0].startswith("http://127.0.0.1:")
  with urllib.request.urlopen(urls[0], timeout=60) as response:
    served = response.read().decode("utf-8")
  version, data = watch.data()
  assert json.loads(_DATA.search(served)[1]) == {**data, "live": version}
  base = urls[0].rsplit("/", 1)[0]
  with urllib.request.urlopen(f"{base}/live.json?v={version}",
                              timeout=60) as response:
    assert json.loads(response.read()) == {"v": version}
  # Nothing else of the directory is served (its transcripts stay home).
  with pytest.raises(urllib.error.HTTPError):
    urllib.request.urlopen(f"{base}/events.jsonl", timeout=10)


def test_interventions_and_failures_are_on_the_timeline(tmp_path, capsys):
  run_dir = tmp_path / "run"
  run_dir.mkdir()
  for f in ("run.json", "scenario.json", "usage.json"):
    (run_dir / f).write_bytes((GOLDEN / f).read_bytes())
  events = (GOLDEN / "events.jsonl").read_text(encoding="utf-8")
  extra = [{"kind": "intervention", "step": 3, "time": "Day 1 09:30",
            "what": "a sign goes up: no smoking"},
           {"kind": "failure", "step": 2, "time": "Day 1 09:15",
            "agent": "Tom Gomez", "op": "Reflect", "error": "bad answer"}]
  (run_dir / "events.jsonl").write_text(
      events + "".join(json.dumps(r) + "\n" for r in extra), encoding="utf-8")
  code, err = view(capsys, run_dir)
  assert code == 0, err
  [run] = embedded(run_dir / "view.html")["runs"]
  assert {"k": "intervention", "x": {"time": "Day 1 09:30",
                                     "what": "a sign goes up: no smoking"}
          } in run["events"][2]
  assert {"k": "failure", "a": 2, "op": "Reflect", "x": "bad answer"
          } in run["events"][1]

